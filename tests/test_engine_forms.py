"""What the engine finds, form by form, on the fixture universe (family: deepep, deepep_v2,
mooncake, mori, pplx)."""

from __future__ import annotations

from pathlib import Path

from rule_harness import run_example


def findings(tmp_path: Path, code: str, select: tuple[str, ...] | None = None) -> list[tuple]:
    result = run_example(tmp_path, code, select=select)
    assert not result.problems, result.problems
    return [(f.code, f.span.line - 7, f.missing, f.extra) for f in result.findings]


def test_or_chain_on_getter_calls_in_assignment(tmp_path: Path) -> None:
    code = (
        "class Block:\n"
        "    def __init__(self):\n"
        "        self._a2a = get_moe_a2a_backend().is_deepep() or get_moe_a2a_backend().is_mori()\n\n"
        "    def forward(self, x):\n"
        "        return x if self._a2a else -x\n"
    )
    assert findings(tmp_path, code) == [("DC001", 3, ("deepep_v2", "mooncake", "pplx"), ())]


def test_or_chain_on_local_alias_in_return_reports_extras_in_source_order(tmp_path: Path) -> None:
    code = (
        "def uses_ep_a2a() -> bool:\n"
        "    _a2a_backend = get_moe_a2a_backend()\n"
        "    return (\n"
        "        _a2a_backend.is_megamoe()\n"
        "        or _a2a_backend.is_flashinfer_megamoe()\n"
        "        or _a2a_backend.is_deepep()\n"
        "        or _a2a_backend.is_mooncake()\n"
        "        or _a2a_backend.is_ascend_fuseep()\n"
        "        or _a2a_backend.is_mori()\n"
        "    )\n"
    )
    assert findings(tmp_path, code) == [
        ("DC001", 4, ("deepep_v2", "pplx"), ("megamoe", "flashinfer_megamoe", "ascend_fuseep"))
    ]


def test_self_attribute_alias_assigned_in_another_method(tmp_path: Path) -> None:
    code = (
        "class Block:\n"
        "    def __init__(self):\n"
        "        self._backend = get_moe_a2a_backend()\n"
        "\n"
        "    def uses_a2a(self):\n"
        "        return self._backend.is_deepep() or self._backend.is_mooncake()\n"
    )
    assert findings(tmp_path, code) == [("DC001", 6, ("deepep_v2", "mori", "pplx"), ())]


def test_parameter_annotated_with_the_enum(tmp_path: Path) -> None:
    code = (
        "def uses_a2a(backend: MoeA2ABackend) -> bool:\n"
        "    return backend.is_deepep() or backend.is_mooncake()\n"
    )
    assert findings(tmp_path, code) == [("DC001", 2, ("deepep_v2", "mori", "pplx"), ())]


def test_parameter_named_like_the_backend(tmp_path: Path) -> None:
    code = (
        "def uses_a2a(a2a_backend) -> bool:\n"
        "    return a2a_backend.is_deepep() or a2a_backend.is_mooncake()\n"
    )
    assert findings(tmp_path, code) == [("DC001", 2, ("deepep_v2", "mori", "pplx"), ())]


def test_chain_in_if_test_keyword_and_ternary(tmp_path: Path) -> None:
    code = (
        "def build(b=get_moe_a2a_backend()):\n"
        "    if b.is_deepep() or b.is_mori():\n"
        "        pass\n"
        "    make(group='replicated' if b.is_deepep() or b.is_mooncake() else 'tp')\n"
        "    make(enabled=b.is_mooncake() or b.is_mori())\n"
    )
    assert [(code_, line) for code_, line, _, _ in findings(tmp_path, code)] == [
        ("DC001", 2),
        ("DC001", 4),
        ("DC001", 5),
    ]


def test_chain_nested_inside_and_with_other_conditions(tmp_path: Path) -> None:
    code = (
        "def sp_moe(self) -> bool:\n"
        "    b = get_moe_a2a_backend()\n"
        "    return (b.is_deepep() or b.is_mooncake() or b.is_mori()) and self.tp > 1\n"
    )
    assert findings(tmp_path, code) == [("DC001", 3, ("deepep_v2", "pplx"), ())]


