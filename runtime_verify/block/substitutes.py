"""What the harness provides in place of the linted codebase's runtime: one table.

The pack maps the codebase's names to these (``[verify.substitutes]``: ``get_parallel =
"object:parallel"``, ``RowParallelLinear = "linear:row"``); nothing here names the codebase.
Every substitute does what its runtime counterpart does to the numbers, on the run's ranks:

- ``backend``: the arm's member of the tree's own enum;
- ``all-reduce:<group>``: a torch.distributed sum over the group; ``size:``, ``rank:``,
  ``group:<group>``: the group's width, this rank's place, the group (``all_reduce``,
  ``all_gather_into_tensor``, ``reduce_scatter_tensor``); a group spans every rank or this rank
  alone, as the configuration says;
- ``object:<name>``: a runtime object answering the fields ``[verify.objects.<name>]``
  gives (any other field is a stand-in);
- ``linear:replicated|column|merged-column|row``: plain torch weights of the layer's shapes,
  sharded over the group its ``parallel_group`` (or ``tp_rank``/``tp_size``) names; the row
  layer sums over that group when it reduces its results;
- ``rms-norm``, ``silu-and-mul``: the operations themselves;
- ``router-gate``: a gate linear to float32 logits; ``topk``: the top-k of the scores;
- ``experts`` / ``experts-class``: the routed experts behind the dispatcher of the arm's
  member (the DeepEP models, or real DeepEP), run on the torch or DeepGEMM runner;
- ``false``: a predicate answering False; ``join-prefix``: a module name under its prefix;
- ``rows-present``: whether the batch it is given has rows; ``no-op-context``: a context
  manager whose methods do nothing to the values they are given (a feature the run leaves off).

Weights are drawn from the run's seed and the module's name (its ``prefix``), whole, and each
rank keeps its shard, so every arm and phase sees the same numbers whatever layout it builds.
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

from ..layer.comm import Comm
from ..layer.dispatchers import Dispatcher, make_dispatcher
from ..layer.runners import Runner
from ..layer.seeds import derive_seed
from ..layer.shapes import Shape
from ..layer.weights import ExpertWeights, build_experts, ep_experts, tp_row_range
from .pack import Configuration, VerifyPack
from .standins import StandIn, ledger


class CollectiveMismatch(Exception):
    """A collective the tree called over tensors whose shapes differ across the ranks: the
    block's own failure (it sums rows that are not the same rows), not the harness's."""


@dataclass
class Group:
    """A process group of the run: every rank (``world``) or this rank alone (``self``)."""

    name: str
    comm: Comm
    span: str

    @property
    def world_size(self) -> int:
        """How many ranks it holds."""
        return self.comm.world_size if self.span == "world" else 1

    @property
    def rank_in_group(self) -> int:
        """This rank's place in it."""
        return self.comm.rank if self.span == "world" else 0

    @property
    def device_group(self) -> Any:
        """The torch.distributed group (None: this rank alone)."""
        return dist.group.WORLD if self.span == "world" else None

    def all_reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        """The sum over the group (a new tensor)."""
        ledger().called(f"group:{self.name}.all_reduce")
        if self.world_size == 1:
            return tensor.clone()
        self._same_shape(tensor, "all_reduce")
        return self.comm.all_reduce(tensor)

    def _same_shape(self, tensor: torch.Tensor, what: str) -> None:
        """Raise :class:`CollectiveMismatch` on every rank when the ranks' shapes differ."""
        dims = torch.zeros(8, dtype=torch.int64, device=self.comm.device)
        dims[0] = tensor.dim()
        dims[1 : 1 + tensor.dim()] = torch.tensor(tensor.shape, dtype=torch.int64)
        every = [torch.empty_like(dims) for _ in range(self.world_size)]
        dist.all_gather(every, dims)
        shapes = [tuple(d[1 : 1 + int(d[0])].tolist()) for d in every]
        if len(set(shapes)) > 1:
            shown = ", ".join(f"{list(shape)} on rank {rank}" for rank, shape in enumerate(shapes))
            raise CollectiveMismatch(
                f"{what} over the {self.name} group of tensors whose shapes differ: {shown}"
            )

    def all_gather_into_tensor(self, out: torch.Tensor, tensor: torch.Tensor) -> None:
        """Every rank's rows, in rank order, into ``out``."""
        ledger().called(f"group:{self.name}.all_gather_into_tensor")
        if self.world_size == 1:
            out.copy_(tensor)
            return
        out.copy_(self.comm.all_gather_rows(tensor, [tensor.shape[0]] * self.world_size))

    def reduce_scatter_tensor(self, out: torch.Tensor, tensor: torch.Tensor) -> None:
        """This rank's block of the rows summed over the group, into ``out``."""
        ledger().called(f"group:{self.name}.reduce_scatter_tensor")
        summed = self.all_reduce(tensor)
        rows = out.shape[0]
        out.copy_(summed[self.rank_in_group * rows : (self.rank_in_group + 1) * rows])

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return StandIn(f"group:{self.name}.{attr}")


