"""Repeat a run whose inputs have not changed: its output, from a record, without the engine.

A check's output is a function of its inputs: the command line and working directory, the
terminal (whether stdout and stderr are terminals, ``NO_COLOR``), driftcheck's own code, and
the files the run read or looked for. After a read-only check (no ``--fix``, ``--diff``,
``--write-baseline``, ``--no-cache``), :class:`Recorder` keeps what it wrote and a stamp of
every input: each walked file, each directory walked (a file added or removed there changes
its mtime), the paths given, every place from the working directory, the paths' directory and
the project up to the filesystem root where a configuration, a repository marker, a package or
the canonical module could appear (present or not: a run that stopped at a bad configuration
is keyed by that file too), the baseline, and driftcheck's own source files. The next identical invocation checks those stamps (a few
thousand ``stat`` calls, no parsing, no import of the engine) and, when all match, writes the
same bytes and exits with the same code. Any difference, or a damaged record, runs the check.

Records live in ``$DRIFTCHECK_RUNS_DIR``, else ``$XDG_CACHE_HOME/driftcheck/runs``, else
``~/.cache/driftcheck/runs``; the newest 64 are kept. This module imports nothing of
driftcheck's and no third-party package: it is what a warm run pays for.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
import time
from pathlib import Path

FORMAT = 1
KEEP = 64
# an input changed this recently makes no record: a second change within the clock's
# granularity would leave its stamp as it was (``$DRIFTCHECK_RACY_MS`` overrides, for tests)
RACY_NS = 2_000_000_000
WRITES = ("--fix", "--diff", "--write-baseline", "--create-helper", "--no-cache")
OTHER_COMMANDS = ("verify", "gen-test", "discover", "explain", "server")
INFORMATION = ("--help", "-h", "--version")
ENVIRONMENT = ("NO_COLOR", "FORCE_COLOR", "DRIFTCHECK_CACHE_DIR", "TERM")
PACKAGE = Path(__file__).resolve().parent


_LAUNCHED: list[str] | None = None  # the command line, when the process started at main()
_OWN_PROCESS = False  # the process is the ``driftcheck`` command's own (:func:`run`)


def run() -> None:
    """The ``driftcheck`` command's entry point: :func:`main` in a process of its own, which
    a check leaves without tearing down its heap (:func:`leave`)."""
    global _OWN_PROCESS
    _OWN_PROCESS = True
    main()


def main() -> None:
    """The ``driftcheck`` command: answer from a record when one is valid, else run the CLI
    (which records a read-only check for the next time)."""
    global _LAUNCHED
    argv = sys.argv[1:]
    code = replay(argv)
    if code is not None:
        sys.exit(code)
    _LAUNCHED = argv if eligible(argv) else None
    from .cli import main as cli

    cli()


def launched_argv() -> list[str] | None:
    """The command line to record under, or None when this process did not start at
    :func:`main` (the CLI called in-process, as tests do, records nothing)."""
    return _LAUNCHED


def leave(code: int) -> None:
    """End a check the ``driftcheck`` command started in its own process (:func:`run`): its
    output flushed, the process exits without tearing down its heap (tens of milliseconds
    after a large tree, longer than starting the interpreter). Anywhere else (the CLI or
    :func:`main` called in-process, as tests do) it raises ``SystemExit``."""
    if not _OWN_PROCESS:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone, a closed stream
            stream.flush()
    os._exit(code)


def runs_dir() -> Path:
    """Where records are kept (see the module docstring)."""
    explicit = os.environ.get("DRIFTCHECK_RUNS_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "driftcheck" / "runs"


def eligible(argv: list[str]) -> bool:
    """Whether an invocation is a read-only check that a record may answer."""
    if argv and argv[0] in OTHER_COMMANDS:
        return False
    return not any(a in INFORMATION or a.split("=")[0] in WRITES for a in argv)


def _key(argv: list[str]) -> str:
    parts = [
        str(FORMAT),
        os.getcwd(),
        *argv,
        f"tty={sys.stdout.isatty()},{sys.stderr.isatty()}",
        *(f"{name}={os.environ.get(name, '')}" for name in ENVIRONMENT),
        sys.executable,
        str(PACKAGE),  # another driftcheck (another install, PYTHONPATH) has its own records
    ]
    return hashlib.blake2b("\0".join(parts).encode(), digest_size=16).hexdigest()


def stamp_of(st: os.stat_result) -> tuple[int, int, int, int]:
    """What identifies a file or directory version: size, mtime, ctime (which a restored
    mtime does not restore) and inode."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def stamp_or_none(path: str | os.PathLike[str]) -> tuple[int, int, int, int] | None:
    """The stamp of ``path``, or None when it does not exist (a record notices it appear)."""
    try:
        return stamp_of(os.stat(path))
    except OSError:
        return None


