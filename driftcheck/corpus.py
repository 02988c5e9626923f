"""Fetch pinned SGLang releases from the package index into a local cache (tests, benchmarks).

``python -m driftcheck.corpus 0.5.23`` prints the directory holding the release's ``sglang/``
tree, downloading and verifying the wheel on first use. Only the ``sglang/`` source tree is
extracted; nothing from it is imported or executed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL_PLATFORM = "manylinux_2_34_x86_64"
WHEEL_PYTHON = "3.11"

PINNED_SHA256: dict[str, str] = {
    "0.5.17": "575e38f5683624ded3b4bb267f637a098e5ed37d13a1d1ff5ea09bd781a04d16",
    "0.5.18": "e97b585dd2d5db2802599feba47c84cce972f5e1231a6816fef996200207b5cf",
    "0.5.19": "425e87377e725d03db8262382008f3fd9561a6cf5d82f485f8b9929f02ffe12b",
    "0.5.20": "1573527042f4f6b4ead838302818595fc77fdc611dbcc2e40cd150fbc8f8513c",
    "0.5.21": "96c029f75dec99baa33a5db3d41b1bebefdd6bcfba3a2f7c807fe1cf49a87c20",
    "0.5.22": "cc9a0f15bd8f877a0584fdb7a1702240177a1f1cc8d17c978715161717b9037b",
    "0.5.23": "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937",
}


class CorpusError(RuntimeError):
    """The release could not be fetched or did not match its pinned checksum."""


def cache_root() -> Path:
    """Where releases are kept: ``$DRIFTCHECK_CORPUS_CACHE`` or ``~/.cache/driftcheck/corpus``."""
    env = os.environ.get("DRIFTCHECK_CORPUS_CACHE")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "driftcheck" / "corpus"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download_wheel(version: str, dest: Path) -> Path:
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--python-version", WHEEL_PYTHON, "--platform", WHEEL_PLATFORM,
        "-d", str(dest), "-q", f"sglang=={version}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheels = sorted(dest.glob(f"sglang-{version}-*.whl"))
    if proc.returncode != 0 or not wheels:
        raise CorpusError(f"pip download sglang=={version} failed: {proc.stderr.strip()[-500:]}")
    return wheels[0]


def fetch_release(version: str) -> Path:
    """Return a directory whose ``sglang/`` holds release ``version``'s source tree."""
    if version not in PINNED_SHA256:
        raise CorpusError(
            f"no pinned checksum for sglang {version}; known: {sorted(PINNED_SHA256)}"
        )
    target = cache_root() / f"sglang-{version}"
    marker = target / ".complete"
    if marker.exists() and marker.read_text().strip() == PINNED_SHA256[version]:
        return target
    cache_root().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_root()) as tmp:
        wheel = _download_wheel(version, Path(tmp))
        actual = _sha256(wheel)
        if actual != PINNED_SHA256[version]:
            raise CorpusError(
                f"{wheel.name}: sha256 {actual} does not match pinned {PINNED_SHA256[version]}"
            )
        staging = Path(tmp) / "tree"
        with zipfile.ZipFile(wheel) as archive:
            names = [n for n in archive.namelist() if n.startswith("sglang/") and n.endswith(".py")]
            archive.extractall(staging, members=names)
        (staging / ".complete").write_text(PINNED_SHA256[version] + "\n")
        if target.exists():
            _remove_tree(target)
        os.replace(staging, target)
    return target


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    """CLI: print the cached tree directory for each version given."""
    versions = argv if argv is not None else sys.argv[1:]
    if not versions:
        print("usage: python -m driftcheck.corpus VERSION [VERSION...]", file=sys.stderr)
        return 2
    try:
        for version in versions:
            print(fetch_release(version))
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
