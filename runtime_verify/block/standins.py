"""Inert stand-ins for the runtime a linted tree's module imports, and the ledger of their use.

A module executed from the tree imports much of its codebase's runtime (kernels, server
state, distributed groups). What the harness does not provide is answered by a
:class:`StandIn`: it can be called, indexed, iterated (empty), used as a decorator (it hands
the decorated function back), a context manager, a base class (``__mro_entries__``: an empty
class of its own) and the second argument of ``isinstance`` (never an instance), and it is
falsy. Each *use* that lets its arbitrary answer decide something is recorded in the
:class:`Ledger` with the line of the tree that made it:

- ``branch``: its truth value was taken, or it was compared (an ``if``, ``and``/``or``,
  ``==``, ``isinstance``): the code took a path because of the stand-in's answer;
- ``number``: it was used in arithmetic or as an index, a length, an int or a float;
- ``tensor``: it reached a torch operation (:class:`StandInUsed` is raised: the run stops);
- ``handed``: it was called with a tensor that the block went on to use (an in-place kernel or
  collective the harness does not provide, ``custom_all_reduce_inplace(x)`` and then ``x``):
  what the runtime would have done to the tensor is missing from every later result. The
  use's ``where`` is the call, its ``then`` the first later operation that read the tensor
  (:class:`HandedWatch`, active while the block is built and run).

Every call of a stand-in is recorded too (:attr:`Ledger.calls`: its name, line and what was
passed to it). Attribute reads, and passing a stand-in on as an argument, are not uses: the
value decides nothing until one of the above happens to it.
"""

from __future__ import annotations

import linecache
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode


class StandInUsed(Exception):
    """A stand-in reached an operation whose result the run cannot go on without."""

    def __init__(self, name: str, use: str, where: str) -> None:
        super().__init__(f"{name} used as a {use} at {where}")
        self.name, self.use, self.where = name, use, where


@dataclass(frozen=True, order=True)
class Use:
    """One use of a stand-in: what was used, how, and the tree's line that used it."""

    name: str
    use: str
    where: str
    then: str = ""  # ``handed``: where the block used the tensor it handed over

    def to_dict(self) -> dict[str, str]:
        """JSON form."""
        found = {"name": self.name, "use": self.use, "where": self.where}
        return {**found, "then": self.then} if self.then else found


@dataclass(frozen=True, order=True)
class Call:
    """One call of a stand-in: its name, the tree's line, and what was passed to it."""

    name: str
    where: str
    arguments: str

    def to_dict(self) -> dict[str, str]:
        """JSON form."""
        return {"name": self.name, "where": self.where, "arguments": self.arguments}


def _tensors(value: object, depth: int = 0) -> Iterator[torch.Tensor]:
    """The tensors in ``value``: itself, or inside its lists, tuples and dicts (three levels)."""
    if isinstance(value, torch.Tensor):
        yield value
    elif depth < 3 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item, depth + 1)


