"""Truth tables: each fix is proven from the site's own code, member by member, never guessed.

The fixture universe's enum, in declaration order: none, deepep, mooncake, nixl, mori,
ascend_fuseep, flashinfer, megamoe, deepep_v2, pplx, flashinfer_megamoe. Its family
(``is_deepep_class_backend``): deepep, deepep_v2, mooncake, mori, pplx. Fixes here are built by
hand, so these tests pin the verifier, not the fixer.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from driftcheck.runtime_verify.proof import SiteProof, find_site, prove
from driftcheck.runtime_verify.render import proof_dict, render_site
from rule_harness import run_example

from driftcheck.engine import CheckResult
from driftcheck.model import Finding, Fix, Span

K3_LIKE = (
    "def uses_ep_a2a() -> bool:\n"
    "    _a2a_backend = get_moe_a2a_backend()\n"
    "    return (\n"
    "        _a2a_backend.is_megamoe()\n"
    "        or _a2a_backend.is_deepep()\n"
    "        or _a2a_backend.is_mooncake()\n"
    "        or _a2a_backend.is_mori()\n"
    "    )\n"
)
K3_FIXED_EXPRESSION = (
    "_a2a_backend.is_megamoe()\n"
    "        or _a2a_backend.is_deepep()\n"
    "        or _a2a_backend.is_deepep_v2()\n"
    "        or _a2a_backend.is_mooncake()\n"
    "        or _a2a_backend.is_mori()\n"
    "        or _a2a_backend.is_pplx()"
)


def checked(tmp_path: Path, code: str) -> tuple[CheckResult, Finding]:
    result = run_example(tmp_path, code)
    assert not result.problems, result.problems
    [finding] = [f for f in result.findings if f.code in ("DC001", "DC003")]
    return result, finding


def proven_with(
    tmp_path: Path, code: str, replacement: str, flips: tuple[str, ...] = ()
) -> SiteProof:
    """Prove ``code``'s one finding with a fix that rewrites the site to ``replacement``."""
    result, finding = checked(tmp_path, code)
    fix = Fix("minimal", finding.span, replacement, flips or finding.missing)
    return prove(result, replace(finding, fix=fix))


def test_k3_like_minimal_fix_is_proven_with_the_whole_table(tmp_path: Path) -> None:
    proof = proven_with(tmp_path, K3_LIKE, K3_FIXED_EXPRESSION)
    data = proof_dict(proof)
    assert data["verdict"] == "proven"
    assert data["flips"] == ["deepep_v2", "pplx"]
    assert data["table"] == {
        "none": {"before": False, "after": False, "canonical": False},
        "deepep": {"before": True, "after": True, "canonical": True},
        "mooncake": {"before": True, "after": True, "canonical": True},
        "nixl": {"before": False, "after": False, "canonical": False},
        "mori": {"before": True, "after": True, "canonical": True},
        "ascend_fuseep": {"before": False, "after": False, "canonical": False},
        "flashinfer": {"before": False, "after": False, "canonical": False},
        "megamoe": {"before": True, "after": True, "canonical": False},
        "deepep_v2": {"before": False, "after": True, "canonical": True},
        "pplx": {"before": False, "after": True, "canonical": True},
        "flashinfer_megamoe": {"before": False, "after": False, "canonical": False},
    }
    assert data["reason"] == (
        "the fix flips exactly deepep_v2, pplx; after it the site agrees with "
        "is_deepep_class_backend() on 5 of 5 DeepEP-family backends"
    )


def test_a_parenthesised_replacement_is_found_inside_its_parentheses(tmp_path: Path) -> None:
    proof = proven_with(tmp_path, K3_LIKE, f"({K3_FIXED_EXPRESSION})")
    assert (proof.verdict, proof.flips) == ("proven", ("deepep_v2", "pplx"))


def test_the_table_of_an_enumerator_is_of_its_function_body(tmp_path: Path) -> None:
    code = (
        "def uses_a2a() -> bool:\n"
        "    b = get_moe_a2a_backend()\n"
        "    if b is None:\n"
        "        return False\n"
        "    return b.is_deepep() or b.is_mooncake()\n"
    )
    proof = proven_with(
        tmp_path,
        code,
        "b.is_deepep() or b.is_deepep_v2() or b.is_mooncake() or b.is_mori() or b.is_pplx()",
    )
    assert proof.verdict == "unproven"
    assert proof.reason == "outside the grammar: statement 'if b is None:' in uses_a2a() (line 10)"
    assert proof.table is None


def test_a_fix_that_flips_an_extra_member_is_refuted_with_its_rows(tmp_path: Path) -> None:
    replacement = K3_FIXED_EXPRESSION + "\n        or _a2a_backend.is_nixl()"
    proof = proven_with(tmp_path, K3_LIKE, replacement)
    data = proof_dict(proof)
    assert data["verdict"] == "refuted"
    assert data["flips"] == ["deepep_v2", "pplx", "nixl"]
    assert data["disagreements"] == [
        {
            "member": "nixl",
            "setting": "",
            "before": False,
            "after": True,
            "canonical": False,
            "why": "the fix flips a member it should not",
        }
    ]
    assert data["reason"] == "the fix flips a member it should not: nixl"


