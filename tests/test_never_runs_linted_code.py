"""driftcheck reads the linted tree; it never imports or executes it.

``fixtures/hostile`` is laid out like SGLang, and every piece of its code that could run (module
top levels, the enum's class body, ``__eq__``, the getter, the helper's default argument, a
module ``__getattr__``, modules at the root shadowing ``click``, ``enum``, ``multiprocessing``
...) appends to a marker file and connects to a port on 127.0.0.1. Each command runs through
the installed ``driftcheck`` console script, from inside a copy of the tree, and must still do
its job (report, fix, verify, generate tests) without the marker appearing or the port being
connected to.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from driftcheck.cli import main
from driftcheck.engine import check

HOSTILE = Path(__file__).resolve().parent.parent / "fixtures" / "hostile"
CONSOLE_SCRIPT = Path(sys.executable).with_name("driftcheck")
MODEL = "sglang/srt/models/hostile_model.py"
FINDINGS = [
    f"{MODEL}:30:9: DC001 _uses_ep_a2a enumerates 3 of 5 DeepEP-family backends; missing deepep_v2 (held back), pplx (held back: no same-role site lists them) (canonical: is_deepep_class_backend)",
    f"{MODEL}:39:12: DC003 uses enumerates 3 of 5 DeepEP-family backends; missing deepep_v2 (held back), pplx (held back: no same-role site lists them) (canonical: is_deepep_class_backend)",
    f"{MODEL}:49:20: DC003 _v2 enumerates 2 of 5 DeepEP-family backends; missing deepep_v2 (held back), mooncake (held back), mori (held back: no same-role site lists them) (canonical: is_deepep_class_backend)",
]


def torch_available() -> bool:
    """Whether torch is installed (found, not imported: importing it is slow)."""
    return importlib.util.find_spec("torch") is not None


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A writable copy of the hostile tree."""
    target = tmp_path / "hostile"
    shutil.copytree(HOSTILE, target)
    return target


@pytest.fixture
def tripwire(tmp_path: Path) -> Iterator[tuple[Path, socket.socket]]:
    """The marker file path and a listening socket the hostile code would connect to."""
    marker = tmp_path / "executed.marker"
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield marker, server
    server.close()


def connections(server: socket.socket) -> list[bytes]:
    """What the hostile code sent, if it ever ran (empty when nobody connected)."""
    received = []
    while True:
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            return received
        conn.settimeout(1)
        received.append(conn.recv(4096))
        conn.close()


