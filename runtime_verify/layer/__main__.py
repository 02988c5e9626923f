"""``python -m driftcheck.runtime_verify.layer``: K3's real before/after decision, demonstrated.

Before the fix K3's ``_uses_ep_a2a()`` is True for deepep and False for deepep_v2; after it,
True for both. Also runs under ``torchrun`` (one process per rank; rank 0 writes the report).
"""

from __future__ import annotations

import argparse
import json
import sys

from .api import confirm_plans
from .deep_ep_module import DeepEPUnavailable
from .job import DISPATCHERS
from .launch import torchrun_placement
from .markdown import report_markdown
from .shapes import SHAPES

K3_PLANS = {
    "before": {"deepep": True, "deepep_v2": False},
    "after": {"deepep": True, "deepep_v2": True},
}


def main(argv: list[str] | None = None) -> int:
    """Run the demonstration; exit 0 when the verdict is "confirmed", 1 when it is not, 2 when
    the run cannot start (``--dispatcher deep_ep`` without DeepEP or without a GPU per rank)."""
    parser = argparse.ArgumentParser(prog="python -m driftcheck.runtime_verify.layer")
    parser.add_argument("--shape", default="tiny", choices=sorted(SHAPES))
    parser.add_argument("--world-size", type=int, default=None, help="default 2, or torchrun's")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runner", default="torch", choices=("torch", "deep_gemm"))
    parser.add_argument("--dispatcher", default="model", choices=DISPATCHERS)
    parser.add_argument("--report", help="write the JSON report here")
    parser.add_argument("--markdown", help="write the Markdown report here")
    args = parser.parse_args(argv)

    placement = torchrun_placement()
    world_size = args.world_size or (placement.world_size if placement else 2)
    try:
        report = confirm_plans(
            K3_PLANS,
            shape=args.shape,
            world_size=world_size,
            device=args.device,
            seed=args.seed,
            runner=args.runner,
            dispatcher=args.dispatcher,
            progress=lambda text: print(text, file=sys.stderr, flush=True),
        )
    except (DeepEPUnavailable, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if placement is None or placement.rank == 0:
        if args.report:
            with open(args.report, "w") as out:
                json.dump(report, out, indent=2)
        if args.markdown:
            with open(args.markdown, "w") as out:
                out.write(report_markdown(report))
        print(report_markdown(report))
    return 0 if report["verdict"] == "confirmed" else 1


if __name__ == "__main__":
    sys.exit(main())
