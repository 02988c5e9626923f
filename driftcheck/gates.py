"""Per-model gates: members that only some architectures may select (live vs latent drift).

SGLang rejects ``--moe-a2a-backend deepep_v2`` for architectures missing from its registry
(``_DEEPEP_V2_MODELS`` plus ``register_deepep_v2_model(...)`` calls). A model file whose
architectures (its ``EntryClass``) are all unregistered cannot reach that member today, so a
drift on it is *latent*: a warning naming the registration that would make it live.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .config import Config, Gate
from .model import Universe
from .project import module_name_of, resolve_module
from .scan import FileScan


def registry_keys(root: Path, gate: Gate) -> set[str] | None:
    """String keys of the registry table named by ``gate`` (None when it cannot be found)."""
    module, _, name = gate.registry.partition(":")
    path = resolve_module(root, module)
    if path is None:
        return None
    try:
        tree = ast.parse(path.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return None
    for stmt in tree.body:
        target = value = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        if isinstance(target, ast.Name) and target.id == name and isinstance(value, ast.Dict):
            return {
                k.value
                for k in value.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)
            }
    return None


def _live_paths(root: Path, scans: dict[str, FileScan], registered: set[str]) -> set[str]:
    """Model files serving a registered architecture, plus the model modules they import."""
    by_module = {
        module_name_of(root, root / path): path
        for path, scan in scans.items()
        if scan.entry_classes
    }
    live = {path for path, scan in scans.items() if set(scan.entry_classes) & registered}
    frontier = list(live)
    while frontier:
        scan = scans[frontier.pop()]
        for module in scan.imports:
            target = by_module.get(module)
            if target is not None and target not in live:
                live.add(target)
                frontier.append(target)
    return live


def latent_members(
    root: Path, config: Config, universe: Universe, scans: dict[str, FileScan]
) -> dict[str, dict[str, str]]:
    """``{path: {member: why it is latent}}`` for model files no registered architecture uses.

    A model file is live for a gated member when one of its ``EntryClass`` architectures is
    registered, or when a live model file imports it (Qwen3-MoE reuses Qwen2-MoE's block).
    """
    result: dict[str, dict[str, str]] = {}
    for gate in config.gates:
        if gate.member not in universe.values:
            continue
        keys = registry_keys(root, gate)
        if keys is None:
            continue
        registered = set(keys)
        for scan in scans.values():
            registered.update(scan.registrations)
        live = _live_paths(root, scans, registered)
        for path, scan in scans.items():
            if not scan.sites or not scan.entry_classes or path in live:
                continue
            archs = " or ".join(scan.entry_classes)
            result.setdefault(path, {})[gate.member] = (
                f"latent (becomes live when {archs} is registered via {gate.register_call})"
            )
    return result