def test_negated_or_chain_members_are_the_excluded_backends(tmp_path: Path) -> None:
    code = (
        "def forward(x):\n"
        "    b = get_moe_a2a_backend()\n"
        "    if not (b.is_deepep() or b.is_mooncake() or b.is_mori()):\n"
        "        return x\n"
        "    return -x\n"
    )
    assert findings(tmp_path, code) == [("DC001", 3, ("deepep_v2", "pplx"), ())]


def test_and_of_negations_is_de_morgan(tmp_path: Path) -> None:
    code = (
        "def forward(x):\n"
        "    b = get_moe_a2a_backend()\n"
        "    if not b.is_deepep() and not b.is_mooncake() and not b.is_ascend_fuseep():\n"
        "        return x\n"
        "    return -x\n"
    )
    assert findings(tmp_path, code) == [
        ("DC001", 3, ("deepep_v2", "mori", "pplx"), ("ascend_fuseep",))
    ]


def test_negated_helper_mixed_with_an_extra_is_fine(tmp_path: Path) -> None:
    code = (
        "def forward(x):\n"
        "    if not is_deepep_class_backend() and not get_moe_a2a_backend().is_ascend_fuseep():\n"
        "        return x\n"
        "    return -x\n"
    )
    assert findings(tmp_path, code) == []


def test_string_tuple_membership_on_server_args(tmp_path: Path) -> None:
    code = (
        "def uses(server_args):\n    return server_args.moe_a2a_backend in ('deepep', 'mooncake')\n"
    )
    assert findings(tmp_path, code) == [("DC003", 2, ("deepep_v2", "mori", "pplx"), ())]


def test_string_not_in_list_and_set(tmp_path: Path) -> None:
    code = (
        "def plain(cfg):\n"
        "    return cfg.moe_a2a_backend not in ['deepep', 'mori']\n"
        "\n"
        "\n"
        "def plain2(cfg):\n"
        "    return cfg.moe_a2a_backend in {'deepep', 'mori', 'mooncake'}\n"
    )
    assert findings(tmp_path, code) == [
        ("DC003", 2, ("deepep_v2", "mooncake", "pplx"), ()),
        ("DC003", 6, ("deepep_v2", "pplx"), ()),
    ]


def test_equality_chains(tmp_path: Path) -> None:
    code = (
        "def uses(cfg):\n"
        "    return cfg.moe_a2a_backend == 'deepep' or cfg.moe_a2a_backend == 'mooncake'\n"
        "\n"
        "\n"
        "def other(cfg):\n"
        "    return cfg.moe_a2a_backend != 'deepep' and cfg.moe_a2a_backend != 'mori'\n"
    )
    assert findings(tmp_path, code) == [
        ("DC003", 2, ("deepep_v2", "mori", "pplx"), ()),
        ("DC003", 6, ("deepep_v2", "mooncake", "pplx"), ()),
    ]


def test_module_constant_frozenset(tmp_path: Path) -> None:
    code = (
        "_SPANNING = frozenset({'deepep', 'mooncake', 'mori', 'megamoe'})\n"
        "\n"
        "\n"
        "def spans(view):\n"
        "    return view.moe_a2a_backend in _SPANNING\n"
    )
    assert findings(tmp_path, code) == [("DC003", 5, ("deepep_v2", "pplx"), ("megamoe",))]


def test_local_tuple_assigned_just_before(tmp_path: Path) -> None:
    code = (
        "def spans(view):\n"
        "    supported = ('deepep', 'mori')\n"
        "    return view.moe_a2a_backend in supported\n"
    )
    assert findings(tmp_path, code) == [("DC003", 3, ("deepep_v2", "mooncake", "pplx"), ())]


def test_enum_member_forms(tmp_path: Path) -> None:
    code = (
        "def uses() -> bool:\n"
        "    b = get_moe_a2a_backend()\n"
        "    return b in (MoeA2ABackend.DEEPEP, MoeA2ABackend.MOONCAKE)\n"
        "\n"
        "\n"
        "def uses2() -> bool:\n"
        "    b = get_moe_a2a_backend()\n"
        "    return b == MoeA2ABackend.MORI or b == MoeA2ABackend.DEEPEP\n"
    )
    assert findings(tmp_path, code) == [
        ("DC003", 3, ("deepep_v2", "mori", "pplx"), ()),
        ("DC003", 8, ("deepep_v2", "mooncake", "pplx"), ()),
    ]


