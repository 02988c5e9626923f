"""A file of many sites gives exactly its sites' findings, whatever shape they take (a function
returning the chain, a keyword argument, an attribute, a module constant), and the same sites,
roles included, whether a name's mentions are searched for or indexed
(:mod:`driftcheck.sites.mentions`) and whether the file is parsed in pieces or whole
(:mod:`driftcheck.partial`). How the time grows with the sites is measured by
``benchmarks/bench_shapes.py``, never asserted here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import driftcheck.scan
import driftcheck.sites.mentions
from driftcheck.cli import main
from driftcheck.engine import check
from driftcheck.partial import parse_for_sites

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GENERATED = "sglang/srt/models/generated.py"
HEADER = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend

_BACKEND = get_moe_a2a_backend()
"""
BLOCKS = 40  # each block holds four sites, one of each shape
LISTS_MORI = 5  # every fifth keyword site lists mori too
# one class holding a site in each of METHODS methods, each called by another method
MODEL = "sglang/srt/models/generated_model.py"
METHODS = 40
MODEL_HEADER = """\
from sglang.srt.layers.moe.utils import get_moe_a2a_backend


class Model:
    def __init__(self):
        self.backend = get_moe_a2a_backend()
"""


def block(i: int) -> str:
    """Block ``i``: 28 lines holding four sites."""
    mori = " or b.is_mori()" if i % LISTS_MORI == 0 else ""
    return f"""

def _uses_ep_a2a_{i}():
    b = get_moe_a2a_backend()
    return b.is_deepep() or b.is_mooncake() or b.is_mori()


def forward_{i}(x):
    if _uses_ep_a2a_{i}():
        return dispatch_{i}(x)
    return x


def f{i}(x):
    b = get_moe_a2a_backend()
    return combine_{i}(x, enabled=b.is_deepep() or b.is_mooncake(){mori})


class Layer{i}:
    def __init__(self):
        b = get_moe_a2a_backend()
        self.use_deepep = b.is_deepep() or b.is_mooncake()

    def forward(self, x):
        return dispatch_{i}(x) if self.use_deepep else x


USE_A2A_{i} = _BACKEND.is_deepep() or _BACKEND.is_mooncake()
"""


def method(i: int) -> str:
    """Method ``i`` of the model class, and the method calling it."""
    return f"""
    def _uses_ep_a2a_m{i}(self):
        b = self.backend
        return b.is_deepep() or b.is_mooncake() or b.is_mori()

    def forward_m{i}(self, x):
        if self._uses_ep_a2a_m{i}():
            return self.dispatch_m{i}(x)
        return x
"""


CANONICAL = "(canonical: is_deepep_class_backend)"
HELD_BACK = "pplx (held back: no same-role site lists them) " + CANONICAL
TWO = "enumerates 2 of 5 DeepEP-family backends; missing deepep_v2 (held back), "
THREE = "enumerates 3 of 5 DeepEP-family backends; missing deepep_v2 (held back), "


def expected(i: int) -> list[str]:
    """The findings of block ``i``, as the text report prints them: each site's line is
    found in the block's text, its column is where the chain starts."""
    lines = block(i).split("\n")
    above = HEADER.count("\n") + sum(block(j).count("\n") for j in range(i))

    def at(marker: str, chain: str = "b.is_deepep()") -> str:
        """Where ``chain`` starts on the line holding ``marker``."""
        [number] = [n for n, line in enumerate(lines) if marker in line]
        return f"{GENERATED}:{above + number + 1}:{lines[number].index(chain) + 1}: DC001"

    keyword = THREE + HELD_BACK if i % LISTS_MORI == 0 else TWO + "mori, " + HELD_BACK
    return [
        f"{at('return b.is_deepep()')} _uses_ep_a2a_{i} {THREE}{HELD_BACK}",
        f"{at('enabled=')} enabled {keyword}",
        f"{at('self.use_deepep =')} use_deepep {TWO}mori (held back), {HELD_BACK}",
        f"{at('USE_A2A_', '_BACKEND')} USE_A2A_{i} {TWO}mori (held back), {HELD_BACK}",
    ]