_stamp = stamp_or_none


def _code_files() -> list[str]:
    """driftcheck's own source and pack files (its rules and verifier too, wherever an
    editable install keeps them): an edited or upgraded driftcheck reruns."""
    import importlib.util

    tops = [str(PACKAGE)]
    for name in ("driftcheck.rules", "driftcheck.runtime_verify"):
        spec = importlib.util.find_spec(name)
        tops += list(spec.submodule_search_locations or ()) if spec else []
    files: set[str] = set()
    for top in tops:
        for directory, _, names in os.walk(top):
            files.update(os.path.join(directory, n) for n in names if n.endswith((".py", ".toml")))
    return sorted(files)


def replay(argv: list[str]) -> int | None:
    """Write the recorded output of this invocation and return its exit code, or None when
    there is no valid record (the caller then runs the check)."""
    if not eligible(argv):
        return None
    try:
        data = (runs_dir() / _key(argv)).read_bytes()
        digest, payload = data[:16], data[16:]
        if hashlib.blake2b(payload, digest_size=16).digest() != digest:
            return None
        record = marshal.loads(payload)
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    stamps = record["stamps"]
    if any(_stamp(path) != stamp for path, stamp in stamps.items()):
        return None
    sys.stdout.write(record["stdout"])
    sys.stdout.flush()
    sys.stderr.write(record["stderr"])
    sys.stderr.flush()
    return int(record["code"])


class Recorder:
    """Collects what a check writes and which inputs it read, then saves the record."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = list(argv)
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.inputs: dict[str, tuple[int, int, int, int] | None] = {}

    def wrote(self, text: str, err: bool) -> None:
        """Keep ``text`` as it reached the stream (ANSI codes already stripped or not)."""
        (self.stderr if err else self.stdout).append(text)

    def read(self, stamps: dict[str, tuple[int, int, int, int] | None]) -> None:
        """Files and directories the run's output depends on, stamped when the run read them
        (a file changed while the run went on is then seen as changed by the next one)."""
        self.inputs.update(stamps)

    def looked_up_from(self, start: Path, names: list[str]) -> None:
        """The ``names`` (relative paths) in each directory from ``start`` up to the
        filesystem root: a configuration, a repository marker or a package created, edited or
        removed there changes the run (the directories themselves change all the time)."""
        directory = start.resolve()
        while True:
            for path in (str(directory / name) for name in names):
                self.inputs.setdefault(path, _stamp(path))
            if directory.parent == directory:
                return
            directory = directory.parent

    def save(self, code: int) -> None:
        """Write the record (never fails the run: an unwritable directory is no error)."""
        stamps = {path: _stamp(path) for path in _code_files()}
        stamps.update(self.inputs)
        racy = int(os.environ.get("DRIFTCHECK_RACY_MS", RACY_NS // 1_000_000)) * 1_000_000
        recent = time.time_ns() - racy
        if any(s is not None and max(s[1], s[2]) > recent for s in stamps.values()):
            return
        record = {
            "format": FORMAT,
            "stamps": stamps,
            "stdout": "".join(self.stdout),
            "stderr": "".join(self.stderr),
            "code": code,
        }
        payload = marshal.dumps(record)
        directory = runs_dir()
        target = directory / _key(self.argv)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            temporary = target.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_bytes(hashlib.blake2b(payload, digest_size=16).digest() + payload)
            os.replace(temporary, target)
            _prune(directory)
        except OSError:
            return


def _prune(directory: Path) -> None:
    records = sorted(directory.iterdir(), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for old in records[KEEP:]:
        old.unlink(missing_ok=True)
