"""What one verification run does, checked before any process starts (no torch needed)."""

from __future__ import annotations

from dataclasses import dataclass

from .roles import ROLE_PLANS
from .shapes import get_shape

RUNNERS = ("torch", "deep_gemm")
# "model": the dispatcher models of .dispatchers; "deep_ep": DeepEP's real buffers (.deep_ep_dispatchers)
DISPATCHERS = ("model", "deep_ep")
DEEP_EP_ARMS = ("deepep", "deepep_v2")


@dataclass(frozen=True)
class Job:
    """The phases to run, each giving every arm's predicate value (whether the site counts the
    arm's backend as a family member), the site's role, and where and how to run them.

    ``dispatcher`` picks the family arms' dispatchers: the models (``"model"``) or DeepEP's
    real buffers (``"deep_ep"``, taken from the module ``deep_ep_module``)."""

    plans: dict[str, dict[str, bool]]
    arms: tuple[str, str]
    shape: str
    world_size: int
    device: str
    family: frozenset[str]
    seed: int
    role: str = "ep_a2a"
    runner: str = "torch"
    dispatcher: str = "model"
    deep_ep_module: str = "deep_ep"

    def validate(self) -> None:
        """Raise ``ValueError`` on a malformed job, naming what is wrong."""
        if len(self.arms) != 2 or self.arms[0] == self.arms[1]:
            raise ValueError(f"arms must be two different backends, got {self.arms!r}")
        if not self.plans:
            raise ValueError("plans must name at least one phase")
        for phase, flags in self.plans.items():
            missing = [arm for arm in self.arms if arm not in flags]
            if missing:
                raise ValueError(f"phase {phase!r} gives no predicate value for {missing}")
            wrong = [arm for arm in self.arms if not isinstance(flags[arm], bool)]
            if wrong:
                raise ValueError(f"phase {phase!r}: predicate values for {wrong} are not bool")
        if self.role not in ROLE_PLANS:
            raise ValueError(f"role must be one of {', '.join(ROLE_PLANS)}, got {self.role!r}")
        if self.runner not in RUNNERS:
            raise ValueError(f"runner must be one of {', '.join(RUNNERS)}, got {self.runner!r}")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {self.device!r}")
        if not isinstance(self.world_size, int) or self.world_size < 2:
            raise ValueError(f"world_size must be an int >= 2, got {self.world_size!r}")
        get_shape(self.shape).check(self.world_size)
        if self.dispatcher not in DISPATCHERS:
            raise ValueError(
                f"dispatcher must be one of {', '.join(DISPATCHERS)}, got {self.dispatcher!r}"
            )
        if self.dispatcher == "deep_ep":
            self._validate_deep_ep()

    def _validate_deep_ep(self) -> None:
        """DeepEP moves bf16 tokens, on CUDA, and has buffers for deepep and deepep_v2 only.

        A stand-in module named by ``deep_ep_module`` (the tests' double of DeepEP's API) may
        run on the CPU over gloo; the real ``deep_ep`` may not.
        """
        if self.device != "cuda" and self.deep_ep_module == "deep_ep":
            raise ValueError("--dispatcher deep_ep runs DeepEP's CUDA kernels: use --device cuda")
        if get_shape(self.shape).dtype != "bfloat16":
            raise ValueError(
                f"--dispatcher deep_ep moves bfloat16 tokens; shape {self.shape!r} is "
                f"{get_shape(self.shape).dtype} (use tiny-bf16 or k3)"
            )
        others = [arm for arm in self.arms if arm in self.family and arm not in DEEP_EP_ARMS]
        if others:
            raise ValueError(
                f"--dispatcher deep_ep has real buffers for deepep (legacy Buffer) and "
                f"deepep_v2 (ElasticBuffer) only, not {', '.join(others)}; "
                "use --dispatcher model for them"
            )
