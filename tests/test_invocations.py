"""Same answer however driftcheck is invoked.

A git repository laid out like SGLang's (``python/sglang/...``) holds four files of the real
0.5.23 wheel: the helper and enum (``moe/utils.py``), the per-model registry, ``kimi_k3.py``
(which drifts) and ``llama.py`` (clean). Every way a user runs driftcheck on it — bare from
the root, on the package, on one file, from a subdirectory, and through the real
``pre-commit`` — must report the same findings for the same file, print paths that exist from
its working directory, honour the same configuration (none, at the repository root, in
``python/``), and accept a baseline written by any other. Bad input exits 2 with an exact
message.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from driftcheck.rules import CATALOGUE

pytestmark = pytest.mark.corpus

DRIFTCHECK = Path(sys.executable).parent / "driftcheck"
WHEEL_FILES = (
    "sglang/srt/layers/moe/utils.py",
    "sglang/srt/configs/moe_model_registry.py",
    "sglang/srt/models/kimi_k3.py",
    "sglang/srt/models/llama.py",
)
K3 = "python/sglang/srt/models/kimi_k3.py"
LINE = re.compile(
    r"^(?P<path>[^:\s]+):(?P<line>\d+):(?P<col>\d+): (?P<code>DC\d+)(?: \(\w+\))? (?P<message>.*)$"
)

# An observable configuration: a policy accepting pplx's absence from K3's list. Its path is
# relative to the directory of the file that holds it, the project root.
POLICY = """\
[tool.driftcheck]
extend-select = ["DC002"]

[[tool.driftcheck.policies]]
path = "{prefix}sglang/srt/models/kimi_k3.py"
symbol = "_uses_ep_a2a"
allow-missing = ["pplx"]
reason = "pplx not validated on K3"
"""
CONFIGS = {
    "no configuration": None,
    "configuration at the repository root": ("pyproject.toml", "python/"),
    "configuration in python/": ("python/pyproject.toml", ""),
}
EXPECTED_K3 = {
    "no configuration": (
        "_uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; missing deepep_v2 (latent), "
        "pplx (held back: no same-role site lists it) (canonical: is_deepep_class_backend)"
    ),
    "configuration at the repository root": (
        "_uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; missing deepep_v2 (latent) "
        "(canonical: is_deepep_class_backend)"
    ),
}
EXPECTED_K3["configuration in python/"] = EXPECTED_K3["configuration at the repository root"]


@dataclass(frozen=True)
class Invocation:
    """One way of running the ``driftcheck`` hook or command on the repository."""

    name: str
    cwd: str
    args: tuple[str, ...] = ()
    precommit: bool = False


INVOCATIONS = (
    Invocation("bare from the root", "."),
    Invocation("on the package", ".", ("python/sglang",)),
    Invocation("on one file", ".", (K3,)),
    Invocation("from a subdirectory", "python/sglang/srt", ("models/kimi_k3.py",)),
    Invocation("pre-commit run --files", ".", (K3,), precommit=True),
)
WRITERS = [i for i in INVOCATIONS if not i.precommit]


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def make_repository(path: Path, release: Path, config: str) -> Path:
    """The repository with ``config``'s placement of the policy, committed."""
    for rel in WHEEL_FILES:
        target = path / "python" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(release / rel, target)
    placement = CONFIGS[config]
    if placement is not None:
        where, prefix = placement
        (path / where).write_text(POLICY.format(prefix=prefix))
    git(path, "init", "-q", "-b", "main")
    git(path, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "add", ".")
    git(path, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "init")
    return path


