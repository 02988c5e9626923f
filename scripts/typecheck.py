"""Type-check driftcheck as it is installed: ``python scripts/typecheck.py [MYPY ARGS...]``.

The source tree keeps ``rules/`` and ``runtime_verify/`` beside ``driftcheck/`` and the build
maps them to ``driftcheck.rules`` and ``driftcheck.runtime_verify`` (``package-dir`` in
pyproject.toml), a remap mypy cannot read. This script lays the installed package out in a
temporary directory (``driftcheck/`` whose entries are links to the source, with ``rules``
and ``runtime_verify`` linked in under it) and runs ``mypy -p driftcheck`` there with the
``[tool.mypy]`` configuration of pyproject.toml. Errors name the source files. Exit code:
mypy's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# where the build puts each top-level source directory inside the package
MAPPED = {"rules": "rules", "runtime_verify": "runtime_verify"}


def installed_layout(into: Path) -> Path:
    """``into/driftcheck``: the package as installed, made of links to the source."""
    package = into / "driftcheck"
    package.mkdir()
    for entry in (ROOT / "driftcheck").iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, source in MAPPED.items():
        (package / name).symlink_to(ROOT / source)
    return package


def main(argv: list[str]) -> int:
    """Run mypy on the installed layout; its exit code."""
    with tempfile.TemporaryDirectory(prefix="driftcheck-mypy-") as tmp:
        installed_layout(Path(tmp))
        command = [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "-p",
            "driftcheck",
            *argv,
        ]
        done = subprocess.run(
            command, cwd=tmp, env={**os.environ, "MYPYPATH": tmp}, capture_output=True, text=True
        )
        # the links' paths, as the source files they stand for
        for stream, text in ((sys.stdout, done.stdout), (sys.stderr, done.stderr)):
            for name, source in MAPPED.items():
                text = text.replace(f"driftcheck/{name}/", f"{source}/")
            stream.write(text)
        return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
