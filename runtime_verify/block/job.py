"""What one block run does: plain data, sent to every rank (checked before any rank starts)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..layer.shapes import get_shape
from .pack import Configuration, VerifyPack

RUNNERS = ("torch", "deep_gemm")
DISPATCHERS = ("model", "deep_ep")


@dataclass(frozen=True)
class Arms:
    """The members a run compares: ``reference`` (the site includes it), ``test`` (the fix
    adds it), ``control`` (a second member the site includes, if any) and ``others`` (every
    other member the site includes: the fix must leave each of them as it was)."""

    reference: str
    test: str
    control: str | None = None
    others: tuple[str, ...] = ()

    def all(self) -> tuple[str, ...]:
        """Every arm, reference first."""
        return (*self.compared(), *self.others)

    def compared(self) -> tuple[str, ...]:
        """The reference, the test arm and the control (if any)."""
        return tuple(a for a in (self.reference, self.test, self.control) if a is not None)

    def included(self) -> tuple[str, ...]:
        """Every arm the site includes before the fix: the reference, the control, the others."""
        return tuple(a for a in self.all() if a != self.test)


@dataclass(frozen=True)
class LayerSettings:
    """How every unit's block run is made (``arms``: None lets each unit choose its own;
    ``configuration``: None tries each of the pack's in turn)."""

    arms: tuple[str, str] | None = None
    shape: str = "tiny"
    world_size: int = 2
    device: str = "cpu"
    seed: int = 0
    runner: str = "torch"
    dispatcher: str = "model"
    configuration: str | None = None
    deep_ep_module: str = "deep_ep"


@dataclass(frozen=True)
class BlockJob:
    """Run the tree's block ``block`` (a class of module ``module``, file ``path`` under
    ``root``) with each phase's text of that file (``texts``: ``before`` as written, ``after``
    as the fix writes it), for every arm, in each configuration in turn, ``repeats`` times
    per arm and phase (two on CUDA: the noise floor), on ``world_size`` ranks."""

    root: str
    path: str
    module: str
    block: str
    texts: dict[str, str]
    arms: Arms
    enum: str  # "module:qualname" of the tree's enum (its members are the arms)
    family: frozenset[str]
    pack: VerifyPack
    configurations: tuple[Configuration, ...]
    settings: LayerSettings = field(default_factory=LayerSettings)
    sites: tuple[dict[str, object], ...] = field(default=())

    @property
    def repeats(self) -> int:
        """Runs per arm and phase: two on CUDA (the noise floor), one on the CPU."""
        return 2 if self.settings.device == "cuda" else 1

    def validate(self) -> None:
        """Raise ``ValueError`` naming what is wrong with the job."""
        if self.settings.runner not in RUNNERS:
            raise ValueError(
                f"runner must be one of {', '.join(RUNNERS)}, got {self.settings.runner!r}"
            )
        if self.settings.dispatcher not in DISPATCHERS:
            raise ValueError(f"dispatcher must be one of {', '.join(DISPATCHERS)}")
        if self.settings.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {self.settings.device!r}")
        if self.settings.world_size < 2:
            raise ValueError("world_size must be at least 2 to observe a cross-rank sum")
        if set(self.texts) != {"before", "after"}:
            raise ValueError("texts must give the file before and after the fix")
        if not self.configurations:
            raise ValueError("no configuration to run (the pack's [[verify.configurations]])")
        if self.arms.reference == self.arms.test:
            raise ValueError("the reference and test arms must differ")
        get_shape(self.settings.shape).check(self.settings.world_size)
        if self.settings.dispatcher == "deep_ep":
            self._validate_deep_ep()

    def _validate_deep_ep(self) -> None:
        """DeepEP moves bf16 tokens, on CUDA (a stand-in module with DeepEP's API, named by
        ``deep_ep_module``, may run on the CPU: the tests' double)."""
        if self.settings.device != "cuda" and self.settings.deep_ep_module == "deep_ep":
            raise ValueError("--dispatcher deep_ep runs DeepEP's CUDA kernels: use --device cuda")
        dtype = get_shape(self.settings.shape).dtype
        if dtype != "bfloat16":
            raise ValueError(
                f"--dispatcher deep_ep moves bfloat16 tokens; shape {self.settings.shape!r} is {dtype}"
            )