@dataclass
class RunContext:
    """Everything one rank's substitutes need for one run (an arm, a phase, a configuration)."""

    pack: VerifyPack
    configuration: Configuration
    comm: Comm
    shape: Shape
    seed: int
    dtype: torch.dtype
    arm: str  # the arm's member, by value
    enum: str  # ``module:qualname`` of the tree's enum
    dispatcher_kind: str  # legacy | elastic | partial
    runner: Runner
    capacity: int | None
    rows: int  # the rows this rank holds
    make_deep_ep: Callable[..., Dispatcher] | None = None
    groups: dict[str, Group] = field(default_factory=dict)
    # imports the enum's module inside the run's sandbox (set when the run starts)
    member_source: Callable[[], Any] | None = None

    def __post_init__(self) -> None:
        for name, span in self.configuration.groups.items():
            self.groups[name] = Group(name, self.comm, span)

    @property
    def enum_module(self) -> str:
        """The module defining the tree's enum."""
        return self.enum.split(":", 1)[0]

    @property
    def member(self) -> Any:
        """The arm's member of the tree's own enum, as the tree's module defines it."""
        if self.member_source is None:
            raise RuntimeError("the run's sandbox is not set up")
        found: Any = self.member_source()
        for part in self.enum.split(":", 1)[1].split("."):
            found = getattr(found, part)
        return found(self.arm)

    @property
    def device(self) -> torch.device:
        """Where the tensors live."""
        return self.comm.device

    def group(self, name: str) -> Group:
        """The group ``name`` (``self``: this rank alone)."""
        if name == "self":
            return Group("self", self.comm, "self")
        if name not in self.groups:
            raise KeyError(f"no group {name!r}; the configuration has {', '.join(self.groups)}")
        return self.groups[name]

    def value(self, spec: Any, label: str) -> Any:
        """A field's value from its spec: ``size:``/``rank:``/``group:<g>``, ``rows`` (this
        rank's row count as a tensor), ``none``, ``shape:<dim>``, or the value itself."""
        if not isinstance(spec, str):
            return spec
        kind, _, rest = spec.partition(":")
        if kind == "size" and rest:
            return self.group(rest).world_size
        if kind == "rank" and rest:
            return self.group(rest).rank_in_group
        if kind == "group" and rest:
            return self.group(rest)
        if kind == "shape" and rest:
            return shape_value(self.shape, rest, self.dtype)
        if spec == "rows":
            return torch.tensor([self.rows], dtype=torch.int32, device=self.device)
        if spec == "none":
            return None
        return spec


def shape_value(shape: Shape, dim: str, dtype: torch.dtype) -> Any:
    """A dimension of the harness's shape (``latent``, ``dtype`` and the shape's fields)."""
    if dim == "dtype":
        return dtype
    if not hasattr(shape, dim):
        raise KeyError(f"the harness's shape has no {dim!r}")
    return getattr(shape, dim)


class RuntimeObject:
    """A runtime object answering the fields a pack table gives (``moe.ep_num_redundant_experts``
    nests); any other field is a stand-in."""

    def __init__(self, name: str, fields: dict[str, Any], ctx: RunContext) -> None:
        nested: dict[str, dict[str, Any]] = {}
        object.__setattr__(self, "_name", name)
        for key, spec in fields.items():
            head, _, rest = key.partition(".")
            if rest:
                nested.setdefault(head, {})[rest] = spec
            else:
                object.__setattr__(self, key, ctx.value(spec, f"{name}.{key}"))
        for head, inner in nested.items():
            object.__setattr__(self, head, RuntimeObject(f"{name}.{head}", inner, ctx))

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return StandIn(f"{self._name}.{attr}")

    def __setattr__(self, attr: str, value: object) -> None:
        object.__setattr__(self, attr, value)


