"""Scan one file: read bytes, prefilter, parse with ``ast``, collect sites and suppressions.

Runs in worker processes, so it takes and returns plain data. Never raises for a bad file:
problems come back as :class:`~driftcheck.model.Problem` values naming the file and line.
"""

from __future__ import annotations

import ast
import functools
import gc
import hashlib
import os
import re
import sys
import tokenize
from dataclasses import dataclass, field, replace
from typing import Any

from .linesearch import at_line_starts
from .liveness import LocalReads, class_headers
from .model import Problem, Site, Universe
from .partial import parse_for_sites
from .prefilter import Prefilter
from .singles import SingleCheckFilter, Tokens
from .sites import find_sites
from .sites.names import terminal_name
from .suppressions import Suppression, parse_suppressions


def marker_pattern(marker: str) -> re.Pattern[bytes]:
    """``EntryClass = Foo`` / ``EntryClass = [Foo, Bar]``: the model-file marker's value."""
    name = re.escape(marker.encode())
    return re.compile(rb"^" + name + rb"\s*=\s*(\[[^\]]*\]|\(?[\w., \n]*\)?)", re.MULTILINE)


PAUSE_COLLECTOR_BYTES = 1 << 20


@dataclass(frozen=True)
class ScanSpec:
    """What every file is scanned for (plain data, sent once to each worker): the run's
    universes, their prefilter, the gate registry calls, and the model-file marker."""

    universes: tuple[Universe, ...]
    prefilter: Prefilter
    register_calls: tuple[str, ...] = ()
    model_marker: str = ""
    # reach key -> the pack's role operation (:attr:`driftcheck.config.Config.operations`)
    operations: tuple[tuple[str, str], ...] = ()
    # when set, a file that can hold only single checks is not analysed but marked deferred
    # (:mod:`driftcheck.singles`)
    singles: SingleCheckFilter | None = None
    # one prefilter per universe, in the order of ``universes`` (empty: every universe is
    # walked in every file analysed): a file is walked for the universes whose own
    # prefilter it passes, and no other can hold a site there (the prefilter is sound)
    own: tuple[Prefilter, ...] = ()

    def universes_in(self, data: bytes) -> tuple[Universe, ...]:
        """The universes that may hold a site in ``data`` (all when :attr:`own` is empty)."""
        return self.walked(data)[0]

    def walked(self, data: bytes) -> tuple[tuple[Universe, ...], list[list[int]] | None]:
        """:meth:`universes_in`, and when two or more of them are walked, the hot lines of
        each one's own tokens (:meth:`Prefilter.hot_lines`; None otherwise)."""
        if len(self.own) != len(self.universes):
            return self.universes, None
        kept = [
            (u, own) for u, own in zip(self.universes, self.own, strict=True) if own.may_match(data)
        ]
        lines = [own.hot_lines(data) for _, own in kept] if len(kept) > 1 else None
        return tuple(u for u, _ in kept), lines


@functools.lru_cache(maxsize=64)
def package_imports(package: str) -> re.Pattern[bytes]:
    """``from .x import``, ``from <package>.x import``, ``import <package>.x``: the imports
    :func:`model_facts` keeps (matching only those is several times cheaper than all)."""
    own = re.escape(package.encode()) + rb"\.[\w.]*" if package else rb"(?!)"
    return re.compile(
        rb"^[ \t]*(?:from[ \t]+(\.[\w.]*|" + own + rb")[ \t]+import\b|import[ \t]+(" + own + rb"))",
        re.MULTILINE,
    )


