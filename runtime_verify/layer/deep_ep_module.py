"""Find DeepEP for ``--dispatcher deep_ep``, and refuse clearly when it cannot run here.

DeepEP (``deepseek-ai/DeepEP``, branch ``main``, 2.x) is one package, ``deep_ep``, holding both
buffers: ``deep_ep.Buffer`` (``deep_ep/buffers/legacy.py``, the V1 API whose normal mode SGLang's
``deepep`` backend uses) and ``deep_ep.ElasticBuffer`` (``deep_ep/buffers/elastic.py``, DeepEP V2,
which SGLang's ``deepep_v2`` backend uses). It has no CPU path and no fallback here: when it
cannot be imported, or the host has fewer GPUs than ranks, the run stops with
:class:`DeepEPUnavailable` before any rank starts.
"""

from __future__ import annotations

import importlib
from types import ModuleType

DEFAULT_MODULE = "deep_ep"
REQUIRED = ("Buffer", "ElasticBuffer", "topk_idx_t")
BUILD_HINT = (
    "build it from deepseek-ai/DeepEP (main) with scripts/build_deepep.sh and put the target "
    "directory on PYTHONPATH (docs/gpu-deepep.md)"
)


class DeepEPUnavailable(RuntimeError):
    """``--dispatcher deep_ep`` cannot run here; the message says why and what to do."""


def load_deep_ep(name: str = DEFAULT_MODULE) -> ModuleType:
    """Import ``name`` and check it has both of DeepEP's buffers."""
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # ImportError, or a broken extension's OSError / assertion
        raise DeepEPUnavailable(
            f"--dispatcher deep_ep needs DeepEP's {name} module, and importing it failed "
            f"({type(exc).__name__}: {exc}); {BUILD_HINT}"
        ) from exc
    missing = [attribute for attribute in REQUIRED if not hasattr(module, attribute)]
    if missing:
        raise DeepEPUnavailable(
            f"{name} ({getattr(module, '__file__', '?')}) has no {', '.join(missing)}: the "
            f"legacy Buffer and the elastic buffer (DeepEP V2) are both on DeepEP's main "
            f"branch, version 2.x; {BUILD_HINT}"
        )
    return module


def check_gpus(ranks_on_host: int, gpus_visible: int) -> None:
    """DeepEP's intranode kernels run one rank per GPU: refuse fewer GPUs than ranks."""
    if gpus_visible < ranks_on_host:
        raise DeepEPUnavailable(
            f"--dispatcher deep_ep runs one rank per GPU over NCCL and NVLink: "
            f"{ranks_on_host} ranks on this host need {ranks_on_host} GPUs, "
            f"{gpus_visible} visible (two H200s: the nvidia-h200-x2 device kind)"
        )


def describe_deep_ep(module: ModuleType) -> dict[str, str]:
    """The report's ``environment.deep_ep`` entry."""
    return {
        "module": module.__name__,
        "version": str(getattr(module, "__version__", "?")),
        "file": str(getattr(module, "__file__", "?")),
    }


def preflight(name: str, device: str, ranks_on_host: int) -> None:
    """Refuse, naming every reason at once, a ``deep_ep`` run that cannot start here.

    Called before any rank starts (and by each ``torchrun`` rank before it joins the group):
    ``name`` must import with both buffers, and on CUDA the host needs a GPU per rank.
    """
    problems = []
    try:
        load_deep_ep(name)
    except DeepEPUnavailable as exc:
        problems.append(str(exc))
    if device == "cuda":
        import torch

        try:
            check_gpus(ranks_on_host, torch.cuda.device_count())
        except DeepEPUnavailable as exc:
            problems.append(str(exc))
    if problems:
        raise DeepEPUnavailable("; and ".join(problems))