def _weight(ctx: RunContext, prefix: str, rows: int, cols: int) -> torch.Tensor:
    """A ``[rows, cols]`` weight drawn from the seed and the module's name, scaled by its fan-in."""
    generator = torch.Generator(device=ctx.device)
    generator.manual_seed(derive_seed(ctx.seed, "weight", prefix, rows, cols))
    values = torch.randn(rows, cols, generator=generator, device=ctx.device)
    return (values / math.sqrt(cols)).to(ctx.dtype)


class SubstituteModule(nn.Module):
    """A substitute module: once built, attributes it does not have are stand-ins, as the
    runtime's are (while it is built they are missing, so that nn.Module can register)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        built = cls.__init__

        def __init__(self: nn.Module, *args: Any, **kw: Any) -> None:
            built(self, *args, **kw)
            self.__dict__["_built"] = True

        cls.__init__ = __init__  # type: ignore[method-assign]

    def __getattr__(self, attr: str) -> Any:
        try:
            return super().__getattr__(attr)
        except AttributeError:
            if attr.startswith("__") or not self.__dict__.get("_built"):
                raise
            return StandIn(f"{type(self).__name__}.{attr}")

    def __setattr__(self, attr: str, value: Any) -> None:
        # the tree registering a parameter or module on a substitute (``self.gate.bias =
        # nn.Parameter(...)``): nn.Module asks hasattr first, which a stand-in must not answer
        built = self.__dict__.pop("_built", False)
        try:
            super().__setattr__(attr, value)
        finally:
            if built:
                self.__dict__["_built"] = True


def given(
    ctx: RunContext, substitute: str, kwargs: dict[str, Any], parameter: str, default: Any = None
) -> Any:
    """The value the tree passed for ``parameter`` of ``substitute``, under the codebase's
    name for it (``[verify.parameters]``), or ``default``."""
    name = ctx.pack.parameter(substitute, parameter)
    return kwargs.get(name, default) if name else default


def field_of(ctx: RunContext, substitute: str, config: Any, parameter: str) -> Any:
    """The field of the tree's configuration object that ``parameter`` of ``substitute`` reads
    (``[verify.parameters]``), or None."""
    name = ctx.pack.parameter(substitute, parameter)
    return getattr(config, name, None) if name else None


def _linear_group(ctx: RunContext, kwargs: dict[str, Any]) -> tuple[int, int, Group | None]:
    """``(rank, size, group)`` a linear layer shards over: its TP rank and size when given,
    else the group its parallel group names (the TP group by default)."""
    size = given(ctx, "linear", kwargs, "tp-size")
    if isinstance(size, int):
        rank = given(ctx, "linear", kwargs, "tp-rank")
        rank = rank if isinstance(rank, int) else 0
        group = ctx.group("tp") if size > 1 else None
        return rank, size, group
    name = given(ctx, "linear", kwargs, "group")
    target = ctx.pack.linear_groups.get(name, "tp") if isinstance(name, str) else "tp"
    group = ctx.group(target)
    return group.rank_in_group, group.world_size, group


def linear_class(ctx: RunContext, kind: str) -> type[nn.Module]:
    """The substitute of a linear layer of ``kind`` (replicated, column, merged-column, row)."""

    class Linear(SubstituteModule):
        def __init__(
            self,
            input_size: int,
            output_size: Any = None,
            bias: bool = False,
            *args: Any,
            **kwargs: Any,
        ) -> None:
            super().__init__()
            if output_size is None:
                output_size = given(
                    ctx,
                    "linear",
                    kwargs,
                    "output-sizes",
                    given(ctx, "linear", kwargs, "output-size"),
                )
            prefix = str(given(ctx, "linear", kwargs, "prefix", ""))
            blocks = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size]
            rank, size, group = (0, 1, None) if kind == "replicated" else _linear_group(ctx, kwargs)
            reduces = given(ctx, "linear", kwargs, "reduce", True)
            self.reduce_results = bool(reduces) and kind == "row"
            self.group = group
            if kind == "row":
                full = _weight(ctx, prefix, blocks[0], input_size)
                per = input_size // size
                weight = full[:, rank * per : (rank + 1) * per]
            else:
                parts = []
                for index, rows in enumerate(blocks):
                    full = _weight(ctx, f"{prefix}#{index}", rows, input_size)
                    per = rows // size
                    parts.append(full[rank * per : (rank + 1) * per])
                weight = torch.cat(parts)
            self.weight = nn.Parameter(weight.contiguous(), requires_grad=False)
            self.input_size, self.output_size = input_size, sum(blocks)

        def forward(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, None]:
            ledger().called(f"linear:{kind}")
            out = F.linear(x.to(self.weight.dtype), self.weight)
            if self.reduce_results and self.group is not None and self.group.world_size > 1:
                out = self.group.all_reduce(out)
            return out, None

    Linear.__name__ = f"Linear[{kind}]"
    return Linear


def rms_norm_class(ctx: RunContext) -> type[nn.Module]:
    """RMSNorm over the last dimension (weight one), with the runtime's residual form."""

    class RMSNorm(SubstituteModule):
        def __init__(self, hidden_size: int, eps: float = 1e-6, *args: Any, **kwargs: Any) -> None:
            super().__init__()
            self.weight = nn.Parameter(
                torch.ones(hidden_size, device=ctx.device, dtype=ctx.dtype), requires_grad=False
            )
            self.variance_epsilon = eps

        def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None, **_: Any) -> Any:
            ledger().called("rms-norm")
            if residual is not None:
                x = x + residual
                residual = x
            hidden = x.float()
            hidden = hidden * torch.rsqrt(
                hidden.pow(2).mean(-1, keepdim=True) + self.variance_epsilon
            )
            out = (hidden * self.weight.float()).to(x.dtype)
            return out if residual is None else (out, residual)

    return RMSNorm


