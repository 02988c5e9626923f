"""No sequence of edits between runs makes a replayed answer differ from a run with
``--no-cache``: a run record is keyed by every input the run read (driftcheck.replay).

A repository (``.git`` at its root, the package under ``python/``) is checked after each of a
sequence of edits: a configuration written, changed or removed at the root or in ``python/``
(valid, naming an unknown rule, of a wrong type, not TOML), a model file edited, added,
removed or moved, a directory renamed, the repository marker removed. After every edit the
plain command (answered from the previous run's record when that record is still valid) must
print what ``--no-cache`` prints and exit as it does. The runs are in this process (the
console script runs it: ``driftcheck.replay.main``, which its entry point ``run`` calls), so
that many sequences are tried.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from rule_harness import FIXTURES

from driftcheck import replay

MODELS = "python/sglang/srt/models"
DRIFT = (
    "\n\ndef _late_{n}() -> bool:\n"
    "    b = get_moe_a2a_backend()\n"
    "    return b.is_deepep() or b.is_mori()\n"
)
NEW_MODEL = "from sglang.srt.layers.moe.utils import get_moe_a2a_backend\n" + DRIFT
TABLES = [
    'select = ["DC001"]\n',
    'select = ["DC999"]\n',
    'select = "DC001"\n',
    'ignore = ["DC020"]\n',
    'exclude = ["sglang/srt/models/kimi_like.py"]\n',
    "select = [\n",
]
CONFIG_PLACES = ["", "python", "python/sglang/srt"]  # the last one is misplaced: exit 2
IGNORES = [
    "sglang/srt/models/kimi_like.py\n",
    "models/\n",
    "*.py\n!dense_like.py\n",
    "# nothing\n",
]
CONFIG_NAMES = ["pyproject.toml", "driftcheck.toml"]
MOVABLE = ["kimi_like.py", "dense_like.py", "clean_like.py"]

edits = st.one_of(
    st.tuples(
        st.just("configure"),
        st.sampled_from(CONFIG_PLACES),
        st.sampled_from(CONFIG_NAMES),
        st.sampled_from(TABLES),
    ),
    st.tuples(
        st.just("unconfigure"), st.sampled_from(CONFIG_PLACES), st.sampled_from(CONFIG_NAMES)
    ),
    st.tuples(st.just("pyproject without a table"), st.sampled_from(CONFIG_PLACES)),
    st.tuples(
        st.just("ignore"),
        st.sampled_from(["", "python", "python/sglang/srt"]),
        st.sampled_from([".gitignore", ".ignore"]),
        st.sampled_from(IGNORES),
    ),
    st.tuples(st.just("edit"), st.sampled_from(MOVABLE)),
    st.tuples(st.just("add"), st.integers(0, 3)),
    st.tuples(st.just("remove"), st.sampled_from(MOVABLE)),
    st.tuples(st.just("move"), st.sampled_from(MOVABLE)),
    st.just(("rename models directory",)),
    st.just(("remove repository marker",)),
    st.just(("nothing",)),
)


def apply(repo: Path, edit: tuple, step: int) -> None:
    """Make one edit to the repository."""
    kind = edit[0]
    models = next((repo / "python/sglang/srt").glob("models*"))
    if kind == "configure":
        _, place, name, table = edit
        head = "[tool.driftcheck]\n" if name == "pyproject.toml" else ""
        (repo / place / name).write_text(head + table)
    elif kind == "unconfigure":
        (repo / edit[1] / edit[2]).unlink(missing_ok=True)
    elif kind == "ignore":
        _, place, name, lines = edit
        (repo / place / name).write_text(lines)
    elif kind == "pyproject without a table":
        (repo / edit[1] / "pyproject.toml").write_text('[project]\nname = "x"\n')
    elif kind == "edit" and (models / edit[1]).exists():
        with (models / edit[1]).open("a") as handle:
            handle.write(DRIFT.format(n=step))
    elif kind == "add":
        (models / f"added_{edit[1]}.py").write_text(NEW_MODEL.format(n=step))
    elif kind == "remove":
        (models / edit[1]).unlink(missing_ok=True)
    elif kind == "move" and (models / edit[1]).exists():
        (models / edit[1]).rename(repo / "python/sglang/srt/layers" / edit[1])
    elif kind == "rename models directory":
        models.rename(models.with_name("models_renamed" if models.name == "models" else "models"))
    elif kind == "remove repository marker":
        shutil.rmtree(repo / ".git", ignore_errors=True)


def driftcheck(*argv: str) -> tuple[str, str, int, bool]:
    """(stdout, stderr, exit code, answered from a record) of one run, as the console
    script runs it."""
    out, err = io.StringIO(), io.StringIO()
    answered = []
    real = replay.replay

    def replaying(args: list[str]) -> int | None:
        code = real(args)
        answered.append(code is not None)
        return code

    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(sys, "argv", ["driftcheck", *argv])
        patch.setattr(replay, "replay", replaying)
        try:
            replay.main()
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
    return out.getvalue(), err.getvalue(), code, answered == [True]


@pytest.fixture
def records(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DRIFTCHECK_RACY_MS", "0")  # the stamps of files just written count
    monkeypatch.delenv("NO_COLOR", raising=False)


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    sequence=st.lists(edits, min_size=1, max_size=6),
    argv=st.sampled_from([(), ("python/sglang",), ("python/sglang/srt/models/kimi_like.py",)]),
)
def test_a_replayed_answer_is_the_answer_without_cache(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    records: None,
    sequence: list[tuple],
    argv: tuple[str, ...],
) -> None:
    base = tmp_path_factory.mktemp("replayed")
    repo = base / "repo"
    (repo / ".git").mkdir(parents=True)
    shutil.copytree(FIXTURES / "sglang_like", repo / "python")
    monkeypatch.setenv("DRIFTCHECK_RUNS_DIR", str(base / "runs"))
    monkeypatch.chdir(repo)
    driftcheck(*argv)  # the first record
    for step, edit in enumerate(sequence):
        apply(repo, edit, step)
        *answer, replayed = driftcheck(*argv)
        event(f"replayed: {replayed}")
        *fresh, _ = driftcheck("--no-cache", *argv)
        assert answer == fresh, (step, edit, os.listdir(repo))
