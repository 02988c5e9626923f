"""A K3-style MoE layer run in a reference and a test arm over torch.distributed.

Importing this package needs no torch; :func:`confirm_plans` imports it when it runs.
"""

from .api import confirm_plans
from .family import DEEPEP_FAMILY
from .markdown import report_markdown

__all__ = ["DEEPEP_FAMILY", "confirm_plans", "report_markdown"]