class SiluAndMul(SubstituteModule):
    """``silu(x[..., :d]) * x[..., d:]``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ledger().called("silu-and-mul")
        gate, up = x.chunk(2, dim=-1)
        return F.silu(gate) * up


def router_gate_class(ctx: RunContext) -> type[nn.Module]:
    """A gate linear to float32 logits over the experts, with a zero score-correction bias."""

    class RouterGate(SubstituteModule):
        def __init__(self, config: Any = None, *args: Any, **kwargs: Any) -> None:
            super().__init__()
            experts = field_of(ctx, "router-gate", config, "experts") or ctx.shape.experts
            hidden = field_of(ctx, "router-gate", config, "hidden") or ctx.shape.hidden
            prefix = str(given(ctx, "router-gate", kwargs, "prefix", "gate"))
            self.weight = nn.Parameter(
                _weight(ctx, prefix, experts, hidden).float(), requires_grad=False
            )
            bias = ctx.pack.parameter("router-gate", "correction-bias-attribute")
            if bias:
                setattr(self, bias, torch.zeros(experts, device=ctx.device))

        def forward(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            ledger().called("router-gate")
            return F.linear(x.float(), self.weight)

    return RouterGate


def topk_output_class(ctx: RunContext) -> Any:
    """The runtime's top-k output: weights, ids, and the logits they came from, under the
    field names the pack gives (``[verify.parameters.topk] output-fields``)."""
    named = ctx.pack.parameter("topk", "output-fields")
    fields = [f.strip() for f in named.split(",")] if named else []
    if len(fields) != 3:
        fields = ["weights", "ids", "logits"]
    return namedtuple("TopKOutput", fields)


def topk_class(ctx: RunContext) -> type[nn.Module]:
    """The top-k of the scores (softmax or sigmoid), chosen with the correction bias if any,
    renormalised when asked."""

    class TopK(SubstituteModule):
        def __init__(self, top_k: int, *args: Any, **kwargs: Any) -> None:
            super().__init__()
            self.top_k = top_k
            self.renormalize = bool(given(ctx, "topk", kwargs, "normalise-weights", True))
            scoring = given(ctx, "topk", kwargs, "scoring")
            self.scoring = scoring if scoring in ("softmax", "sigmoid") else "softmax"
            bias = given(ctx, "topk", kwargs, "correction-bias")
            self.correction_bias = bias if isinstance(bias, torch.Tensor) else None

        def forward(
            self,
            hidden_states: torch.Tensor,
            router_logits: torch.Tensor,
            *args: Any,
            **kwargs: Any,
        ) -> tuple:
            ledger().called("topk")
            logits = router_logits.float()
            scores = (
                torch.softmax(logits, -1) if self.scoring == "softmax" else torch.sigmoid(logits)
            )
            choosing = scores if self.correction_bias is None else scores + self.correction_bias
            ids = torch.topk(choosing, self.top_k, dim=-1).indices
            weights = scores.gather(1, ids)
            if self.renormalize:
                weights = weights / weights.sum(-1, keepdim=True)
            return output(weights, ids, logits)

    def bind(self: TopK, *args: Any, **kwargs: Any) -> None:
        """Nothing to bind: the harness's experts take any top-k output."""

    def empty(self: TopK, device: Any = None, *args: Any, **kwargs: Any) -> tuple:
        """No token: empty weights and ids."""
        nothing = torch.empty((0, self.top_k), device=ctx.device)
        return output(nothing, nothing.long(), nothing)

    output = topk_output_class(ctx)
    # the runtime's methods the tree calls on its top-k, under the pack's names
    for method, function in (("bind-method", bind), ("empty-output-method", empty)):
        name = ctx.pack.parameter("topk", method)
        if name:
            setattr(TopK, name, function)
    for alias in ctx.pack.parameter("topk", "forward-aliases").split(","):
        if alias.strip():
            setattr(TopK, alias.strip(), TopK.forward)
    return TopK


