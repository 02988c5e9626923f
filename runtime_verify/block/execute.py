"""One execution of the tree's block on this rank: build it from the tree, run its ``forward``.

Everything the block reaches is recorded: the tree's lines it ran (:mod:`.trace`), the
substitutes it called and the stand-ins whose answers it used (:mod:`.standins`).
"""

from __future__ import annotations

import inspect
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .config_class import class_defaults, config_imports
from .pack import VerifyPack
from .parameters import default_dtype, draw_own_parameters
from .sandbox import Sandbox, module_path
from .standins import CURRENT, Call, HandedWatch, Ledger, StandInModule, StandInUsed, Use
from .substitutes import CollectiveMismatch, RunContext, SubstituteModule, object_value, substitute
from .trace import LineTrace


class CannotBuild(Exception):
    """The harness cannot construct or call the block (a parameter it cannot supply)."""


class MissingField(AttributeError):
    """The block read a field the harness's model configuration does not have."""


class ModelConfig:
    """The model configuration a block reads: the pack's fields. Any other field is missing,
    as in a configuration that does not declare it: ``getattr(config, "n_group", 0)`` takes
    the tree's own default, ``hasattr`` is False, and a plain read raises
    :class:`MissingField` (the harness cannot provide the field: the run is inconclusive,
    naming it), never None."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.__dict__.update(fields)
        self.__dict__["_unset"] = set()

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        self.__dict__["_unset"].add(attr)
        raise MissingField(
            f"the harness's model configuration has no field {attr!r} ([verify.config] gives none)"
        )

    def get(self, key: str, default: Any = None) -> Any:
        """``dict.get`` for configurations read as mappings."""
        return self.__dict__.get(key, default)


@dataclass
class Execution:
    """What one execution gave on this rank."""

    output: torch.Tensor | None
    ledger: Ledger
    executed: list[dict[str, Any]]
    error: str | None = None
    stand_in: Use | None = None  # the stand-in whose use stopped the run
    seconds: float = 0.0
    config_unset: list[str] = field(default_factory=list)
    uses: tuple[Use, ...] = ()  # the stand-ins' uses, at tree-relative lines
    # the block's own failure (a collective over rows that differ across ranks): an outcome
    # to compare, unlike ``error`` (the harness could not run it)
    failure: str | None = None
    calls: tuple[Call, ...] = ()  # every call of a stand-in, with what was passed to it
    # the tree's own parameters, drawn from the seed (:mod:`.parameters`)
    parameters_drawn: list[dict[str, Any]] = field(default_factory=list)


def model_config(ctx: RunContext) -> ModelConfig:
    """The configuration object: ``[verify.config]`` and the configuration's own fields."""
    fields = {**ctx.pack.config, **ctx.configuration.config}
    return ModelConfig({name: ctx.value(spec, name) for name, spec in fields.items()})


def _adopt_defaults(
    config: ModelConfig, ctx: RunContext, sandbox: Sandbox, configs: dict[str, list[str]]
) -> None:
    """The defaults of the tree's own configuration classes, for every field the pack does
    not give (the shape's sizes and the pack's stated premises come first)."""
    classes = [
        getattr(sys.modules.get(name), cls, None)
        for name, names in configs.items()
        for cls in names
    ]
    given = {**ctx.pack.config, **ctx.configuration.config}
    for name, value in class_defaults(classes).items():
        if name not in given:
            config.__dict__[name] = value


def _import_configs(sandbox: Sandbox, configs: dict[str, list[str]]) -> list[str]:
    """Execute the configuration modules; one that raises is a stand-in module instead (its
    classes give no defaults). The ones that could not be executed, with why."""
    failed = []
    for name in configs:
        try:
            sandbox.import_module(name)
        except Exception as exc:  # the tree's module: whatever it raises
            sys.modules[name] = StandInModule(name, sandbox.resolve)
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
    return failed


def _argument(spec: str, ctx: RunContext, config: ModelConfig) -> Any:
    kind, _, target = spec.partition(":")
    values: dict[str, Callable[[], Any]] = {
        "config": lambda: config,
        "layer-index": lambda: 0,
        "none": lambda: None,
        "empty-prefix": lambda: "",
    }
    if kind == "object" and target:
        return object_value(ctx, target)
    if spec not in values:
        raise CannotBuild(f"the harness cannot supply an argument {spec!r}")
    return values[spec]()


def _arguments(
    function: Callable[..., Any], table: dict[str, str], ctx: RunContext, config: ModelConfig
) -> dict[str, Any]:
    """The keyword arguments of ``function`` that ``table`` gives; a required parameter it
    does not give is :class:`CannotBuild`."""
    arguments: dict[str, Any] = {}
    parameters = list(inspect.signature(function).parameters.values())
    for parameter in parameters:
        if parameter.name == "self" or parameter.kind in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            continue
        spec = table.get(parameter.name)
        if spec is not None:
            arguments[parameter.name] = _argument(spec, ctx, config)
        elif parameter.default is inspect.Parameter.empty and parameter is not parameters[0]:
            raise CannotBuild(
                f"{getattr(function, '__qualname__', function)} needs {parameter.name}, "
                "which [verify.block-arguments] does not give"
            )
    return arguments


