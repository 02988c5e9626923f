"""Share a list of work between this process and forked helpers.

Every process, this one included, takes the next chunk from one counter in shared memory
until none is left, so the process that reports the results scans too, and the chunks stay
balanced however unevenly their cost falls. The helpers inherit the items through ``fork``:
nothing is sent to them. Each sends back, once, the results worth sending, by position in
its chunks; the rest are reported as ``None``. A chunk a helper claimed but never reported
(it crashed, or was killed) is worked here, so every item gets its result.
"""

from __future__ import annotations

import mmap
import os
import pickle
import signal
import tempfile
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")
_COUNTER = 8  # bytes


class Claims:
    """The index of the next unclaimed chunk, shared by forked processes: a counter in a
    shared mapping of an unlinked temporary file, guarded by a record lock on that file (the
    kernel releases the lock of a process that dies holding it, so no helper's death can
    leave the others waiting)."""

    def __init__(self, total: int) -> None:
        import fcntl  # POSIX only, as fork is: the engine shares work this way only where both are

        self._lockf, self._exclusive, self._unlock = fcntl.lockf, fcntl.LOCK_EX, fcntl.LOCK_UN
        self.total = total
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 - lives until close()
        self.file.write(bytes(_COUNTER))
        self.file.flush()
        self.memory = mmap.mmap(self.file.fileno(), _COUNTER)

    def next(self) -> int | None:
        """Claim the next chunk (None once every chunk is claimed)."""
        descriptor = self.file.fileno()
        self._lockf(descriptor, self._exclusive)
        try:
            index = int.from_bytes(self.memory[:_COUNTER], "little")
            if index < self.total:
                self.memory[:_COUNTER] = (index + 1).to_bytes(_COUNTER, "little")
        finally:
            self._lockf(descriptor, self._unlock)
        return index if index < self.total else None

    def close(self) -> None:
        """Release the mapping and the file."""
        self.memory.close()
        self.file.close()


class Shared(Generic[Item, Result]):
    """``work`` applied to every item of ``chunks`` by this process and ``helpers`` forked
    ones; a helper sends back only the results ``worth_sending`` accepts."""

    def __init__(
        self,
        chunks: Sequence[Sequence[Item]],
        work: Callable[[Item], Result],
        worth_sending: Callable[[Result], bool],
        helpers: int,
    ) -> None:
        self.chunks = chunks
        self.work = work
        self.worth_sending = worth_sending
        self.helpers = helpers

    def results(self) -> Iterator[tuple[Item, Result | None]]:
        """``(item, result)`` for every item, in no particular order; ``None`` for a helper's
        result that was not worth sending."""
        try:
            claims = Claims(len(self.chunks))
        except OSError:  # no temporary file to share (a read-only temporary directory)
            for chunk in self.chunks:
                yield from ((item, self.work(item)) for item in chunk)
            return
        children: dict[int, int] = {}  # pid -> the read end of its report
        try:
            for _ in range(self.helpers):
                pid, read = self._fork(claims)
                if pid is None:  # no process to spare: fewer helpers
                    break
                children[pid] = read
            mine: set[int] = set()
            while (index := claims.next()) is not None:
                mine.add(index)
                yield from ((item, self.work(item)) for item in self.chunks[index])
            reported: set[int] = set()
            for pid in list(children):
                for index, kept in self._report(pid, children):
                    reported.add(index)
                    for position, item in enumerate(self.chunks[index]):
                        yield item, kept.get(position)
            for index, chunk in enumerate(self.chunks):
                if index not in mine and index not in reported:
                    yield from ((item, self.work(item)) for item in chunk)
        finally:
            for pid, read in children.items():
                if read >= 0:
                    os.close(read)
                stop(pid)
            claims.close()

    def _fork(self, claims: Claims) -> tuple[int | None, int]:
        """Start a helper: its pid and the read end of its report (None when the system
        refuses another process or pipe)."""
        forked = fork_reporting(lambda: self._help(claims))
        return forked if forked is not None else (None, -1)

    def _help(self, claims: Claims) -> list[tuple[int, dict[int, Result]]]:  # pragma: no cover
        """A helper's life: work the chunks it claims and report them, once (an error or an
        interrupt leaves its chunks unreported, to be worked by the parent)."""
        done: list[tuple[int, dict[int, Result]]] = []
        while (index := claims.next()) is not None:
            kept = {}
            for position, item in enumerate(self.chunks[index]):
                result = self.work(item)
                if self.worth_sending(result):
                    kept[position] = result
            done.append((index, kept))
        return done

    @staticmethod
    def _report(pid: int, children: dict[int, int]) -> list[tuple[int, dict[int, Result]]]:
        """What helper ``pid`` reported ([] when it did not finish); it is reaped and leaves
        ``children`` (until then an interrupt leaves it there, to be stopped)."""
        read = children[pid]
        children[pid] = -1  # the collection closes it whatever happens: the process is left
        done = collect_report(pid, read)
        del children[pid]
        return done if isinstance(done, list) else []


def fork_reporting(work: Callable[[], object]) -> tuple[int, int] | None:
    """Fork a process that runs ``work`` and writes what it returns, pickled, to a pipe; its
    pid and the pipe's read end (None when the system refuses a process or a pipe). The
    process exits 0 once it has written its report, 1 when ``work`` fails or is interrupted
    (it then reports nothing)."""
    try:
        read, write = os.pipe()
    except OSError:
        return None
    # an interrupt must not reach the new process before it is inside its own ``try`` (it
    # would unwind through the caller's frames and go on running the command)
    interrupts = {signal.SIGINT, signal.SIGTERM}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, interrupts)
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(read)
        os.close(write)
        return None
    if pid == 0:  # pragma: no cover - the child; its coverage is not collected
        code = 1
        try:
            os.close(read)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            payload = memoryview(pickle.dumps(work(), pickle.HIGHEST_PROTOCOL))
            while payload:
                payload = payload[os.write(write, payload) :]
            code = 0
        finally:
            os._exit(code)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(write)
    return pid, read


def collect_report(pid: int, read: int) -> object:
    """What a process :func:`fork_reporting` started reported, read from ``read`` (closed
    whatever happens) once it has ended, the process reaped; None when it did not finish."""
    parts: list[bytes] = []
    finished = True
    try:
        while part := os.read(read, 1 << 20):
            parts.append(part)
    except OSError:
        finished = False
    finally:
        os.close(read)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # SIGCHLD ignored: reaped already; the report decides
        status = 0
    if status != 0 or not finished:
        return None
    try:
        return pickle.loads(b"".join(parts))
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
        return None


def stop(pid: int) -> None:
    """End a process :func:`fork_reporting` started that is still running (the parent is
    leaving early) and reap it."""
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
