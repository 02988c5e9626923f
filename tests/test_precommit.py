"""The pre-commit hooks, run by the real ``pre-commit`` on real ``git commit``s.

Each test builds a git repository laid out like SGLang's (``python/sglang/...``, the universe
copied from ``fixtures/sglang_like``) whose ``.pre-commit-config.yaml`` has ``repo: local``
hooks made from this checkout's ``.pre-commit-hooks.yaml``: same ids, entries, file types and
``require_serial``; only ``language: system`` (and the entry's full path to this
environment's ``driftcheck``) differ, so no hook environment is built and no network is used.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pre_commit_clientlib = pytest.importorskip("pre_commit.clientlib")

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
MANIFEST = REPO / ".pre-commit-hooks.yaml"
DRIFTCHECK = Path(sys.executable).parent / "driftcheck"

COMPLETE = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend


def uses_a2a() -> bool:
    b = get_moe_a2a_backend()
    return b.is_deepep() or b.is_deepep_v2() or b.is_mooncake() or b.is_mori() or b.is_pplx()
"""

K3_LIKE = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend


def _uses_ep_a2a() -> bool:
    _a2a_backend = get_moe_a2a_backend()
    return (
        _a2a_backend.is_megamoe()
        or _a2a_backend.is_deepep()
        or _a2a_backend.is_mooncake()
        or _a2a_backend.is_mori()
    )
"""

K3_LIKE_SERVED = (
    K3_LIKE
    + """

class K3LikeForCausalLM:
    pass


EntryClass = K3LikeForCausalLM
"""
)

CLEAN = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend, is_deepep_class_backend


def uses_shared_slots() -> bool:
    return is_deepep_class_backend() or get_moe_a2a_backend().is_megamoe()
"""

# Qwen3-MoE reuses Qwen2-MoE's block: a registered architecture importing a model module makes
# deepep_v2 live there, though the module's own architecture is not registered
REGISTERED_IMPORTER = """\
from sglang.srt.models.reused_block import ReusedSparseBlock


class FixtureDenseForCausalLM:
    block = ReusedSparseBlock


EntryClass = FixtureDenseForCausalLM
"""

REUSED_BLOCK = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend


class ReusedSparseBlock:
    def __init__(self) -> None:
        b = get_moe_a2a_backend()
        self._enable_a2a_moe = b.is_deepep() or b.is_mooncake() or b.is_mori() or b.is_pplx()

    def forward(self, x):
        return x if self._enable_a2a_moe else -x


class ReusedForCausalLM:
    pass


EntryClass = ReusedForCausalLM
"""

BROKEN = "def f(:\n    b = get_moe_a2a_backend()\n    return b.is_deepep() or b.is_mori()\n"

MODELS = Path("python/sglang/srt/models")
HELPER = Path("python/sglang/srt/layers/moe/utils.py")


class Repo:
    """A temporary git repository with pre-commit installed and isolated from the user's."""

    def __init__(self, path: Path, home: Path) -> None:
        self.path = path
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
        self.env.update(
            PRE_COMMIT_HOME=str(home / "pre-commit"),
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_CONFIG_NOSYSTEM="1",
            NO_COLOR="1",
        )

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            args,
            cwd=self.path,
            env=self.env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )

    def git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("git", *args)

    def write(self, rel: Path | str, text: str) -> None:
        path = self.path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def commit(self, message: str, *paths: Path | str) -> subprocess.CompletedProcess[str]:
        """Stage ``paths`` and ``git commit``, which runs the installed pre-commit hook."""
        added = self.git("add", *map(str, paths))
        assert added.returncode == 0, added.stdout
        return self.git("commit", "-m", message)

    def head_count(self) -> int:
        return int(self.git("rev-list", "--count", "HEAD").stdout.strip())


def local_hooks(*ids: str, args: list[str] | None = None) -> dict:
    """``repo: local`` hooks mirroring the shipped manifest's hooks ``ids`` (plus user ``args``)."""
    manifest = {hook["id"]: hook for hook in pre_commit_clientlib.load_manifest(str(MANIFEST))}
    hooks = []
    for hook_id in ids:
        hook = manifest[hook_id]
        hooks.append(
            {
                "id": hook["id"],
                "name": hook["name"],
                "entry": f"{DRIFTCHECK} {hook['entry'].removeprefix('driftcheck ')}",
                "language": "system",
                "types": hook["types"],
                "require_serial": hook["require_serial"],
                "args": args or [],
            }
        )
    return {"repos": [{"repo": "local", "hooks": hooks}]}


