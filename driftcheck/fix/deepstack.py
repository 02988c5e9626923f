"""Room for deeply nested expressions: the fixer plans in a thread whose stack fits them.

libcst reads ``a or b or c`` as nested binary operations, so a chain of N operands is N levels
deep; its parser is native code that recurses once a level, and its code generator and
visitors recurse in Python a few frames a level. On the main thread's stack (8 MiB) the parser
overflows at about 5,000 operands, which kills the process instead of raising. So planning runs
in a thread (:func:`run_deep`) whose stack and recursion limit are sized for the deepest
expression it will rewrite (:func:`nesting`), and an expression deeper than the stack of the
thread parsing it can hold is refused before libcst sees it (:func:`check_room`): that one fix
is refused with the reason, the rest of the report stands.
"""

from __future__ import annotations

import ast
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from .fragment import FragmentError, parse_expression

T = TypeVar("T")

MIB = 1 << 20
BASE_STACK = 64 * MIB
BYTES_PER_LEVEL = 16 * 1024  # measured: under 3 KiB a level parsing, rendering and visiting
FRAMES_PER_LEVEL = 16  # measured: 3 Python frames a level for a libcst visit
BASE_FRAMES = 20_000
NATIVE_BYTES_PER_LEVEL = 4 * 1024  # measured: about 1.3 KiB a level in libcst's parser
HEADROOM = 2 * MIB  # what the caller's frames below the parser may already hold
MAIN_STACK = 8 * MIB  # assumed for the main thread when its limit is unlimited

_room = threading.local()


def nesting(text: str) -> int:
    """How many levels deep libcst's tree of the expression ``text`` nests, estimated from
    its ``ast`` (which holds a chain of operands flat: a chain of N is N - 1 levels more);
    raises :class:`FragmentError` when ``text`` is not an expression ``ast`` can parse."""
    root = parse_expression(text)
    depth: dict[int, int] = {}
    pending: list[tuple[ast.AST, bool]] = [(root, False)]
    while pending:
        node, done = pending.pop()
        children = list(ast.iter_child_nodes(node))
        if not done:
            pending.append((node, True))
            pending.extend((child, False) for child in children)
            continue
        own = len(node.values) if isinstance(node, ast.BoolOp) else 1
        depth[id(node)] = own + max((depth[id(c)] for c in children), default=0)
    return depth[id(root)]


def stack_for(levels: int) -> int:
    """The thread stack (bytes, whole MiB) that planning rewrites ``levels`` deep needs."""
    wanted = BASE_STACK + levels * BYTES_PER_LEVEL
    return -(-wanted // MIB) * MIB


def run_deep(levels: int, call: Callable[[], T]) -> T:
    """``call()`` in a thread with room for expressions ``levels`` deep (its stack, and the
    recursion limit while it runs), returning what it returns or raising what it raises.
    When the system refuses that stack, a smaller one is used: the expressions it cannot
    hold are then refused one by one (:func:`check_room`)."""
    outcome: dict[str, object] = {}

    def work(size: int) -> None:
        _room.stack = size
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    previous_limit, previous_size = sys.getrecursionlimit(), threading.stack_size()
    sys.setrecursionlimit(max(previous_limit, BASE_FRAMES + levels * FRAMES_PER_LEVEL))
    try:
        for size in dict.fromkeys((stack_for(levels), 1024 * MIB, BASE_STACK)):
            try:
                threading.stack_size(size)
                thread = threading.Thread(
                    target=work, args=(size,), name="driftcheck-fix", daemon=True
                )
                thread.start()
            except (RuntimeError, ValueError, MemoryError, OverflowError):
                continue
            finally:
                threading.stack_size(previous_size)
            thread.join()
            break
        else:
            work(0)  # no thread could start: here, with this thread's stack
    finally:
        sys.setrecursionlimit(previous_limit)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]


def _stack_here() -> int:
    """The stack of the running thread: the one :func:`run_deep` gave it, else the main
    thread's limit, else the default for threads."""
    given = getattr(_room, "stack", 0)
    if given:
        return int(given)
    if threading.current_thread() is threading.main_thread():
        try:
            import resource
        except ImportError:  # pragma: no cover - not POSIX
            return MAIN_STACK
        soft, _ = resource.getrlimit(resource.RLIMIT_STACK)
        return MAIN_STACK if soft == resource.RLIM_INFINITY else int(soft)
    return threading.stack_size() or MAIN_STACK


def check_room(text: str) -> None:
    """Raise :class:`FragmentError` unless libcst's parser can take ``text`` on this thread's
    stack (it would overflow it, killing the process, instead of raising)."""
    levels = nesting(text)
    stack = _stack_here()
    if HEADROOM + levels * NATIVE_BYTES_PER_LEVEL > stack:
        raise FragmentError(
            f"nested {levels} levels deep, more than libcst's parser can take in a "
            f"{stack // MIB} MiB stack"
        )