# the experts generated in this process: every arm and phase builds the same block, so the
# same numbers are drawn once (a K3-sized bank takes seconds to draw)
_BANKS: dict[tuple[object, ...], ExpertWeights] = {}


@dataclass
class ExpertBank:
    """The routed experts of one block, as the dispatcher models take them (``shape``,
    ``routed_ep``: this rank's whole experts, ``routed_tp``: its slice of every expert)."""

    shape: Shape
    seed: int
    tag: str
    comm: Comm
    dtype: torch.dtype

    def _drawn(self, layout: str, experts: Any, rows: tuple[int, int]) -> ExpertWeights:
        key = (self.shape, self.seed, self.tag, layout, self.comm.rank, self.comm.world_size,
               str(self.comm.device), self.dtype)  # fmt: skip
        if key not in _BANKS:
            _BANKS[key] = build_experts(
                self.shape, self.seed, self.tag, experts, self.shape.intermediate, rows,
                self.comm.device, self.dtype,
            )  # fmt: skip
        return _BANKS[key]

    @property
    def routed_ep(self) -> ExpertWeights:
        """The whole experts this rank owns."""
        owned = ep_experts(self.shape.experts, self.comm.rank, self.comm.world_size)
        return self._drawn("ep", owned, (0, self.shape.intermediate))

    @property
    def routed_tp(self) -> ExpertWeights:
        """This rank's intermediate slice of every expert."""
        rows = tp_row_range(self.shape.intermediate, self.comm.rank, self.comm.world_size)
        return self._drawn("tp", range(self.shape.experts), rows)


def experts_class(ctx: RunContext) -> type[nn.Module]:
    """The routed experts of a block, behind the dispatcher of the arm's member."""

    class Experts(SubstituteModule):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__()
            # the runtime's flags the tree reads on its experts (the pack names them): off
            for flag in ctx.pack.parameter("experts", "false-attributes").split(","):
                if flag.strip():
                    setattr(self, flag.strip(), False)
            experts = int(given(ctx, "experts", kwargs, "experts") or ctx.shape.experts)
            hidden = int(given(ctx, "experts", kwargs, "hidden") or ctx.shape.hidden)
            intermediate = int(
                given(ctx, "experts", kwargs, "intermediate") or ctx.shape.intermediate
            )
            shape = replace(ctx.shape, experts=experts, hidden=hidden, intermediate=intermediate)
            shape.check(ctx.comm.world_size)
            self.num_experts = experts
            self.num_local_experts = experts // ctx.comm.world_size
            self.routed_scaling_factor = given(ctx, "experts", kwargs, "scaling")
            tag = f"experts:{given(ctx, 'experts', kwargs, 'prefix', '')}"
            self.bank = ExpertBank(shape, ctx.seed, tag, ctx.comm, ctx.dtype)
            factory = ctx.make_deep_ep or make_dispatcher
            self.routed = factory(
                ctx.arm,
                ctx.dispatcher_kind,
                ctx.comm,
                self.bank,
                ctx.runner,
                ctx.capacity,
            )

        def forward(
            self, hidden_states: torch.Tensor, topk_output: Any, *args: Any, **kwargs: Any
        ) -> torch.Tensor:
            ledger().called(f"experts[{self.routed.implementation}]")
            weights, ids = topk_output[0], topk_output[1]
            out = self.routed(hidden_states, ids.long(), weights.float())
            scale = self.routed_scaling_factor
            if isinstance(scale, (int, float)) and scale != 1.0:
                out = out * scale
            return out

    return Experts


class NoOpContext:
    """A context manager whose every method does nothing to the values it is given (a
    runtime feature the run leaves off: symmetric memory, say)."""

    def __enter__(self) -> NoOpContext:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __getattr__(self, attr: str) -> Callable[..., None]:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return lambda *args, **kwargs: None