def make_repo(
    tmp_path: Path,
    *hook_ids: str,
    args: list[str] | None = None,
    models: dict[str, str] | None = None,
) -> Repo:
    """An SGLang-layout repository whose first commit holds the universe and a complete list
    (plus ``models``: further model files, committed before the hook is installed)."""
    repo = Repo(tmp_path / "repo", tmp_path)
    shutil.copytree(FIXTURES / "sglang_like" / "sglang", repo.path / "python" / "sglang")
    shutil.rmtree(repo.path / MODELS)
    repo.write(MODELS / "__init__.py", "")
    repo.write(MODELS / "complete.py", COMPLETE)
    for name, source in (models or {}).items():
        repo.write(MODELS / name, source)
    # JSON is YAML: no YAML writer needed
    repo.write(".pre-commit-config.yaml", json.dumps(local_hooks(*hook_ids, args=args), indent=2))
    for args in (
        ("init", "-q", "-b", "main"),
        ("config", "user.name", "Test"),
        ("config", "user.email", "test@example.invalid"),
        ("config", "commit.gpgsign", "false"),
    ):
        assert repo.git(*args).returncode == 0
    installed = repo.run(sys.executable, "-m", "pre_commit", "install")
    assert installed.returncode == 0, installed.stdout
    assert repo.git("add", ".").returncode == 0
    first = repo.git("commit", "--no-verify", "-m", "initial")
    assert first.returncode == 0, first.stdout
    return repo


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return make_repo(tmp_path, "driftcheck")


def test_manifest_is_valid_for_pre_commit() -> None:
    hooks = pre_commit_clientlib.load_manifest(str(MANIFEST))
    summary = [
        (h["id"], h["entry"], h["language"], h["types"], h["require_serial"], h["args"])
        for h in hooks
    ]
    assert summary == [
        ("driftcheck", "driftcheck check", "python", ["python"], True, []),
        ("driftcheck-fix", "driftcheck check --fix", "python", ["python"], True, []),
    ]


def test_commit_introducing_a_drifting_list_fails(repo: Repo) -> None:
    repo.write(MODELS / "k3_like.py", K3_LIKE)
    outcome = repo.commit("add K3-like model", MODELS / "k3_like.py")
    assert outcome.returncode == 1
    assert "driftcheck (predicate drift)" in outcome.stdout and "Failed" in outcome.stdout
    assert (
        "sglang/srt/models/k3_like.py:7:9: DC001 _uses_ep_a2a enumerates 3 of 5 DeepEP-family "
        "backends; missing deepep_v2 (held back), pplx (held back: no same-role site lists "
        "them) (canonical: is_deepep_class_backend)"
    ) in outcome.stdout
    assert repo.head_count() == 1


def test_clean_commit_passes(repo: Repo) -> None:
    repo.write(MODELS / "clean.py", CLEAN)
    outcome = repo.commit("add a model that calls the helper", MODELS / "clean.py")
    assert outcome.returncode == 0, outcome.stdout
    assert "driftcheck (predicate drift)" in outcome.stdout and "Passed" in outcome.stdout
    assert repo.head_count() == 2


def test_commit_changing_only_the_helper_names_sites_in_untouched_files(repo: Repo) -> None:
    helper = (repo.path / HELPER).read_text(encoding="utf-8")
    widened = helper.replace(
        "        or backend.is_pplx()\n",
        "        or backend.is_pplx()\n        or backend.is_nixl()\n",
    )
    assert widened != helper
    repo.write(HELPER, widened)
    outcome = repo.commit("is_deepep_class_backend: add nixl", HELPER)
    assert outcome.returncode == 1
    assert (
        "sglang/srt/models/complete.py:6:12: DC001 uses_a2a enumerates 5 of 6 DeepEP-family "
        "backends; missing nixl (held back: no same-role site lists it) "
        "(canonical: is_deepep_class_backend)"
    ) in outcome.stdout
    assert repo.head_count() == 1


def test_a_changed_file_is_judged_against_the_whole_tree(repo: Repo) -> None:
    """The importer is not in the commit, yet it decides that deepep_v2 is live: an error."""
    repo.write(MODELS / "registered.py", REGISTERED_IMPORTER)
    assert repo.commit("add the registered importer", MODELS / "registered.py").returncode == 0
    repo.write(MODELS / "reused_block.py", REUSED_BLOCK)
    outcome = repo.commit("add the reused block", MODELS / "reused_block.py")
    assert outcome.returncode == 1
    assert (
        "sglang/srt/models/reused_block.py:7:32: DC001 _enable_a2a_moe enumerates 4 of 5 "
        "DeepEP-family backends; missing deepep_v2 (held back: no same-role site lists it) "
        "(canonical: is_deepep_class_backend)"
    ) in outcome.stdout


def test_unparsable_file_fails_with_a_clear_error_and_exit_code_2(repo: Repo) -> None:
    repo.write(MODELS / "broken.py", BROKEN)
    outcome = repo.commit("add a broken model", MODELS / "broken.py")
    assert outcome.returncode == 1
    assert "- exit code: 2" in outcome.stdout
    assert (
        "sglang/srt/models/broken.py:1: error: syntax error: invalid syntax; file skipped"
        in outcome.stdout
    )