def test_a_fix_that_forgets_a_missing_member_is_refuted(tmp_path: Path) -> None:
    replacement = K3_FIXED_EXPRESSION.replace("\n        or _a2a_backend.is_pplx()", "")
    proof = proven_with(tmp_path, K3_LIKE, replacement)
    assert proof.verdict == "refuted"
    assert proof.reason == (
        "the fix does not flip a missing member: pplx; "
        "after the fix the site disagrees with is_deepep_class_backend(): pplx"
    )
    assert [(d.row.member, d.row.before, d.row.after) for d in proof.disagreements] == [
        ("pplx", False, False),
        ("pplx", False, False),
    ]


def test_a_fix_that_breaks_the_syntax_is_refuted(tmp_path: Path) -> None:
    proof = proven_with(tmp_path, K3_LIKE, "_a2a_backend.is_deepep() or or")
    assert (proof.verdict, proof.reason) == ("refuted", "the fixed file does not parse")


def test_a_negative_site_agrees_when_it_negates_the_helper(tmp_path: Path) -> None:
    code = (
        "def forward(x):\n"
        "    b = get_moe_a2a_backend()\n"
        "    if not (b.is_deepep() or b.is_mori()):\n"
        "        return x\n"
        "    return -x\n"
    )
    replacement = (
        "not (b.is_deepep() or b.is_deepep_v2() or b.is_mooncake() or b.is_mori() or b.is_pplx())"
    )
    data = proof_dict(proven_with(tmp_path, code, replacement))
    assert data["verdict"] == "proven"
    assert data["polarity"] == "negative"
    assert data["flips"] == ["deepep_v2", "mooncake", "pplx"]
    assert data["table"]["mooncake"] == {"before": True, "after": False, "canonical": True}
    assert data["table"]["nixl"] == {"before": True, "after": True, "canonical": False}


def test_a_string_membership_site_is_read_through_the_value_attribute(tmp_path: Path) -> None:
    code = (
        "def uses_a2a(server_args) -> bool:\n"
        '    return server_args.moe_a2a_backend in ("deepep", "mooncake", "mori")\n'
    )
    replacement = (
        'server_args.moe_a2a_backend in ("deepep", "deepep_v2", "mooncake", "mori", "pplx")'
    )
    data = proof_dict(proven_with(tmp_path, code, replacement))
    assert (data["code"], data["verdict"], data["flips"]) == (
        "DC003",
        "proven",
        ["deepep_v2", "pplx"],
    )


def test_a_fix_to_the_named_constant_is_proven_at_the_site_that_uses_it(tmp_path: Path) -> None:
    literal = 'frozenset({"deepep", "mooncake", "mori", "pplx"})'
    code = (
        f"_A2A_BACKENDS = {literal}\n"
        "\n"
        "\n"
        "def spans_ep(view) -> bool:\n"
        "    return view.moe_a2a_backend in _A2A_BACKENDS\n"
    )
    result, finding = checked(tmp_path, code)
    at_constant = Span(8, 16, 8, 16 + len(literal))  # the snippet starts on line 8
    fixed = 'frozenset({"deepep", "deepep_v2", "mooncake", "mori", "pplx"})'
    fix = Fix("minimal", at_constant, fixed, ("deepep_v2",))
    data = proof_dict(prove(result, replace(finding, fix=fix)))
    assert (data["verdict"], data["flips"]) == ("proven", ["deepep_v2"])


def test_a_narrowed_member_has_a_value_per_setting(tmp_path: Path) -> None:
    code = (
        "def uses_a2a() -> bool:\n"
        "    b = get_moe_a2a_backend()\n"
        "    return b.is_deepep() or b.is_mooncake() or b.is_mori_epv2()\n"
    )
    replacement = "b.is_deepep() or b.is_deepep_v2() or b.is_mooncake() or b.is_mori() or b.is_pplx() or b.is_mori_epv2()"
    data = proof_dict(proven_with(tmp_path, code, replacement))
    assert data["verdict"] == "proven"
    assert data["narrowings"] == ["envs.FIXTURE_MORI_EP_V2.get()"]
    assert data["table"]["mori"] == {
        "before": {
            "envs.FIXTURE_MORI_EP_V2.get()=False": False,
            "envs.FIXTURE_MORI_EP_V2.get()=True": True,
        },
        "after": True,
        "canonical": True,
    }
    assert data["flips"] == ["deepep_v2", "mori", "pplx"]
    assert data["reason"].endswith(
        "; evaluated under each setting of envs.FIXTURE_MORI_EP_V2.get()"
    )