def _described(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{list(value.shape)} {str(value.dtype).removeprefix('torch.')}"
    if isinstance(value, (list, tuple)) and any(True for _ in _tensors(value)):
        return f"{type(value).__name__} of {', '.join(_described(v) for v in value)}"
    if isinstance(value, StandIn):
        return f"stand-in {value._name}"
    return type(value).__name__


@dataclass
class Ledger:
    """What one run reached: the stand-ins used, the substitutes called, the modules answered
    by a stand-in. ``tree_files`` are the files whose lines count as the tree's."""

    tree_files: frozenset[str] = frozenset()
    uses: set[Use] = field(default_factory=set)
    substituted: dict[str, int] = field(default_factory=dict)  # name -> calls
    modules: set[str] = field(default_factory=set)
    calls: set[Call] = field(default_factory=set)
    # storage pointer -> (the stand-in, where it was called, the tensor: kept alive, so that
    # its storage is not reused by another tensor during the run)
    handed: dict[int, tuple[str, str, torch.Tensor]] = field(default_factory=dict)
    # uses count once the block is being built and run (while its modules are imported,
    # annotations and typing's caches compare stand-ins in ways that decide nothing)
    active: bool = False

    def where(self) -> str:
        """``path:line`` of the innermost frame of the tree's code on the stack."""
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename in self.tree_files:
                return f"{frame.f_code.co_filename}:{frame.f_lineno}"
            frame = frame.f_back  # type: ignore[assignment]
        return "<harness>"

    def record(self, name: str, use: str) -> str:
        """Record a use of stand-in ``name``; the place it happened."""
        where = self.where()
        if self.active:
            self.uses.add(Use(name, use, where))
        return where

    def called(self, name: str) -> None:
        """Record a call of substitute ``name``."""
        self.substituted[name] = self.substituted.get(name, 0) + 1

    def stand_in_called(self, name: str, args: tuple[object, ...], kwargs: dict[str, Any]) -> None:
        """Record a call of stand-in ``name`` and what was passed to it; the tensors it
        received are watched for a later use (:class:`HandedWatch`)."""
        if not self.active:
            return
        where = self.where()
        shown = [_described(a) for a in args] + [f"{k}={_described(v)}" for k, v in kwargs.items()]
        self.calls.add(Call(name, where, ", ".join(shown)))
        for tensor in _tensors([*args, *kwargs.values()]):
            self.handed.setdefault(_storage(tensor), (name, where, tensor))

    def reads_handed(self, values: object, then: str = "") -> None:
        """Record a ``handed`` use for each tensor in ``values`` a stand-in received (read
        at ``then``, or at the tree's line running now)."""
        for tensor in _tensors(values):
            found = self.handed.get(_storage(tensor))
            if found is not None:
                name, called, _ = found
                self.uses.add(Use(name, "handed", called, then or self.where()))


def _storage(tensor: torch.Tensor) -> int:
    """The address of ``tensor``'s storage (a view shares its base's)."""
    try:
        return int(tensor.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):  # a tensor without storage (meta, functional)
        return id(tensor)


class HandedWatch(TorchFunctionMode):
    """While active, every torch operation reading a tensor that a stand-in received is a
    ``handed`` use of that stand-in (:meth:`Ledger.reads_handed`)."""

    def __torch_function__(
        self, func: Callable[..., Any], types_: object, args: tuple = (), kwargs: Any = None
    ) -> Any:
        kwargs = kwargs or {}
        current = ledger()
        if current.handed and current.active:
            current.reads_handed((*args, *kwargs.values()))
        return func(*args, **kwargs)


# The ledger of the run in progress: stand-ins report here (one run at a time per process).
CURRENT: list[Ledger] = [Ledger()]


def ledger() -> Ledger:
    """The ledger of the run in progress."""
    return CURRENT[-1]


def _decorator_factory(name: str) -> bool:
    """Whether the call in progress is a decorator factory's (``@register(Proxy)``: its
    result decorates the class below, so it is not the class it was given): the tree's line
    calling it is a decorator with arguments, and the stand-in is not itself a call's
    result (``register(Proxy)(cls)`` hands ``cls`` back)."""
    if name.endswith("()"):
        return False
    frame = sys._getframe(2)
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return line.startswith("@") and "(" in line


_BASES: dict[str, type] = {}


def _base_class(name: str) -> type:
    """The empty class a stand-in base becomes: one per stand-in, so that a class with two
    stand-in bases (``class A(Mixin1, Mixin2)``) has two distinct bases, not ``object`` twice."""
    if name not in _BASES:

        def __init__(self: object, *args: object, **kwargs: object) -> None:
            # what the runtime's base would do with the arguments is not provided; the next
            # base in the MRO (``nn.Module``, ``object``) is initialised without them
            super(base, self).__init__()  # type: ignore[arg-type]

        base = type(name.rsplit(".", 1)[-1], (), {"__stand_in__": name, "__init__": __init__})
        _BASES[name] = base
    return _BASES[name]


def _branch(self: StandIn, *_: object) -> bool:
    ledger().record(self._name, "branch")
    return False


def _number(self: StandIn, *_: object) -> StandIn:
    ledger().record(self._name, "number")
    return self


def _integer(self: StandIn) -> int:
    ledger().record(self._name, "number")
    return 0


class StandIn:
    """An inert answer for a name the harness does not provide (see the module docstring)."""

    __slots__ = ("_name",)
    _name: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    # what keeps the code going without deciding anything
    def __getattr__(self, attr: str) -> StandIn:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return StandIn(f"{self._name}.{attr}")

    def __setattr__(self, attr: str, value: object) -> None:
        pass  # writes to the runtime go nowhere

    def __call__(self, *args: object, **kwargs: object) -> Any:
        if (
            len(args) == 1
            and not kwargs
            and isinstance(args[0], (types.FunctionType, type))
            and not _decorator_factory(self._name)
        ):
            return args[0]  # a decorator: the function or class is the tree's own code
        ledger().stand_in_called(self._name, args, kwargs)
        return StandIn(f"{self._name}()")

    def __getitem__(self, key: object) -> StandIn:
        return StandIn(f"{self._name}[]")

    def __setitem__(self, key: object, value: object) -> None:
        pass

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __enter__(self) -> StandIn:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __mro_entries__(self, bases: tuple[object, ...]) -> tuple[type, ...]:
        return (_base_class(self._name),)

    def __repr__(self) -> str:
        return f"<stand-in {self._name}>"

    def __str__(self) -> str:
        return self._name

    def __hash__(self) -> int:
        return hash(self._name)

    def __instancecheck__(self, instance: object) -> bool:
        ledger().record(self._name, "branch")
        return False

    def __subclasscheck__(self, subclass: object) -> bool:
        ledger().record(self._name, "branch")
        return False

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StandIn):  # the same name is the same stand-in (typing's caches)
            return self._name == other._name
        return _branch(self)

    def __ne__(self, other: object) -> bool:
        if isinstance(other, StandIn):
            return self._name != other._name
        return not _branch(self)

    # what lets the stand-in's answer decide
    __bool__ = _branch
    __lt__ = __le__ = __gt__ = __ge__ = _branch
    __contains__ = _branch
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _number
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _number
    __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = _number
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _number
    __index__ = __int__ = __len__ = _integer

    def __float__(self) -> float:
        ledger().record(self._name, "number")
        return 0.0

    @classmethod
    def __torch_function__(
        cls, func: Callable[..., Any], types_: object, args: tuple = (), kwargs: Any = None
    ) -> Any:
        stand_in = next(a for a in [*args, *(kwargs or {}).values()] if isinstance(a, StandIn))
        where = ledger().record(stand_in._name, "tensor")
        raise StandInUsed(stand_in._name, "tensor", where)


class StandInModule(types.ModuleType):
    """A module of the runtime answered by stand-ins: every attribute a :class:`StandIn` (or
    what ``resolve`` gives for the name: a substitute, a name re-exported from a module
    executed from the tree). A package, so that its submodules import too."""

    def __init__(self, name: str, resolve: Callable[[str, str], Any]) -> None:
        super().__init__(name)
        self.__path__: list[str] = []
        self.__dict__["_resolve"] = resolve

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        value = self.__dict__["_resolve"](self.__name__, attr)
        setattr(self, attr, value)
        return value
