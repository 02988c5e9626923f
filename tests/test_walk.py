"""The files a run reads, walked and stamped (driftcheck.walk): in this process, or ahead in a
forked one while the universes load, with the same answer; a forked walk that fails leaves the
run to walk itself."""

from __future__ import annotations

import os
from pathlib import Path

from driftcheck.project import discover_project
from driftcheck.walk import WalkAhead, walk


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


TREE = {
    "pyproject.toml": "[tool.driftcheck]\npack = 'none'\n",
    "pkg/__init__.py": "",
    "pkg/models/a.py": "A = 1\n",
    "pkg/models/b.py": "B = 2\n",
    "pkg/layers/c.py": "C = 3\n",
    "tools/d.py": "D = 4\n",
}


def test_a_run_over_the_root_reads_and_reports_every_file(tmp_path: Path) -> None:
    root = write(tmp_path, TREE)
    walked = walk(discover_project([root], cwd=root), [root], whole=True, record=False)
    assert [rel for _, rel, _ in walked.files] == [
        "pkg/__init__.py",
        "pkg/layers/c.py",
        "pkg/models/a.py",
        "pkg/models/b.py",
        "tools/d.py",
    ]
    assert walked.named is None


def test_a_run_over_a_directory_reads_the_rest_of_the_root_after_it_once(tmp_path: Path) -> None:
    root = write(tmp_path, TREE)
    project = discover_project([root / "pkg/models"], cwd=root)
    walked = walk(project, [root / "pkg/models"], whole=False, record=False)
    assert [rel for _, rel, _ in walked.files] == [
        "pkg/models/a.py",
        "pkg/models/b.py",
        "pkg/__init__.py",
        "pkg/layers/c.py",
        "tools/d.py",
    ]
    assert walked.named == {"pkg/models/a.py", "pkg/models/b.py"}


def test_each_file_carries_its_stamp_and_the_walk_records_every_place_it_read(
    tmp_path: Path,
) -> None:
    root = write(tmp_path, TREE)
    walked = walk(discover_project([root], cwd=root), [root], whole=True, record=True)
    path, _, stamp = walked.files[0]
    st = os.stat(path)
    assert stamp == (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    assert walked.stamps is not None
    assert set(walked.stamps) == {
        *(p for p, _, _ in walked.files),
        *(str(d) for d in (root, root / "pkg", root / "pkg/layers", root / "pkg/models")),
        str(root / "tools"),
    }


def test_the_forked_walk_finds_what_the_walk_finds(tmp_path: Path) -> None:
    root = write(tmp_path, TREE)
    project = discover_project([root / "pkg"], cwd=root)
    ahead = WalkAhead.start(project, [root / "pkg"], whole=False, record=True)
    assert ahead is not None
    assert ahead.result() == walk(project, [root / "pkg"], whole=False, record=True)


def test_a_forked_walk_that_fails_leaves_the_walk_to_the_run() -> None:
    read, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # a walk that dies before it reports
        os._exit(1)
    os.close(write_end)
    assert WalkAhead(pid, read).result() is None