def expected_method(i: int) -> str:
    """The finding of method ``i``."""
    line = MODEL_HEADER.count("\n") + 4 + sum(method(j).count("\n") for j in range(i))
    return f"{MODEL}:{line}:16: DC001 _uses_ep_a2a_m{i} {THREE}{HELD_BACK}"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    target = tmp_path / "tree"
    shutil.copytree(FIXTURES / "sglang_like", target)
    text = HEADER + "".join(block(i) for i in range(BLOCKS))
    (target / GENERATED).write_text(text)
    (target / MODEL).write_text(MODEL_HEADER + "".join(method(i) for i in range(METHODS)))
    return target


def test_200_sites_of_five_shapes_give_their_200_findings(tree: Path) -> None:
    result = CliRunner().invoke(main, [str(tree), "--no-cache"], catch_exceptions=False)
    found = [line for line in result.stdout.splitlines() if line.startswith(GENERATED)]
    assert found == [line for i in range(BLOCKS) for line in expected(i)]
    in_model = [line for line in result.stdout.splitlines() if line.startswith(MODEL)]
    assert in_model == [expected_method(i) for i in range(METHODS)]
    assert len(found) + len(in_model) == 200
    assert result.exit_code == 1


def test_each_keyword_site_names_the_first_other_listing_mori_and_how_many_more(
    tree: Path,
) -> None:
    result = CliRunner().invoke(
        main, [str(tree), "--no-cache", "--format", "json"], catch_exceptions=False
    )
    reasons = {
        finding["symbol"]: member["reason"]
        for finding in json.loads(result.stdout)["findings"]
        if finding["path"] == GENERATED and finding["message"].startswith("enabled ")
        for member in finding["fix"]["members"]
        if member["member"] == "mori"
    }
    first = expected(0)[1].split(":")[1]  # the line of f0's keyword site
    listing = BLOCKS // LISTS_MORI
    assert reasons == {
        f"f{i}": f"same-role site generated.py:{first} (f0) and {listing - 1} more lists it"
        for i in range(BLOCKS)
        if i % LISTS_MORI
    }


def sites_of(tree: Path, monkeypatch: pytest.MonkeyPatch, *, searches: int, whole: bool) -> list:
    """Every site of the tree, roles included, with mentions indexed after ``searches``
    whole-text searches of a kind, the files parsed whole or in pieces."""
    monkeypatch.setattr(driftcheck.sites.mentions, "SEARCHES", searches)
    if whole:
        monkeypatch.setattr(
            driftcheck.scan,
            "parse_for_sites",
            lambda source, path, hot, defining=None: parse_for_sites(source, path, None),
        )
    result = check([tree], use_cache=False, jobs=1)
    monkeypatch.undo()
    return [
        site.to_dict()
        for scan in sorted(result.scans.values(), key=lambda s: s.path)
        for site in scan.sites
    ]


def test_the_sites_are_the_same_searched_or_indexed_in_pieces_or_whole(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched = sites_of(tree, monkeypatch, searches=10**9, whole=False)
    assert len([s for s in searched if s["path"] in (GENERATED, MODEL)]) == 200
    # the roles follow the values to their callers and readers (no vacuous comparison)
    keys = {r["key"] for s in searched if s["path"] == GENERATED for r in s["role"]["reaches"]}
    assert {"call:dispatch_0", "kw:enabled", "set:use_deepep"} <= keys
    keys = {r["key"] for s in searched if s["path"] == MODEL for r in s["role"]["reaches"]}
    assert {"call:dispatch_m0", f"call:dispatch_m{METHODS - 1}"} <= keys
    assert sites_of(tree, monkeypatch, searches=0, whole=False) == searched
    assert sites_of(tree, monkeypatch, searches=0, whole=True) == searched
    assert sites_of(tree, monkeypatch, searches=10**9, whole=True) == searched