@dataclass
class FileScan:
    """What one file contributes: its sites, suppressions, facts and problems."""

    path: str
    digest: str
    sites: list[Site] = field(default_factory=list)
    suppressions: list[Suppression] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    entry_classes: list[str] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    registrations: list[str] = field(default_factory=list)
    # top-level classes and their bases, of a file that may hold sites (liveness relations)
    classes: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    parsed: bool = False  # the parse succeeded (what went wrong after it was the analysis)
    # a syntax error outside the statements the check parses, in a file whose suppressions
    # it read (:func:`syntax_error_elsewhere`): reported, exit 2, the file still checked
    syntax_errors: list[Problem] = field(default_factory=list)
    # it can hold only single checks and was not analysed (:mod:`driftcheck.singles`)
    deferred: bool = False

    def is_empty(self) -> bool:
        """Whether the file contributes nothing to a run (most files of a tree)."""
        return not (
            self.sites or self.suppressions or self.entry_classes or self.imports
            or self.registrations or self.problems or self.classes or self.deferred
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the cache (problems are never cached)."""
        return {
            "path": self.path,
            "digest": self.digest,
            "sites": [s.to_dict() for s in self.sites],
            "suppressions": [s.to_dict() for s in self.suppressions],
            "entry_classes": self.entry_classes,
            "imports": self.imports,
            "registrations": self.registrations,
            "classes": [[name, list(bases)] for name, bases in self.classes],
            **({"deferred": True} if self.deferred else {}),
        }

    @staticmethod
    def from_dict(data: dict[str, Any]) -> FileScan:
        """Inverse of :meth:`to_dict`."""
        return FileScan(
            path=data["path"],
            digest=data["digest"],
            sites=[Site.from_dict(s) for s in data["sites"]],
            suppressions=[Suppression.from_dict(s) for s in data["suppressions"]],
            entry_classes=list(data.get("entry_classes", [])),
            imports=list(data.get("imports", [])),
            registrations=list(data.get("registrations", [])),
            classes=[(name, tuple(bases)) for name, bases in data.get("classes", [])],
            deferred=bool(data.get("deferred", False)),
        )


def content_digest(data: bytes) -> str:
    """The content hash used by the cache."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def source_encoding(data: bytes) -> str:
    """The encoding Python reads ``data`` with (PEP 263 coding line, UTF-8 BOM).

    The first two lines are split as Python's tokenizer splits them (``\r\n``, ``\r`` or
    ``\n``): ``io.BytesIO.readline`` splits at ``\n`` only, so a file with ``\r`` line
    endings and a coding line was rejected as having none.
    """
    readline = iter(first_lines(data, 2)).__next__
    return tokenize.detect_encoding(readline)[0]


LINE_END = re.compile(rb"\r\n|\r|\n")


def first_lines(data: bytes, count: int) -> list[bytes]:
    """``data.splitlines(keepends=True)[:count]``, without splitting the rest of the file."""
    lines: list[bytes] = []
    start = 0
    while len(lines) < count and start < len(data):
        found = LINE_END.search(data, start)
        end = found.end() if found is not None else len(data)
        lines.append(data[start:end])
        start = end
    return lines


def decode_source(data: bytes) -> str:
    """Decode Python source honouring a PEP 263 coding line and a UTF-8 BOM."""
    encoding = source_encoding(data)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def scan_bytes(rel: str, data: bytes, spec: ScanSpec) -> FileScan:
    """Scan one file's bytes (a file that contributes something carries its content hash:
    the fixer checks it before writing; hashing the rest of the tree would be wasted)."""
    result = _scan(rel, data, spec)
    if not result.is_empty():
        result.digest = content_digest(data)
    return result


def _scan(rel: str, data: bytes, spec: ScanSpec) -> FileScan:
    prefilter, register_calls = spec.prefilter, spec.register_calls
    result = FileScan(path=rel, digest="")
    interesting = prefilter.may_match(data)
    if spec.model_marker and spec.model_marker.encode() in data:
        result.entry_classes, result.imports = model_facts(data, rel, spec.model_marker)
    wants_registry = any(call.encode() in data for call in register_calls)
    if not (interesting or wants_registry):
        if result.entry_classes:  # a model file's classes may inherit a block's attribute
            result.classes = class_headers(data.decode("utf-8", "replace"))
        return result
    try:
        source = decode_source(data)
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:
        result.problems.append(
            Problem(rel, _bad_byte_line(data, exc), f"cannot decode source: {exc}")
        )
        return result
    if "\x00" in source:
        line = source[: source.index("\x00")].count("\n") + 1
        result.problems.append(Problem(rel, line, "source contains a NUL byte; file skipped"))
        return result
    tokens = None
    quoted = prefilter.quoted_values(data) if interesting else []
    if interesting and spec.singles is not None and not (wants_registry or result.entry_classes):
        tokens = spec.singles.read(data, source, quoted)
        if tokens is not None and tokens.single_checks_anywhere():
            result.deferred = True
            return result
    hot, defining = prefilter.hot_and_defining_lines(data, quoted) if interesting else (None, None)
    # a large file's analysis makes millions of nodes that live until it ends, and none that
    # form cycles: collecting while they are made would walk them again and again (a sixth
    # of a 20 MB file's scan); they are collected, if ever, once it is done
    paused = len(data) > PAUSE_COLLECTOR_BYTES and gc.isenabled()
    if paused:
        gc.disable()
    try:
        walked = spec.walked(data) if interesting else (spec.universes, None)
        _analyse(result, source, spec, hot, wants_registry, tokens, defining, walked)
    except SyntaxError as exc:
        message = exc.msg if hasattr(exc, "msg") else str(exc)
        result.problems.append(Problem(rel, exc.lineno, f"syntax error: {message}; file skipped"))
    except (RecursionError, MemoryError):
        step = "analyse" if result.parsed else "parse"
        result.problems.append(
            Problem(rel, None, f"expression nested too deeply to {step}; file skipped")
        )
    finally:
        if paused:
            gc.enable()
    if result.problems:
        result.sites, result.suppressions, result.registrations = [], [], []
    return result


def _analyse(
    result: FileScan,
    source: str,
    spec: ScanSpec,
    hot: list[int] | None,
    wants_registry: bool,
    tokens: Tokens | None = None,
    defining: list[int] | None = None,
    walked: tuple[tuple[Universe, ...], list[list[int]] | None] | None = None,
) -> None:
    """Parse what can hold a site (the whole file when the registry is wanted: its calls may
    sit anywhere) and collect sites, suppressions and registrations into ``result``. A syntax
    error is reported where the check reads (the statements around its hot lines); ``--fix``
    compiles the whole file before it changes it. With the file's member ``tokens``, a file
    none of whose statements holds two members of one universe is deferred once parsed
    (:mod:`driftcheck.singles`). ``walked``: the universes walked for sites and their own hot
    lines (:meth:`ScanSpec.walked`; default: the run's universes)."""
    rel = result.path
    whole = wants_registry
    module = parse_for_sites(source, rel, None if whole else hot or [], None if whole else defining)
    result.parsed = True
    if tokens is not None and tokens.apart(module.tree):
        result.deferred = True
        return
    if hot is not None:
        universes, own_hot = walked if walked is not None else (spec.universes, None)
        sites = find_sites(
            universes,
            source,
            module.tree,
            rel,
            hot,
            grow=module.parse_lines,
            operations=dict(spec.operations),
            own_hot_lines=own_hot,
        )
        reads = LocalReads(source, module.tree)
        result.sites = [
            replace(site, unread=unread) if (unread := reads.unread(site)) else site
            for site in sites
        ]
        result.suppressions = parse_suppressions(source)
        if result.suppressions:
            result.syntax_errors = syntax_error_elsewhere(rel, source)
        result.classes = class_headers(source)
    if wants_registry:
        result.registrations = registrations(module.tree, spec.register_calls)


def syntax_error_elsewhere(rel: str, source: str) -> list[Problem]:
    """The syntax error of a file whose parsed statements hold none (empty when it parses).

    Only a file holding a suppression is parsed whole for it: its comments were read past the
    error (:mod:`driftcheck.suppressions`), and a suppression beside a broken line must not
    pass silently. Every other file's statements outside the check are left unparsed (the
    README: parsing every file whole would cost about 20 times a cold check)."""
    try:
        ast.parse(source, rel)
    except SyntaxError as exc:
        message = exc.msg if hasattr(exc, "msg") else str(exc)
        note = "outside the statements checked: the file's sites and suppressions were still read"
        return [Problem(rel, exc.lineno, f"syntax error: {message} ({note})", checked=True)]
    except (RecursionError, MemoryError, ValueError):
        return []
    return []


def _bad_byte_line(data: bytes, exc: Exception) -> int | None:
    start = getattr(exc, "start", None)
    if isinstance(start, int):
        return data[:start].count(b"\n") + 1
    return None


def model_facts(data: bytes, rel: str, marker: str) -> tuple[list[str], list[str]]:
    """Architectures a model module serves (the pack's ``model-marker``, ``marker``: the
    names assigned to it) and the sibling modules it imports.

    Only imports from the module's own package are kept (``sglang.srt.models.qwen2_moe`` from
    ``sglang/srt/models/qwen3_moe.py``, relative ones resolved): those are the model files it
    can reuse, and keeping every import of every model file would dominate the cache.
    """
    entries: list[str] = []
    for match in at_line_starts(data, marker.encode(), marker_pattern(marker), column_zero=True):
        entries.extend(name.decode() for name in re.findall(rb"[A-Za-z_]\w*", match.group(1)))
    parts = rel.split("/")[:-1]
    if parts and parts[0] in ("python", "src"):
        parts = parts[1:]
    package = ".".join(parts)
    imports = set()
    for match in at_line_starts(data, b"import", package_imports(package)):
        module = (match.group(1) or match.group(2)).decode()
        if module.startswith("."):
            module = package + "." + module.lstrip(".") if package else module.lstrip(".")
        if package and module.startswith(package + "."):
            imports.add(module)
    return entries, sorted(imports)


def registrations(tree: ast.Module, register_calls: tuple[str, ...]) -> list[str]:
    """First string arguments of registry calls such as ``register_deepep_v2_model("Arch")``."""
    found: list[str] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and node.args
            and terminal_name(node.func) in register_calls
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append(node.args[0].value)
    return found


def scan_path(abspath: str, rel: str, spec: ScanSpec, size: int = 0) -> FileScan:
    """Worker entry point: read ``abspath`` (``size``: its size when the walk knows it) and
    scan it."""
    try:
        data = read_file(abspath, size)
    except OSError as exc:
        scan = FileScan(path=rel, digest="")
        scan.problems.append(Problem(rel, None, f"cannot read file: {exc.strerror or exc}"))
        return scan
    return scan_bytes(rel, data, spec)


def read_file(path: str, size: int = 0) -> bytes:
    """The bytes of ``path``, read to its end (``size`` is a hint: the first read asks for one
    byte more, so a file of that size is read in one call). Plain descriptor reads: a buffered
    file object costs more than the read itself for most source files."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        parts = []
        want = size + 1 if size > 0 else 1 << 16
        while part := os.read(descriptor, want):
            parts.append(part)
            want = 1 << 16
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(descriptor)


sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