def test_an_unrelated_operand_is_a_free_input_enumerated_both_ways(tmp_path: Path) -> None:
    code = (
        "class Block:\n"
        "    def __init__(self):\n"
        "        b = get_moe_a2a_backend()\n"
        "        self.uses_a2a = self._enabled or b.is_deepep() or b.is_mooncake()\n\n"
        "    def forward(self, x):\n"
        "        return x if self.uses_a2a else -x\n"
    )
    replacement = "self._enabled or b.is_deepep() or b.is_deepep_v2() or b.is_mooncake() or b.is_mori() or b.is_pplx()"
    data = proof_dict(proven_with(tmp_path, code, replacement))
    assert data["verdict"] == "proven"
    assert data["free_inputs"] == ["self._enabled"]
    assert data["table"]["nixl"] == {
        "before": {"self._enabled=False": False, "self._enabled=True": True},
        "after": {"self._enabled=False": False, "self._enabled=True": True},
        "canonical": False,
    }
    assert data["table"]["deepep"] == {"before": True, "after": True, "canonical": True}
    assert data["reason"].endswith("; free inputs enumerated exhaustively: self._enabled")


def test_a_declared_exemption_may_still_disagree_after_the_fix(tmp_path: Path) -> None:
    code = K3_LIKE.replace(
        "    return (\n",
        "    # driftcheck: allow-missing[pplx] -- not validated on K3\n    return (\n",
    )
    replacement = K3_FIXED_EXPRESSION.replace("\n        or _a2a_backend.is_pplx()", "")
    data = proof_dict(proven_with(tmp_path, code, replacement))
    assert (data["verdict"], data["missing"], data["exempt"]) == ("proven", ["deepep_v2"], ["pplx"])
    assert data["table"]["pplx"] == {"before": False, "after": False, "canonical": True}
    assert data["reason"] == (
        "the fix flips exactly deepep_v2; after it the site agrees with "
        "is_deepep_class_backend() on 4 of 5 DeepEP-family backends (pplx declared exempt)"
    )


def test_a_helper_style_fix_is_proven_by_interpreting_the_helper(tmp_path: Path) -> None:
    replacement = "is_deepep_class_backend() or _a2a_backend.is_megamoe()"
    proof = proven_with(tmp_path, K3_LIKE, replacement)
    assert (proof.verdict, proof.flips) == ("proven", ("deepep_v2", "pplx"))


def test_a_finding_without_a_fix_is_unproven_and_keeps_its_table(tmp_path: Path) -> None:
    result, finding = checked(tmp_path, K3_LIKE)
    proof = prove(result, replace(finding, fix=None, fix_refusal="the style is off for this site"))
    assert (proof.verdict, proof.reason) == (
        "unproven",
        "no fix to prove: the style is off for this site",
    )
    assert proof.flips == ()
    assert proof_dict(proof)["table"]["deepep_v2"] == {
        "before": False,
        "after": False,
        "canonical": True,
    }


def test_a_call_to_a_function_outside_the_tree_is_unproven_naming_it(tmp_path: Path) -> None:
    code = (
        "def uses_a2a() -> bool:\n"
        "    b = get_moe_a2a_backend()\n"
        "    ready = imported_elsewhere()\n"
        "    return b.is_deepep() or b.is_mooncake()\n"
    )
    proof = proven_with(
        tmp_path,
        code,
        "b.is_deepep() or b.is_deepep_v2() or b.is_mooncake() or b.is_mori() or b.is_pplx()",
    )
    assert (proof.verdict, proof.reason) == (
        "unproven",
        "outside the grammar: call to imported_elsewhere() whose definition is not in the "
        "linted tree (line 10)",
    )


def test_the_text_table_marks_flipped_rows(tmp_path: Path) -> None:
    proof = proven_with(tmp_path, K3_LIKE, K3_FIXED_EXPRESSION)
    assert render_site(proof).splitlines() == [
        "sglang/srt/models/example.py:11 uses_ep_a2a (DC001): proven",
        "  backend             before  after  canonical",
        "  none                no      no     no",
        "  deepep              yes     yes    yes",
        "  mooncake            yes     yes    yes",
        "  nixl                no      no     no",
        "  mori                yes     yes    yes",
        "  ascend_fuseep       no      no     no",
        "  flashinfer          no      no     no",
        "  megamoe             yes     yes    no",
        "  deepep_v2           no      yes    yes        flipped",
        "  pplx                no      yes    yes        flipped",
        "  flashinfer_megamoe  no      no     no",
        "  the fix flips exactly deepep_v2, pplx; after it the site agrees with "
        "is_deepep_class_backend() on 5 of 5 DeepEP-family backends",
    ]


def test_find_site_returns_the_site_the_finding_was_reported_on(tmp_path: Path) -> None:
    result, finding = checked(tmp_path, K3_LIKE)
    site = find_site(result, finding)
    assert site is not None and site.enumerator == "uses_ep_a2a"
