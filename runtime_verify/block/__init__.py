"""The layer run: the linted tree's own MoE block, executed under the harness's substitutes.

:mod:`.plan` picks the units (sites whose value reaches a role operation of the pack),
:mod:`.run` launches each unit's :class:`~.job.BlockJob` over the ranks, :mod:`.rank` runs every
arm and phase on a rank, :mod:`.execute` builds the block from the tree inside a
:mod:`.sandbox` (with :mod:`.substitutes` and :mod:`.standins`, traced by :mod:`.trace`), and
:mod:`.verdict` judges by A/B equality; :mod:`.report` renders it. Importing this package needs
no torch.
"""