def run(repo: Path, invocation: Invocation, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run ``invocation`` (with ``extra`` driftcheck arguments) and return what it printed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", NO_COLOR="1")
    if not invocation.precommit:
        return subprocess.run(
            [str(DRIFTCHECK), *extra, *invocation.args],
            cwd=repo / invocation.cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    hook = {
        "id": "driftcheck",
        "name": "driftcheck",
        "entry": f"{DRIFTCHECK} check",
        "language": "system",
        "types": ["python"],
        "require_serial": True,
        "args": list(extra),
    }
    (repo / ".pre-commit-config.yaml").write_text(
        json.dumps({"repos": [{"repo": "local", "hooks": [hook]}]})
    )
    git(repo, "add", ".pre-commit-config.yaml")
    env["PRE_COMMIT_HOME"] = str(repo.parent / "pre-commit-home")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pre_commit",
            "run",
            "driftcheck",
            "--verbose",
            "--files",
            *invocation.args,
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc


def findings(
    repo: Path, invocation: Invocation, output: str
) -> set[tuple[str, int, int, str, str]]:
    """``(absolute path, line, col, code, message)`` of each finding line in ``output``."""
    found = set()
    for line in output.splitlines():
        match = LINE.match(line)
        if match:
            absolute = os.path.normpath(repo / invocation.cwd / match["path"])
            found.add(
                (absolute, int(match["line"]), int(match["col"]), match["code"], match["message"])
            )
    return found


@pytest.fixture(scope="module", params=list(CONFIGS))
def repository(request, sglang_0_5_23: Path, tmp_path_factory) -> tuple[str, Path]:
    config = request.param
    path = tmp_path_factory.mktemp("invocations") / "repo"
    return config, make_repository(path, sglang_0_5_23, config)


@pytest.fixture(scope="module")
def outputs(repository) -> dict[str, subprocess.CompletedProcess[str]]:
    _, repo = repository
    return {invocation.name: run(repo, invocation) for invocation in INVOCATIONS}


@pytest.mark.parametrize("invocation", INVOCATIONS, ids=[i.name for i in INVOCATIONS])
def test_every_invocation_reports_the_same_finding_for_kimi_k3(
    repository, outputs, invocation: Invocation
) -> None:
    config, repo = repository
    found = findings(repo, invocation, outputs[invocation.name].stdout)
    assert found == {(str(repo / K3), 440, 9, "DC001", EXPECTED_K3[config])}


@pytest.mark.parametrize("invocation", INVOCATIONS, ids=[i.name for i in INVOCATIONS])
def test_printed_paths_exist_from_the_working_directory(
    repository, outputs, invocation: Invocation
) -> None:
    _, repo = repository
    printed = [
        LINE.match(line)["path"]
        for line in outputs[invocation.name].stdout.splitlines()
        if LINE.match(line)
    ]
    assert printed
    assert all((repo / invocation.cwd / path).is_file() for path in printed)


@pytest.mark.parametrize("invocation", WRITERS, ids=[i.name for i in WRITERS])
@pytest.mark.parametrize("output_format", ["github", "sarif", "json"])
def test_machine_formats_name_files_that_exist(
    repository, invocation: Invocation, output_format: str
) -> None:
    """github and SARIF name files relative to the working directory (SARIF's %SRCROOT%);
    JSON names canonical paths relative to its ``root``."""
    _, repo = repository
    stdout = run(repo, invocation, "--format", output_format).stdout
    here = repo / invocation.cwd
    if output_format == "github":
        paths = [here / m for m in re.findall(r"^::\w+ file=([^,]+),", stdout, re.MULTILINE)]
    elif output_format == "sarif":
        results = json.loads(stdout)["runs"][0]["results"]
        locations = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in results]
        assert {loc["uriBaseId"] for loc in locations} == {"%SRCROOT%"}
        paths = [here / loc["uri"] for loc in locations]
    else:
        document = json.loads(stdout)
        paths = [here / document["root"] / f["path"] for f in document["findings"]]
    assert paths
    assert all(path.is_file() for path in paths)
    assert {os.path.normpath(p) for p in paths} == {str(repo / K3)}


@pytest.mark.parametrize("writer", WRITERS, ids=[i.name for i in WRITERS])
def test_a_baseline_written_by_any_invocation_suppresses_the_same_findings_in_every_other(
    repository, writer: Invocation
) -> None:
    _, repo = repository
    baseline = repo.parent / f"baseline-{writer.name.replace(' ', '-')}.json"
    written = run(repo, writer, "--write-baseline", str(baseline))
    assert written.returncode == 0, written.stderr
    for reader in INVOCATIONS:
        outcome = run(repo, reader, "--baseline", str(baseline))
        output = outcome.stdout + outcome.stderr
        assert findings(repo, reader, output) == set(), (reader.name, output)
        assert outcome.returncode == 0, (reader.name, output)


BAD_INPUT = [
    pytest.param(
        ("--select", "DC999"),
        "error: --select: unknown rule code or prefix 'DC999' ({known})",
        id="unknown-code",
    ),
    pytest.param(
        ("--select", "XYZ"),
        "error: --select: unknown rule code or prefix 'XYZ' ({known})",
        id="unknown-prefix",
    ),
    pytest.param(
        ("--select", ""),
        "error: --select: empty rule selection; give codes or prefixes (DC001, DC0, ALL)",
        id="empty-select",
    ),
    pytest.param(
        ("--ignore", "DC999"),
        "error: --ignore: unknown rule code or prefix 'DC999' ({known})",
        id="unknown-ignore",
    ),
    pytest.param(
        ("verify", "--select", "DC999"),
        "error: --select: unknown rule code or prefix 'DC999' ({known})",
        id="verify-unknown-code",
    ),
    pytest.param(
        ("/nonexistent/path",),
        "/nonexistent/path: error: no such file or directory",
        id="nonexistent-path",
    ),
]


def known_codes() -> str:
    return f"known codes: {', '.join(sorted(CATALOGUE))}; prefixes such as DC0 and DC00, and ALL"


@pytest.mark.parametrize(("args", "message"), BAD_INPUT)
def test_bad_command_line_exits_2_naming_the_bad_value(
    sglang_0_5_23: Path, tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    repo = make_repository(tmp_path / "repo", sglang_0_5_23, "no configuration")
    outcome = run(repo, Invocation("bad", ".", args))
    assert outcome.returncode == 2
    assert outcome.stderr.splitlines() == [message.format(known=known_codes())]
    assert outcome.stdout == ""


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        pytest.param(
            'select = ["DC999"]',
            "python/pyproject.toml:2: error: [tool.driftcheck] select: unknown rule code or "
            "prefix 'DC999' ({known})",
            id="config-unknown-code",
        ),
        pytest.param(
            'min-overlap = "two"',
            "python/pyproject.toml:2: error: [tool.driftcheck] min-overlap must be a positive "
            'integer, got "two"',
            id="config-wrong-type",
        ),
        pytest.param(
            'fix-style = "tidy"',
            "python/pyproject.toml:2: error: [tool.driftcheck] fix-style must be one of "
            "'minimal', 'helper', got \"tidy\"",
            id="config-bad-choice",
        ),
    ],
)
def test_bad_configuration_exits_2_naming_file_line_and_value(
    sglang_0_5_23: Path, tmp_path: Path, toml: str, message: str
) -> None:
    repo = make_repository(tmp_path / "repo", sglang_0_5_23, "no configuration")
    (repo / "python/pyproject.toml").write_text(f"[tool.driftcheck]\n{toml}\n")
    outcome = run(repo, Invocation("bad", "."))
    assert outcome.returncode == 2
    assert outcome.stderr.splitlines() == [message.format(known=known_codes())]
