"""A tree no pack recognises (``pack = "none"``): the tree's own helper is its family, a chain
that calls that helper and adds members is a capability list (no copy of anything), and an
enum held by an attribute is found through the names compared with its members."""

from __future__ import annotations

from pathlib import Path

import pytest

from driftcheck.engine import check

PAYMENT = '''"""How a customer pays, and the till's view of it."""

from enum import Enum


class Method(Enum):
    CARD = "card"
    CASH = "cash"
    WALLET = "wallet"
    CRYPTO = "crypto"
    VOUCHER = "voucher"


class Till:
    def __init__(self, method: Method) -> None:
        self._method = method

    def is_card(self) -> bool:
        return self._method == Method.CARD

    def is_cash(self) -> bool:
        return self._method == Method.CASH

    def is_wallet(self) -> bool:
        return self._method == Method.WALLET

    def is_crypto(self) -> bool:
        return self._method == Method.CRYPTO

    def is_voucher(self) -> bool:
        return self._method == Method.VOUCHER

    def is_electronic(self) -> bool:
        return self._method in (Method.CARD, Method.WALLET, Method.CRYPTO)
'''
# two capability lists: the helper's set plus cash (what prints a receipt, what is refunded)
CAPABILITY = """from shop.payment import Till


def {name}(till: Till) -> bool:
    return till.is_electronic() or till.is_cash()


def {other}(till: Till) -> bool:
    return till.is_electronic()
"""
# a hand-written copy of the helper's family that has not kept up with crypto
FEES = """from shop.payment import Till


def charges_fee(till: Till) -> bool:
    return till.is_card() or till.is_wallet()
"""
FOUND = (
    "no pack recognises this tree: inferred the universe Method (shop/payment.py) and found "
    "its family {card, wallet, crypto} in its helper Till.is_electronic (shop/payment.py:33)"
)
FEES_MESSAGE = (
    "charges_fee enumerates 2 of 3 is_electronic members; missing crypto (held back: no "
    "same-role site lists it) (canonical: is_electronic)"
)


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """An enum, the class holding it with a helper for three members, two capability lists
    calling the helper in two files, and one drifted hand copy of the helper's family."""
    return write(
        tmp_path,
        {
            "shop/__init__.py": "",
            "shop/tills/__init__.py": "",
            "shop/payment.py": PAYMENT,
            "shop/tills/receipts.py": CAPABILITY.format(name="prints_receipt", other="online"),
            "shop/tills/refunds.py": CAPABILITY.format(name="refundable", other="settles"),
            "shop/tills/fees.py": FEES,
        },
    )


def test_the_trees_own_helper_is_the_family_and_its_drifted_copy_the_one_finding(
    shop: Path,
) -> None:
    result = check([shop], use_cache=False, select=["ALL"])
    assert result.notes == [FOUND]
    assert [(f.path, f.span.line, f.code, f.message) for f in result.findings] == [
        ("shop/tills/fees.py", 5, "DC001", FEES_MESSAGE)
    ]


def test_capability_lists_calling_the_helper_are_no_copies_and_are_not_reported(
    shop: Path,
) -> None:
    """Negative control: ``is_electronic() or is_cash()`` in two files once made
    {card, cash, wallet, crypto} the inferred family, reported the helper's own body and the
    fee copy's missing cash; neither capability list nor the helper is reported now."""
    result = check([shop], use_cache=False, select=["ALL"])
    [universe] = [u for u in result.universes.values() if u.families]
    assert [(f.name, f.members, f.inferred) for f in universe.families] == [
        ("is_electronic", ("card", "wallet", "crypto"), False)
    ]
    reported = {f.path for f in result.findings}
    assert not reported & {"shop/payment.py", "shop/tills/receipts.py", "shop/tills/refunds.py"}


DEVICES = """from enum import Enum


class Device(Enum):
    NONE = "none"
    GPU = "gpu"
    NPU = "npu"
    XPU = "xpu"
"""
ALL_THREE = """from fleet.devices import Device


def {name}(state) -> bool:
    return state.device_type in (Device.GPU, Device.NPU, Device.XPU)
"""
TWO = """from fleet.devices import Device


def barrier(state) -> bool:
    return state.device_type in (Device.GPU, Device.NPU)
"""


def test_an_enum_held_by_an_attribute_is_found_through_the_names_compared_with_it(
    tmp_path: Path,
) -> None:
    """No class holds the enum with predicates: ``state.device_type in (Device.A, ...)`` in
    two files or more makes ``device_type`` a name holding it, so its copies are read."""
    tree = write(
        tmp_path,
        {
            "fleet/__init__.py": "",
            "fleet/devices.py": DEVICES,
            "fleet/launch.py": ALL_THREE.format(name="distributed"),
            "fleet/sync.py": ALL_THREE.format(name="syncs"),
            "fleet/barrier.py": TWO,
        },
    )
    result = check([tree], use_cache=False)
    assert [(f.path, f.code, f.missing) for f in result.findings] == [
        ("fleet/barrier.py", "DC003", ("xpu",))
    ]


@pytest.mark.corpus
def test_vllm_without_its_pack_reports_what_the_pack_reports(tmp_path: Path) -> None:
    """vLLM 0.33.0 under ``pack = "none"``: Platform.is_cuda_alike is found as the platform
    family (no {CUDA, ROCM, XPU} family read from capability lists), and the default
    selection reports the pack run's one error (qwen4_exp's hand-written complement), with the
    files holding only single checks deferred as in the pack run."""
    from driftcheck.corpus import fetch_release

    tree = fetch_release("vllm==0.33.0")
    config = tmp_path / "driftcheck.toml"
    config.write_text('[tool.driftcheck]\npack = "none"\n')
    result = check([tree / "vllm"], cwd=tree, config_path=config, use_cache=False)
    assert [(f.code, f.path, f.span.line) for f in result.findings] == [
        ("DC021", "vllm/models/qwen4_exp/__init__.py", 30)
    ]
    platform = result.universes["PlatformEnum"]
    assert [(f.qualified, f.members) for f in platform.families] == [
        ("vllm.platforms.interface:Platform.is_cuda_alike", ("CUDA", "ROCM"))
    ]
    assert len(result.deferred) > 200