def driftcheck(
    tree: Path, tripwire: tuple[Path, socket.socket], *args: str, python: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the console script (or ``python ...``) from inside ``tree``."""
    marker, server = tripwire
    env = {
        **os.environ,
        "DRIFTCHECK_HOSTILE_MARKER": str(marker),
        "DRIFTCHECK_HOSTILE_PORT": str(server.getsockname()[1]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    command = [*(python or [str(CONSOLE_SCRIPT)]), *args]
    return subprocess.run(
        command, cwd=tree, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def assert_never_ran(tripwire: tuple[Path, socket.socket]) -> None:
    marker, server = tripwire
    assert connections(server) == []
    assert not marker.exists(), marker.read_text()


def test_check_reports_the_drift_without_running_the_tree(tree: Path, tripwire) -> None:
    result = driftcheck(tree, tripwire, "--no-cache", "--color", "never", ".")
    assert_never_ran(tripwire)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines() == FINDINGS


@pytest.mark.parametrize("output_format", ["json", "sarif", "github"])
def test_machine_formats_do_not_run_the_tree(tree: Path, tripwire, output_format: str) -> None:
    result = driftcheck(tree, tripwire, "--no-cache", "--format", output_format, ".")
    assert_never_ran(tripwire)
    assert result.returncode == 1, result.stderr
    if output_format == "json":
        assert len(json.loads(result.stdout)["findings"]) == 3


def test_cached_run_does_not_run_the_tree(tree: Path, tripwire) -> None:
    first = driftcheck(tree, tripwire, ".")
    second = driftcheck(tree, tripwire, ".")
    assert_never_ran(tripwire)
    assert first.stdout.splitlines() == second.stdout.splitlines() == FINDINGS


def test_discover_does_not_run_the_tree(tree: Path, tripwire) -> None:
    result = driftcheck(tree, tripwire, "discover", ".")
    assert_never_ran(tripwire)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("sglang.srt.layers.moe.utils:is_deepep_class_backend ")
    assert (
        "  copy: sglang/srt/models/hostile_model.py:30 _uses_ep_a2a() (1 caller; missing deepep_v2, "
        "pplx, adds megamoe)" in lines
    )


def test_fix_rewrites_the_tree_without_running_it(tree: Path, tripwire) -> None:
    result = driftcheck(tree, tripwire, "--no-cache", "--fix", "--unsafe-fixes", ".")
    assert_never_ran(tripwire)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "is_deepep_v2()" in (tree / MODEL).read_text()
    assert driftcheck(tree, tripwire, "--no-cache", ".").returncode == 0
    assert_never_ran(tripwire)


def test_verify_proves_the_fixes_without_running_the_tree(tree: Path, tripwire) -> None:
    result = driftcheck(tree, tripwire, "verify", "--no-cache", "--unsafe-fixes", ".")
    assert_never_ran(tripwire)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr.splitlines()[-1] == "3 sites verified: 3 proven."


@pytest.mark.skipif(
    not torch_available(), reason="verify --layer needs torch (pip install -e '.[verify]')"
)
def test_verify_layer_executes_only_the_layer_module_and_the_packs_modules(
    tree: Path, tripwire
) -> None:
    """The trust boundary, documented: ``verify --layer`` executes the site's module and the
    modules the pack names (the enum's), in its rank processes; nothing else of the tree runs
    (the root's shadowing ``click.py``, ``enum.py``, ``torch.py``, the other model files)."""
    model = tree / MODEL
    model.write_text(
        model.read_text().replace(
            "    def forward(self, x):\n        return x if self._v2 else -x\n",
            "    def forward(self, x):\n"
            "        if not self._ep_a2a:\n"
            "            x = tensor_model_parallel_all_reduce(x)\n"
            "        return x\n",
        )
    )
    result = driftcheck(
        tree,
        tripwire,
        "verify",
        "--no-cache",
        "--unsafe-fixes",
        "--layer",
        "--device",
        "cpu",
        MODEL,
    )
    marker, _ = tripwire
    ran = set(marker.read_text().splitlines())
    assert ran == {
        "sglang.srt.models.hostile_model imported (sglang/srt/models/hostile_model.py)",
        "HostileMoE class body",
        "sglang.srt.layers.moe.utils imported (sglang/srt/layers/moe/utils.py)",
        "MoeA2ABackend class body",
        "MoeA2ABackend.__eq__ called",
        "is_deepep_class_backend defined",
    }, result.stdout + result.stderr
    assert "layer verification (the tree's own blocks" in result.stdout


def test_gen_test_writes_its_module_without_running_the_tree(tree: Path, tripwire) -> None:
    result = driftcheck(tree, tripwire, "gen-test", "-o", "generated/test_registry.py", ".")
    assert_never_ran(tripwire)
    assert result.returncode == 0, result.stderr
    assert (tree / "generated/test_registry.py").is_file()


def test_python_dash_capital_p_dash_m_is_safe_inside_the_tree(tree: Path, tripwire) -> None:
    """``python -m driftcheck`` puts the working directory first on sys.path, so inside an
    untrusted tree Python itself imports the tree's ``driftcheck.py`` (or ``click.py``)
    before driftcheck runs. ``python -P -m driftcheck`` (3.11+) does not."""
    result = driftcheck(
        tree, tripwire, "--no-cache", ".", python=[sys.executable, "-P", "-m", "driftcheck"]
    )
    assert_never_ran(tripwire)
    assert result.stdout.splitlines() == FINDINGS


def test_in_process_runs_import_nothing_from_the_tree(
    tree: Path, tripwire, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check, --fix, verify and gen-test in this process: sys.modules gains no module from the
    linted tree (and none named like its packages)."""
    marker, server = tripwire
    monkeypatch.setenv("DRIFTCHECK_HOSTILE_MARKER", str(marker))
    monkeypatch.setenv("DRIFTCHECK_HOSTILE_PORT", str(server.getsockname()[1]))
    before = set(sys.modules)
    result = check([tree], use_cache=False)
    assert len(result.findings) == 3
    runner = CliRunner()
    assert runner.invoke(main, ["verify", "--no-cache", "--unsafe-fixes", str(tree)]).exit_code == 0
    assert (
        runner.invoke(
            main, ["gen-test", "-o", str(tree / "generated/test_x.py"), str(tree)]
        ).exit_code
        == 0
    )
    assert runner.invoke(main, ["--no-cache", "--fix", "--unsafe-fixes", str(tree)]).exit_code == 0
    gained = {name: module for name, module in sys.modules.items() if name not in before}
    root = str(tree.resolve())
    from_tree = sorted(
        name
        for name, module in gained.items()
        if str(getattr(module, "__file__", "") or "").startswith(root)
        or name.split(".")[0] == "sglang"
    )
    assert from_tree == []
    assert_never_ran(tripwire)
