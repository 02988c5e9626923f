"""Policies that name nothing: ``[[tool.driftcheck.policies]]`` checked against the tree.

A policy whose ``allow-missing`` or ``allow-extra`` names a member of no universe of the run
(a misspelt ``ppxl``), whose ``path`` names no file under the project root, or whose
``symbol`` names no function or class in the files its path matches would be accepted and
never apply: each is a problem naming the configuration file and the policy's line (exit 2),
as a configuration error is. (A reason is required where the configuration is read:
:func:`driftcheck.config.config_from_table`.)

A glob path that matches none of the run's files is not judged: the run may cover only part
of the tree.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Iterable
from pathlib import Path

from .config import Config, SitePolicy
from .model import Problem

GLOB = re.compile(r"[*?\[]")
MODULE = "<module>"
DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+def|def|class)[ \t]+(\w+)", re.M)


def policy_problems(
    config: Config,
    root: Path,
    members: set[str],
    files: Iterable[str],
    buffers: dict[str, bytes] | None = None,
) -> list[Problem]:
    """The problems of ``config``'s policies: ``members`` is every member of the run's
    universes (empty: not judged), ``files`` the canonical paths of the files the run read
    (``buffers``: unsaved texts by canonical path, read instead of the files)."""
    known = sorted(set(files))
    problems = []
    for policy in config.policies:
        message = _unknown_members(policy, members) or _names_nothing(
            policy, root, known, buffers or {}
        )
        if message is not None:
            # the files were checked all the same: not counted as paths left unchecked
            where = config.source or "configuration"
            problems.append(Problem(where, policy.line, message, checked=True))
    return problems


def _unknown_members(policy: SitePolicy, members: set[str]) -> str | None:
    for key, listed in (
        ("allow-missing", policy.allow_missing),
        ("allow-extra", policy.allow_extra),
    ):
        unknown = sorted(m for m in listed if m not in members)
        if members and unknown:
            return (
                f"{policy.where} ({policy.path}) {key} names {', '.join(unknown)}, not a member "
                f"of the universe{_guess(unknown[0], members)}"
            )
    return None


def _guess(name: str, names: Iterable[str]) -> str:
    """`` (did you mean X?)`` for a close name, else ``: `` and the names (up to 12)."""
    listed = sorted(names)
    close = difflib.get_close_matches(name, listed, n=1)
    if close:
        return f" (did you mean {close[0]}?)"
    if not listed:
        return ""
    return f": {', '.join(listed[:12])}{', ...' if len(listed) > 12 else ''}"


def _names_nothing(
    policy: SitePolicy, root: Path, known: list[str], buffers: dict[str, bytes]
) -> str | None:
    literal = not GLOB.search(policy.path)
    if literal and policy.path not in known and not (root / policy.path).is_file():
        return f"{policy.where} path {policy.path} names no file under {root}"
    if policy.symbol is None or policy.symbol == MODULE:
        return None
    matched = [policy.path] if literal else [p for p in known if fnmatch.fnmatch(p, policy.path)]
    defined = {name for p in matched for name in DEFINITION.findall(_text(root, p, buffers))}
    if not matched or all(part in defined for part in policy.symbol.split(".")):
        return None
    guess = _guess(policy.symbol.rsplit(".", 1)[-1], defined) if defined else ""
    return (
        f"{policy.where} symbol {policy.symbol} names no function or class in {policy.path}{guess}"
    )


def _text(root: Path, path: str, buffers: dict[str, bytes]) -> str:
    data = buffers.get(path)
    if data is None:
        try:
            data = (root / path).read_bytes()
        except OSError:
            return ""
    return data.decode("utf-8", errors="replace")
