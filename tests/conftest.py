"""Shared test fixtures: fixture trees copied to tmp_path, the CLI runner, SGLang releases."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


@pytest.fixture(autouse=True, scope="session")
def _run_records(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Records of repeated runs (driftcheck.replay) go to a directory of the test session,
    never the user's cache, for the commands the tests start as processes."""
    os.environ["DRIFTCHECK_RUNS_DIR"] = str(tmp_path_factory.mktemp("runs"))


@pytest.fixture
def sglang_like(tmp_path: Path) -> Path:
    """A writable copy of the fixture tree that imitates SGLang's layout (wheel layout)."""
    target = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", target)
    return target


@pytest.fixture
def runner() -> CliRunner:
    """A click runner that keeps stderr separate from stdout."""
    return CliRunner()


def _release(version: str) -> Path:
    from driftcheck.corpus import CorpusError, fetch_release

    try:
        return fetch_release(version)
    except CorpusError as exc:  # pragma: no cover - network failure in CI is a failure
        pytest.fail(f"cannot fetch sglang {version}: {exc}")


@pytest.fixture(scope="session")
def sglang_0_5_23() -> Path:
    """The sglang 0.5.23 source tree (downloaded once into the corpus cache, sha256-pinned)."""
    return _release("0.5.23")


@pytest.fixture(scope="session")
def sglang_release():
    """A function returning the tree of any pinned release."""
    return _release