def _rows_present(*args: Any, **kwargs: Any) -> bool:
    """Whether every tensor argument has rows (a batch that is neither idle nor empty)."""
    tensors = [t for t in [*args, *kwargs.values()] if isinstance(t, torch.Tensor)]
    return bool(tensors) and all(t.shape[0] > 0 for t in tensors)


def _counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def called(*args: Any, **kwargs: Any) -> Any:
        ledger().called(name)
        return function(*args, **kwargs)

    called.__name__ = name
    return called


def substitute(role: str, name: str, ctx: RunContext) -> Any:
    """What the harness provides for the codebase's ``name``, declared as ``role``."""
    kind, _, target = role.partition(":")
    if role == "backend":
        return _counted(name, lambda *a, **k: ctx.member)
    if kind == "all-reduce" and target:
        group = ctx.group(target)
        return _counted(name, lambda tensor, *a, **k: group.all_reduce(tensor))
    if kind in ("size", "rank", "group") and target:
        return _counted(name, lambda *a, **k: ctx.value(role, name))
    if kind == "object" and target:
        fields = dict(ctx.pack.objects.get(target, {}))
        return _counted(name, lambda *a, **k: RuntimeObject(f"{name}()", fields, ctx))
    if kind == "linear" and target:
        return linear_class(ctx, target)
    if kind == "flag" and target:
        value = bool(ctx.configuration.flags.get(target, False))
        return _counted(name, lambda *a, **k: value)
    simple: dict[str, Callable[[], Any]] = {
        "false": lambda: _counted(name, lambda *a, **k: False),
        "rows-present": lambda: _counted(name, _rows_present),
        "no-op-context": lambda: _counted(name, lambda *a, **k: NoOpContext()),
        "join-prefix": lambda: _counted(
            name, lambda part, prefix="": f"{prefix}.{part}" if prefix else part
        ),
        "rms-norm": lambda: rms_norm_class(ctx),
        "silu-and-mul": lambda: SiluAndMul,
        "router-gate": lambda: router_gate_class(ctx),
        "topk": lambda: topk_class(ctx),
        "experts": lambda: experts_class(ctx),
        "experts-class": lambda: _counted(name, lambda *a, **k: experts_class(ctx)),
        "dp-global-buffer": lambda: _counted(name, lambda *a, **k: _dp_buffer(ctx, True)),
        "dp-local-buffer": lambda: _counted(name, lambda *a, **k: _dp_buffer(ctx, False)),
        "dp-gather": lambda: _counted(
            name, lambda out, local, *a, **k: _dp_gather(ctx, out, local)
        ),
        "dp-scatter": lambda: _counted(
            name, lambda out, full, *a, **k: _dp_scatter(ctx, out, full)
        ),
    }
    if role not in simple:
        raise KeyError(f"[verify.substitutes] {name} = {role!r}: the harness provides no {role!r}")
    return simple[role]()


def _row_counts(ctx: RunContext) -> list[int]:
    """Every rank's row count (each rank tells the others its own)."""
    mine = torch.tensor([ctx.rows], dtype=torch.int64, device=ctx.device)
    every = [torch.empty_like(mine) for _ in range(ctx.comm.world_size)]
    dist.all_gather(every, mine)
    return [int(count) for count in every]


def _dp_buffer(ctx: RunContext, whole: bool) -> torch.Tensor:
    """The attention-DP buffer: every rank's rows (``whole``) or this rank's."""
    rows = sum(_row_counts(ctx)) if whole else ctx.rows
    return torch.empty((rows, ctx.shape.hidden), dtype=ctx.dtype, device=ctx.device)


def _dp_gather(ctx: RunContext, out: torch.Tensor, local: torch.Tensor) -> None:
    """Every rank's rows, in rank order, into ``out`` (the DP gather)."""
    counts = _row_counts(ctx)
    out.copy_(ctx.comm.all_gather_rows(local, counts)[: out.shape[0]])


def _dp_scatter(ctx: RunContext, out: torch.Tensor, full: torch.Tensor) -> None:
    """This rank's rows of ``full`` into ``out`` (the DP scatter back)."""
    counts = _row_counts(ctx)
    start = sum(counts[: ctx.comm.rank])
    out.copy_(full[start : start + counts[ctx.comm.rank]])


def object_value(ctx: RunContext, name: str) -> RuntimeObject:
    """The runtime object ``[verify.objects.<name>]`` describes (a forward batch, say)."""
    return RuntimeObject(name, dict(ctx.pack.objects.get(name, {})), ctx)