def _first_tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for item in value:
            if isinstance(item, torch.Tensor):
                return item
    raise CannotBuild(f"the block's forward returned {type(value).__name__}, not a tensor")


def _tree_frame(exc: BaseException, files: frozenset[str], root: Path) -> str:
    """``path:line`` of the innermost frame of the tree in ``exc``'s traceback."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename in files:
            where = f"{_relative(frame.filename, root)}:{frame.lineno}"
    return where


def _relative(path: str, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


def execute(
    root: Path,
    module: str,
    block: str,
    text: str,
    pack: VerifyPack,
    executed_modules: tuple[str, ...],
    ctx: RunContext,
    hidden: torch.Tensor,
) -> Execution:
    """Build class ``block`` of ``module`` (executed from ``text``) and run its forward on
    ``hidden`` (this rank's rows)."""
    configs = config_imports(text, pack.config_modules)
    sandbox = Sandbox(
        root,
        {module: text},
        (*executed_modules, *configs),
        pack.stand_in_packages,
        lambda name: _substitute(name, pack, ctx, cache),
    )
    cache: dict[str, Any] = {}
    files = sandbox.tree_files
    ledger = Ledger(files)
    CURRENT.append(ledger)
    trace = LineTrace(files)
    output: torch.Tensor | None = None
    error: str | None = None
    failure: str | None = None
    stand_in: Use | None = None
    drawn: list[dict[str, Any]] = []
    started = time.perf_counter()
    config = model_config(ctx)
    try:
        with sandbox, torch.device(ctx.device), default_dtype(ctx.dtype), torch.no_grad():
            ctx.member_source = lambda: sandbox.import_module(ctx.enum_module)
            try:
                _import_configs(sandbox, configs)
                cls = getattr(sandbox.import_module(module), block)
                _adopt_defaults(config, ctx, sandbox, configs)
                ledger.active = True
                with trace, HandedWatch():
                    instance = cls(
                        **_arguments(cls.__init__, dict(pack.block_arguments), ctx, config)
                    )
                    if isinstance(instance, torch.nn.Module):
                        drawn = draw_own_parameters(instance, ctx.seed, (SubstituteModule,))
                    forward = _arguments(
                        instance.forward, dict(pack.forward_arguments), ctx, config
                    )
                    output = _first_tensor(instance(hidden, **forward))
                ledger.reads_handed(output, "the block's output")
            except StandInUsed as exc:
                stand_in = Use(exc.name, exc.use, _relative_where(exc.where, root))
                error = f"the block used {exc.name} as a {exc.use} at {stand_in.where}"
            except CannotBuild as exc:
                error = str(exc)
            except MissingField as exc:
                where = _tree_frame(exc, files, root)
                error = f"{exc}" + (f", which the block reads at {where}" if where else "")
            except CollectiveMismatch as exc:
                where = _tree_frame(exc, files, root)
                failure = f"{exc}" + (f" at {where}" if where else "")
            except Exception as exc:  # whatever the tree's code raises is what the run shows
                where = _tree_frame(exc, files, root)
                error = f"the block raised {type(exc).__name__}: {exc}" + (
                    f" at {where}" if where else ""
                )
    finally:
        CURRENT.pop()
    executed = trace.executed(lambda path: _relative(path, root))
    return Execution(
        output.detach() if output is not None else None,
        ledger,
        executed,
        error,
        stand_in,
        round(time.perf_counter() - started, 4),
        sorted(config.__dict__["_unset"]),
        tuple(sorted(_relative_use(u, root) for u in ledger.uses)),
        failure,
        tuple(
            sorted(Call(c.name, _relative_where(c.where, root), c.arguments) for c in ledger.calls)
        ),
        drawn,
    )


def _relative_use(use: Use, root: Path) -> Use:
    then = _relative_where(use.then, root) if ":" in use.then else use.then
    return Use(use.name, use.use, _relative_where(use.where, root), then)


def _relative_where(where: str, root: Path) -> str:
    path, _, line = where.rpartition(":")
    return f"{_relative(path, root)}:{line}" if path else where


def _substitute(name: str, pack: VerifyPack, ctx: RunContext, cache: dict[str, Any]) -> Any:
    """The run's one substitute for ``name`` (KeyError: the pack declares none)."""
    if name not in cache:
        role = pack.substitutes[name]
        cache[name] = substitute(role, name, ctx)
    return cache[name]


def relative_files(root: Path, modules: tuple[str, ...]) -> list[str]:
    """The tree-relative paths of ``modules`` that the tree holds."""
    paths = (module_path(root, name) for name in modules)
    return [_relative(str(p), root) for p in paths if p is not None]
