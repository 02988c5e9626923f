"""The environment every rank runs with: NVLink multicast off, and DeepEP's intranode settings.

NVLink multicast (NVLS) is kept off in NCCL, PyTorch's symmetric memory and NVSHMEM in every
rank of every run, whatever the caller's environment says: on the shared H200 hosts a program
that uses multicast can put the host's GPUs out of service. The values are forced, not
defaulted. With ``--dispatcher deep_ep`` each rank also gets DeepEP's settings for one host
over NVLink, as defaults the caller may override:

- ``EP_DISABLE_GIN=1``: the elastic buffer's NCCL device communicator is created without GPU-
  initiated networking (``csrc/kernels/backend/nccl.cu`` otherwise asserts a GIN transport,
  which a host without RDMA NICs lacks); every peer is reached over NVLink.
- ``EP_REUSE_NCCL_COMM=0``: the elastic buffer creates its own NCCL communicator instead of
  borrowing the process group's (SGLang's ``deepep_v2`` dispatcher does the same, since reuse
  needs a device-bound group).
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

MULTICAST_OFF: dict[str, str] = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
DEEP_EP_DEFAULTS: dict[str, str] = {
    "EP_DISABLE_GIN": "1",
    "EP_REUSE_NCCL_COMM": "0",
}


def rank_environment(
    dispatcher: str, environ: MutableMapping[str, str] | None = None
) -> dict[str, str]:
    """The variables a rank of a ``dispatcher`` run sets, given the environment it starts in."""
    current = os.environ if environ is None else environ
    values = dict(MULTICAST_OFF)
    if dispatcher == "deep_ep":
        for name, default in DEEP_EP_DEFAULTS.items():
            values[name] = current.get(name, default)
    return values


def apply_rank_environment(
    dispatcher: str, environ: MutableMapping[str, str] | None = None
) -> dict[str, str]:
    """Set :func:`rank_environment` in ``environ`` (``os.environ``) and return what was set.

    Called first thing in every rank, before the process group or any DeepEP buffer exists,
    so NCCL, NVSHMEM and DeepEP read these values when they initialise.
    """
    target = os.environ if environ is None else environ
    values = rank_environment(dispatcher, target)
    target.update(values)
    return values