def test_other_setting_sharing_value_names_is_not_an_enumeration(tmp_path: Path) -> None:
    code = "def uses(args):\n    return args.disaggregation_transfer_backend in ('mooncake', 'nixl', 'mori')\n"
    assert findings(tmp_path, code) == []


def test_redundant_member_next_to_the_helper(tmp_path: Path) -> None:
    code = (
        "def uses() -> bool:\n"
        "    # only add DeepEP v2 here\n"
        "    return is_deepep_class_backend() or get_moe_a2a_backend().is_deepep_v2()\n"
    )
    assert findings(tmp_path, code) == [("DC005", 3, (), ("deepep_v2",))]


def test_enumeration_split_across_a_helper_and_its_callers_is_reported_once(tmp_path: Path) -> None:
    code = (
        "def _uses_ep_a2a() -> bool:\n"
        "    b = get_moe_a2a_backend()\n"
        "    return b.is_megamoe() or b.is_deepep() or b.is_mooncake() or b.is_mori()\n"
        "\n"
        "\n"
        "def _shards_moe_rows(tp) -> bool:\n"
        "    return _uses_ep_a2a() and tp > 1\n"
        "\n"
        "\n"
        "class Layer:\n"
        "    def __init__(self):\n"
        "        self._ep_a2a = _uses_ep_a2a()\n"
    )
    assert findings(tmp_path, code) == [("DC001", 3, ("deepep_v2", "pplx"), ("megamoe",))]


def test_single_backend_checks_and_helper_calls_are_not_reported(tmp_path: Path) -> None:
    code = (
        "def a():\n"
        "    if get_moe_a2a_backend().is_deepep():\n"
        "        return 1\n"
        "    return is_deepep_class_backend() or get_moe_a2a_backend().is_megamoe()\n"
    )
    assert findings(tmp_path, code) == []


def test_unrelated_family_overlapping_in_one_member_is_not_reported(tmp_path: Path) -> None:
    code = (
        "def mega() -> bool:\n"
        "    b = get_moe_a2a_backend()\n"
        "    return b.is_megamoe() or b.is_flashinfer_megamoe() or b.is_deepep()\n"
    )
    assert findings(tmp_path, code) == []


def test_narrowing_method_is_not_counted_as_its_member(tmp_path: Path) -> None:
    code = (
        "def uses() -> bool:\n"
        "    b = get_moe_a2a_backend()\n"
        "    return b.is_deepep() or b.is_mori_epv2()\n"
    )
    assert findings(tmp_path, code) == []


def test_validation_allowlist_is_its_own_code_and_off_by_default(tmp_path: Path) -> None:
    code = (
        "def validate(cfg):\n"
        "    if cfg.moe_a2a_backend not in ('deepep', 'mooncake', 'mori'):\n"
        "        raise ValueError('unsupported backend')\n"
    )
    assert findings(tmp_path, code) == []
    assert findings(tmp_path, code, select=("DC010",)) == [("DC010", 2, ("deepep_v2", "pplx"), ())]


def test_assert_is_an_allowlist(tmp_path: Path) -> None:
    code = (
        "def run():\n"
        "    b = get_moe_a2a_backend()\n"
        "    assert b.is_deepep() or b.is_mori(), 'CP requires deepep or mori'\n"
    )
    assert findings(tmp_path, code) == []
    assert [c for c, *_ in findings(tmp_path, code, select=("DC010",))] == ["DC010"]


def test_dispatch_arm_is_its_own_code_and_off_by_default(tmp_path: Path) -> None:
    code = (
        "def make(b: MoeA2ABackend):\n"
        "    if b.is_deepep() or b.is_mooncake() or b.is_mori() or b.is_pplx():\n"
        "        return 'deepep-like'\n"
        "    elif b.is_deepep_v2():\n"
        "        return 'v2'\n"
        "    return 'standard'\n"
    )
    assert findings(tmp_path, code) == []
    assert findings(tmp_path, code, select=("DC011",)) == [("DC011", 2, ("deepep_v2",), ())]


def test_kernel_capability_list_is_dispatch(tmp_path: Path) -> None:
    code = (
        "def use_bf16(runner_backend, b: MoeA2ABackend):\n"
        "    return runner_backend.is_deep_gemm() and (b.is_deepep() or b.is_pplx())\n"
    )
    assert findings(tmp_path, code) == []
    assert [c for c, *_ in findings(tmp_path, code, select=("DC011",))] == ["DC011"]