def test_fixing_hook_adds_the_safe_members_and_a_held_back_one_keeps_failing(
    tmp_path: Path,
) -> None:
    """deepep_v2 is latent for an unregistered architecture: the hook adds it. pplx is live
    and no same-role site lists it: held back, and the commit fails until it is dealt with."""
    repo = make_repo(tmp_path, "driftcheck-fix")
    repo.write(MODELS / "k3_like.py", K3_LIKE_SERVED)
    first = repo.commit("add K3-like model", MODELS / "k3_like.py")
    assert first.returncode == 1
    assert "files were modified by this hook" in first.stdout
    fixed = (repo.path / MODELS / "k3_like.py").read_text(encoding="utf-8")
    assert "_a2a_backend.is_deepep_v2()" in fixed and "_a2a_backend.is_pplx()" not in fixed
    second = repo.commit("add K3-like model", MODELS / "k3_like.py")
    assert second.returncode == 1
    assert (
        "sglang/srt/models/k3_like.py:7:9: DC001 _uses_ep_a2a enumerates 4 of 5 DeepEP-family "
        "backends; missing pplx (held back: no same-role site lists it) "
        "(canonical: is_deepep_class_backend)"
    ) in second.stdout
    assert repo.head_count() == 1


def test_fixing_hook_with_unsafe_fixes_adds_every_member_and_the_second_commit_passes(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path, "driftcheck-fix", args=["--unsafe-fixes"])
    repo.write(MODELS / "k3_like.py", K3_LIKE)
    first = repo.commit("add K3-like model", MODELS / "k3_like.py")
    assert first.returncode == 1
    assert "files were modified by this hook" in first.stdout
    fixed = (repo.path / MODELS / "k3_like.py").read_text(encoding="utf-8")
    assert "_a2a_backend.is_deepep_v2()" in fixed and "_a2a_backend.is_pplx()" in fixed
    second = repo.commit("add K3-like model", MODELS / "k3_like.py")
    assert second.returncode == 0, second.stdout
    assert repo.head_count() == 2


def test_baselined_drift_passes_and_new_drift_fails(tmp_path: Path) -> None:
    """The adoption workflow of docs/pre-commit.md: baseline today's findings, fail on new ones."""
    baseline = [
        str(DRIFTCHECK),
        "--no-cache",
        "--write-baseline",
        ".driftcheck-baseline.json",
        "python/sglang",
    ]
    repo = make_repo(
        tmp_path,
        "driftcheck",
        args=["--baseline", ".driftcheck-baseline.json"],
        models={"k3_like.py": K3_LIKE},
    )
    written = repo.run(*baseline)
    assert written.returncode == 0, written.stdout
    entries = json.loads((repo.path / ".driftcheck-baseline.json").read_text(encoding="utf-8"))[
        "findings"
    ]
    assert [(e["code"], e["path"], e["symbol"]) for e in entries] == [
        ("DC001", "sglang/srt/models/k3_like.py", "_uses_ep_a2a")
    ]
    moved = '"""An unrelated docstring moves the list down."""\n\n' + K3_LIKE
    repo.write(MODELS / "k3_like.py", moved)
    assert (
        repo.commit(
            "touch the baselined file", ".driftcheck-baseline.json", MODELS / "k3_like.py"
        ).returncode
        == 0
    )
    repo.write(MODELS / "k3_copy.py", K3_LIKE)
    outcome = repo.commit("copy the list", MODELS / "k3_copy.py")
    assert outcome.returncode == 1
    assert "sglang/srt/models/k3_copy.py:7:9: DC001 _uses_ep_a2a" in outcome.stdout
    assert "k3_like.py" not in outcome.stdout


def snapshot_of_this_checkout(destination: Path) -> str:
    """A git repository holding this checkout's files (tracked and new), committed: what a
    user's ``repo:`` URL points at. Returns the commit's sha, the ``rev`` to pin."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        source = REPO / rel
        if source.is_file():
            (destination / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / rel)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (
        ("init", "-q", "-b", "main"),
        ("add", "."),
        ("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "snapshot"),
    ):
        subprocess.run(["git", *args], cwd=destination, env=env, check=True, capture_output=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=destination, env=env, capture_output=True, text=True
    ).stdout.strip()


def test_the_documented_remote_snippet_installs_and_runs_the_hook(tmp_path: Path) -> None:
    """docs/pre-commit.md's remote form, pinned to a commit sha: pre-commit clones the
    repository, installs driftcheck into its own environment and runs the hook."""
    checkout = tmp_path / "driftcheck-checkout"
    sha = snapshot_of_this_checkout(checkout)
    repo = make_repo(tmp_path, "driftcheck")
    config = {"repos": [{"repo": checkout.as_uri(), "rev": sha, "hooks": [{"id": "driftcheck"}]}]}
    repo.write(".pre-commit-config.yaml", json.dumps(config))
    repo.write(MODELS / "k3_like.py", K3_LIKE)
    outcome = repo.commit("add K3-like model", ".pre-commit-config.yaml", MODELS / "k3_like.py")
    assert outcome.returncode == 1, outcome.stdout
    assert "python/sglang/srt/models/k3_like.py:7:9: DC001 _uses_ep_a2a" in outcome.stdout
