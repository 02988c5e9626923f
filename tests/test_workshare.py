"""Work shared with forked helpers (driftcheck.workshare): every item gets its result exactly
once, the helpers take part, and the chunks of a helper that dies are worked by the parent."""

from __future__ import annotations

import fcntl
import os
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest

from driftcheck.engine import check
from driftcheck.workshare import Claims, Shared

CHUNKS = [list(range(start, start + 4)) for start in range(0, 200, 4)]
ITEMS = list(range(200))


def squared_slowly(item: int) -> tuple[int, int]:
    time.sleep(0.001)
    return item * item, os.getpid()


def test_every_item_gets_its_result_once() -> None:
    shared = Shared(CHUNKS, squared_slowly, lambda result: True, helpers=2)
    results = sorted((item, result[0]) for item, result in shared.results())
    assert results == [(item, item * item) for item in ITEMS]


def test_the_helpers_take_part() -> None:
    shared = Shared(CHUNKS, squared_slowly, lambda result: True, helpers=1)
    workers = {result[1] for _, result in shared.results()}
    assert len(workers) == 2 and os.getpid() in workers


def test_a_result_not_worth_sending_comes_back_as_none() -> None:
    shared = Shared(CHUNKS, squared_slowly, lambda result: result[0] % 2 == 0, helpers=1)
    for item, result in shared.results():
        if result is None:
            assert item % 2 == 1
        else:
            assert result[0] == item * item


def test_the_chunks_of_a_helper_that_dies_are_worked_here() -> None:
    parent = os.getpid()

    def dies_in_a_helper(item: int) -> int:
        time.sleep(0.001)
        if os.getpid() != parent and item >= 100:
            raise RuntimeError("helper crashed")
        return item

    shared = Shared(CHUNKS, dies_in_a_helper, lambda result: True, helpers=1)
    assert sorted(item for item, _ in shared.results()) == ITEMS


@pytest.mark.parametrize(
    ("module", "name", "error"),
    [
        (tempfile, "TemporaryFile", OSError(30, "Read-only file system")),
        (os, "fork", OSError(11, "Resource temporarily unavailable")),
        (os, "pipe", OSError(24, "Too many open files")),
    ],
    ids=["no temporary file to share", "no process to fork", "no pipe to open"],
)
def test_refused_resources_leave_all_the_work_to_this_process(
    monkeypatch: pytest.MonkeyPatch, module: object, name: str, error: OSError
) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(module, name, refused)
    results = list(Shared(CHUNKS, squared_slowly, lambda result: True, helpers=2).results())
    assert sorted(item for item, _ in results) == ITEMS
    assert {result[1] for _, result in results} == {os.getpid()}


def open_descriptors() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def test_an_interrupt_while_a_helper_is_awaited_stops_it_and_leaks_nothing() -> None:
    parent = os.getpid()

    def slow_in_the_helper(item: int) -> int:
        time.sleep(3 if os.getpid() != parent else 0.01)
        return item

    before, descriptors = children(), open_descriptors()
    timer = threading.Timer(0.5, os.kill, (parent, signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        for _ in Shared([[i] for i in range(8)], slow_in_the_helper, bool, helpers=1).results():
            pass
    timer.join()
    assert children() - before == set()
    assert open_descriptors() == descriptors


def test_a_run_where_sigchld_is_ignored_still_gets_every_result() -> None:
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        results = list(Shared(CHUNKS, squared_slowly, lambda result: True, helpers=1).results())
    finally:
        signal.signal(signal.SIGCHLD, previous)
    assert sorted(item for item, _ in results) == ITEMS


def test_a_helper_that_dies_holding_the_claims_lock_leaves_no_one_waiting() -> None:
    claims = Claims(total=3)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        fcntl.lockf(claims.file.fileno(), fcntl.LOCK_EX)
        os._exit(0)  # dies without unlocking
    os.waitpid(pid, 0)
    signal.alarm(5)  # a lock left held would hang the next claim
    try:
        assert [claims.next(), claims.next(), claims.next(), claims.next()] == [0, 1, 2, None]
    finally:
        signal.alarm(0)
        claims.close()


def test_a_parallel_check_reports_what_a_serial_one_does(sglang_0_5_23: Path) -> None:
    tree = sglang_0_5_23
    serial = check([tree], cwd=tree, use_cache=False, jobs=1)
    shared = check([tree], cwd=tree, use_cache=False, jobs=3)
    assert [f.to_dict() for f in shared.findings] == [f.to_dict() for f in serial.findings]
    assert shared.files_checked == serial.files_checked == 4719
    assert sorted(shared.scans) == sorted(serial.scans)


def children() -> set[int]:
    """The live child processes of this process (Linux)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        found.update(int(pid) for pid in (task / "children").read_text().split())
    return found


def test_no_helper_outlives_a_run_left_early() -> None:
    before = children()
    results = Shared(CHUNKS, squared_slowly, lambda result: True, helpers=2).results()
    next(results)
    assert len(children() - before) == 2
    results.close()
    assert children() - before == set()
