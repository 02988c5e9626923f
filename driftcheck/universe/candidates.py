"""The universes of a tree that no pack recognises and no configuration names.

Such a tree still holds what a family ranges over, and the hand-written copies show which:

1. every enum class of the tree with two or more members, and every class attribute
   annotated ``Literal["a", "b", ...]`` (a string setting), is a *candidate*; an enum held
   by a class of its module whose methods compare ``self.<attribute>`` with its members
   (vLLM's ``Platform._enum``) is read with that class, whose predicates it answers;
2. a candidate whose members are mentioned two or more at a time (``Enum.MEMBER``, its
   ``.is_*()`` predicates, its string values) in at least two files recurs in enumerations
   across files, and becomes a universe; the names compared with an enum's members in two
   files or more (``self.distributed_type in (DistributedType.A, ...)``) hold it (its
   value attributes: :func:`_with_holders`);
3. a predicate of the universe's own classes (a zero-argument method or property of the
   enum or of the class holding it) that is true for two or more members, and not all, with
   no narrowing, and that at least two other files name, is the tree's own helper for that
   set: its family is *found*, as a configured canonical would be (:func:`helper_families`;
   vLLM's ``Platform.is_cuda_alike``), and no family of that universe is inferred;
4. the families of every other universe are inferred from its copies (:mod:`driftcheck.infer`),
   exactly as for a fork whose helper is missing, and a universe without one is dropped.

The tree is read as text first (a byte search per file), and only a file mentioning an enum
base or ``Literal[`` is parsed, and only its class bodies and the methods that can answer
for an enum (``is_*`` methods, those of a class naming an enum of the file:
:func:`_hot_lines`); the modules of the chosen universes are then parsed whole. Nothing is
imported.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..model import Family, MethodPredicate
from ..partial import parse_for_sites
from ..project import module_name_of
from .domain import Domain, attributes_of
from .enums import enum_members, is_enum_class, zero_arg_methods
from .source import ModuleSource, SourceIndex, UniverseError, index_module
from .vocabulary import Vocabulary, literal_values

MIN_FILES = 2  # files a candidate's members must recur in, two or more at a time
MAX_UNIVERSES = 8  # the most widely recurring candidates scanned for (each costs a scan's share)
SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages", "build", "dist"}
_CLASS = re.compile(rb"^class\s+(\w+)\s*\([^)]*(?:Enum|Flag)\b", re.M)
_ENUM_BASE = re.compile(rb"Enum\b|Flag\b")  # searched first: most files hold neither
_LITERAL = rb"Literal["
# a definition at column 0 (group 1: a class), decorators apart
_TOP_DEFINITION = re.compile(r"^(?:(class)|def|async\s+def)\b", re.M)
# a ``Literal`` of two values or more (a file holding only ``Literal["pixel_values"]`` holds
# no setting), and a module-level name bound to one (an alias a class attribute may use)
_SETTING = re.compile(rb"Literal\[[^\]]*,")
_ALIAS = re.compile(r"^(\w+)\s*(?::[^=\n]*)?=\s*(?:typing\.)?Literal\[", re.M)
# what mentions a member: an attribute (``Enum.MEMBER``, ``x.is_member()``) or a string
_WORD = re.compile(rb"\.[A-Za-z_][A-Za-z0-9_]*|\"[^\"\n]{1,64}\"|'[^'\n]{1,64}'")


@dataclass(frozen=True)
class Candidate:
    """A domain a tree could range over, and the words that mention each of its members."""

    domain: Domain
    words: dict[bytes, str]  # ``MEMBER``, ``is_member``, ``"value"`` -> the member's value
    name: str
    # the zero-argument methods and properties of its classes (helpers it may have), and,
    # once chosen, how many files other than its own name each
    predicates: tuple[str, ...] = ()
    callers: Mapping[str, int] = field(default_factory=dict)
    # of an enum, once chosen: the names compared with its members in two files or more
    # (``self.distributed_type in (DistributedType.A, DistributedType.B)``), which hold it
    value_attributes: tuple[str, ...] = ()


def python_files(root: Path, excluded: Callable[[str], bool]) -> Iterator[tuple[Path, str]]:
    """Every ``.py`` file under ``root`` and its path relative to it (hidden and build
    directories, and what ``excluded`` rejects, left out), in a stable order."""
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = Path(directory, name)
            rel = path.relative_to(root).as_posix()
            if not excluded(rel):
                yield path, rel


def _enum_candidate(module: ModuleSource, cls: ast.ClassDef) -> Candidate | None:
    members = enum_members(cls)
    if len(members) < 2:
        return None
    words: dict[bytes, str] = {}
    for member in members:
        words[f".{member.attr}".encode()] = member.value
        for quote in ('"', "'"):
            words[f"{quote}{member.value}{quote}".encode()] = member.value
    holder = _holder_of(module, cls)
    methods, _ = zero_arg_methods(cls, module)
    if holder is not None:
        methods = {**zero_arg_methods(holder[0], module)[0], **methods}
    by_word = {m.value.lower(): m.value for m in members} | {
        m.attr.lower(): m.value for m in members
    }
    for name in methods:
        if name.startswith("is_") and name[3:].lower() in by_word:
            words[f".{name}".encode()] = by_word[name[3:].lower()]
    names = tuple(sorted(methods))
    if holder is None:
        return Candidate(Domain(module, cls), words, cls.name, names)
    return Candidate(Domain(module, cls, module, holder[0], holder[1]), words, cls.name, names)


def _holder_of(module: ModuleSource, enum: ast.ClassDef) -> tuple[ast.ClassDef, str] | None:
    """The class of ``module`` (and its attribute) whose methods compare ``self.<attribute>``
    with members of ``enum`` (``self._enum == PlatformEnum.CUDA``), if one does."""
    for cls in module.classes.values():
        if cls is enum:
            continue
        for node in ast.walk(cls):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            attrs = attributes_of(sides, "self")
            if attrs and attributes_of(sides, enum.name):
                return cls, attrs[0]
    return None


def _setting_candidates(module: ModuleSource, index: SourceIndex) -> list[Candidate]:
    found = []
    for cls in module.classes.values():
        for stmt in cls.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            values = literal_values(stmt.annotation, module, index)
            if len(values) < 2:
                continue
            words = {
                f"{quote}{value}{quote}".encode(): value for value in values for quote in "\"'"
            }
            domain = Domain(None, None, module, cls, stmt.target.id)
            names = tuple(sorted(zero_arg_methods(cls, module)[0]))
            found.append(Candidate(domain, words, f"{cls.name}.{stmt.target.id}", names))
    return found


def candidate_universes(index: SourceIndex, excluded: Callable[[str], bool]) -> list[Candidate]:
    """The candidates of the tree under ``index.root`` whose members recur in enumerations
    across files, the most widely recurring first (one per set of members: the same
    ``Literal`` written on two classes is one universe; at most :data:`MAX_UNIVERSES`)."""
    candidates, words_of, paths = _gather(index, excluded)
    files = _recurrences(candidates, words_of)
    ranked = sorted(
        (number for number in range(len(candidates)) if files[number] >= MIN_FILES),
        key=lambda number: (-files[number], number),
    )
    chosen: list[Candidate] = []
    sets: set[frozenset[str]] = set()
    for number in ranked:
        members = frozenset(candidates[number].words.values())
        if members not in sets:
            sets.add(members)
            chosen.append(candidates[number])
    whole = [_whole(index, candidate) for candidate in chosen[:MAX_UNIVERSES]]
    return [
        _with_holders(_with_callers(c, words_of, paths), words_of, paths)
        for c in whole
        if c is not None
    ]


def _whole(index: SourceIndex, candidate: Candidate) -> Candidate | None:
    """``candidate`` read again from its module parsed whole (the universe is read from it)."""
    domain = candidate.domain
    partial = domain.enum_module or domain.holder_module
    assert partial is not None
    try:
        module = index.at(partial.path)
    except UniverseError:
        return None
    if domain.enum_class is not None:
        cls = module.classes.get(domain.enum_class.name)
        return _enum_candidate(module, cls) if cls is not None else None
    return next((c for c in _setting_candidates(module, index) if c.name == candidate.name), None)


def _with_callers(candidate: Candidate, words_of: list[set[bytes]], paths: list[Path]) -> Candidate:
    """``candidate`` with the number of files, its own modules apart, naming each of its
    predicates."""
    domain = candidate.domain
    own = {m.path for m in (domain.enum_module, domain.holder_module) if m is not None}
    names = {f".{name}".encode(): name for name in candidate.predicates}
    callers = dict.fromkeys(candidate.predicates, 0)
    for words, path in zip(words_of, paths, strict=True):
        if path in own:
            continue
        for word in words & names.keys():
            callers[names[word]] += 1
    return replace(candidate, callers=callers)


# a name compared with what follows (``x.name in (``, ``name ==``), right before an enum member
_COMPARED = re.compile(
    rb"([A-Za-z_]\w*)\s*(?:[!=]=|\bnot\s+in|\bin|\bis\s+not|\bis)\s*[(\[{]?\s*\Z"
)
KEYWORDS = frozenset({"not", "in", "is", "and", "or", "if", "elif", "return", "self", "cls"})


def _with_holders(candidate: Candidate, words_of: list[set[bytes]], paths: list[Path]) -> Candidate:
    """An enum ``candidate`` with its value attributes: the names (``x.name`` or ``name``)
    compared with its members (``==``, ``!=``, ``in``, ``not in``, ``is``) in
    :data:`MIN_FILES` files or more; each file mentioning a member is read again, and only
    the text just before each ``Enum.`` is matched."""
    enum = candidate.domain.enum_class
    if enum is None:
        return candidate
    mention = re.compile(re.escape(enum.name.encode()) + rb"\.")
    member_words = {word for word in candidate.words if word.startswith(b".")}
    files: dict[str, int] = {}
    for words, path in zip(words_of, paths, strict=True):
        if not words & member_words:
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        names = set()
        for match in mention.finditer(data):
            before = _COMPARED.search(data, max(0, match.start() - 160), match.start())
            if before is not None:
                names.add(before.group(1).decode())
        for name in names - KEYWORDS:
            files[name] = files.get(name, 0) + 1
    held = tuple(sorted(name for name, count in files.items() if count >= MIN_FILES))
    return replace(candidate, value_attributes=held)


def helper_families(
    candidate: Candidate, vocabulary: Vocabulary, index: SourceIndex
) -> list[Family]:
    """The tree's own helpers among the universe's predicates, each a family found (not
    inferred): a method or property of a class of the universe's modules true for two or
    more members and not all, with no narrowing, named in :data:`MIN_FILES` other files or
    more (its callers use it instead of enumerating); one per set of members, the most
    widely named (vLLM's ``Platform.is_cuda_alike``; not ``is_sleep_mode_available``, which
    one other file names)."""
    size = len(vocabulary.members)
    found: dict[frozenset[str], tuple[int, Family]] = {}
    for name, predicate in sorted(vocabulary.predicates.items()):
        members = predicate.members
        if not 2 <= len(members) < size or predicate.narrowing or predicate.conditions:
            continue
        callers = candidate.callers.get(name, 0)
        family = _helper_family(candidate, predicate, vocabulary, index)
        if callers < MIN_FILES or family is None:
            continue
        if members not in found or callers > found[members][0]:
            found[members] = (callers, family)
    ranked = sorted(found.values(), key=lambda f: (-f[0], f[1].qualified))
    return [family for _, family in ranked]


def _helper_family(
    candidate: Candidate, predicate: MethodPredicate, vocabulary: Vocabulary, index: SourceIndex
) -> Family | None:
    """The family of ``predicate``, defined by a class of one of the universe's modules (its
    members in the order its body names them), else None."""
    domain = candidate.domain
    for module in (domain.enum_module, domain.holder_module):
        if module is None or predicate.owner not in module.classes:
            continue
        method = next(
            (
                stmt
                for stmt in module.classes[predicate.owner].body
                if isinstance(stmt, ast.FunctionDef) and stmt.name == predicate.name
            ),
            None,
        )
        if method is None:
            return None
        named = [m for m in _named_order(method, vocabulary) if m in predicate.members]
        rest = [m.value for m in vocabulary.members if m.value in predicate.members]
        return Family(
            name=predicate.name,
            qualified=f"{module.name}:{predicate.owner}.{predicate.name}",
            path=index.rel(module.path),
            line=method.lineno,
            members=tuple(dict.fromkeys([*named, *rest])),
            label=predicate.name,
            access=predicate.access,
            owner=predicate.owner,
            universe=candidate.name,
        )
    return None


def _named_order(method: ast.FunctionDef, vocabulary: Vocabulary) -> list[str]:
    """The members ``method``'s body names (``Enum.MEMBER``, ``"value"``), in source order."""
    by_attr = {m.attr: m.value for m in vocabulary.members}
    values = {m.value for m in vocabulary.members}
    named: list[tuple[int, int, str]] = []
    for node in ast.walk(method):
        if isinstance(node, ast.Attribute) and node.attr in by_attr:
            named.append((node.lineno, node.col_offset, by_attr[node.attr]))
        elif isinstance(node, ast.Constant) and node.value in values:
            named.append((node.lineno, node.col_offset, str(node.value)))
    return list(dict.fromkeys(value for _, _, value in sorted(named)))


def _gather(
    index: SourceIndex, excluded: Callable[[str], bool]
) -> tuple[list[Candidate], list[set[bytes]], list[Path]]:
    """Every candidate of the tree, each file's words, and the files."""
    candidates: list[Candidate] = []
    words_of: list[set[bytes]] = []
    paths: list[Path] = []
    for path, _ in python_files(index.root, excluded):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        words_of.append(set(_WORD.findall(data)))
        paths.append(path)
        enums = [m.decode() for m in _CLASS.findall(data)] if _enum_base(data) else []
        settings = _LITERAL in data and _SETTING.search(data) is not None
        if not (enums or settings):
            continue
        module = _class_bodies(index, path, data, enums)
        if module is None:
            continue
        for cls in module.classes.values():
            candidate = _enum_candidate(module, cls) if is_enum_class(cls, module) else None
            if candidate is not None:
                candidates.append(candidate)
        if settings:
            candidates.extend(_setting_candidates(module, index))
    return candidates, words_of, paths


def _enum_base(data: bytes) -> bool:
    """Whether ``data`` names ``Enum`` or ``Flag`` as a word's end: a plain search for either
    first (a pattern that starts with an alternation is matched at every byte)."""
    return (b"Enum" in data or b"Flag" in data) and _ENUM_BASE.search(data) is not None


def _class_bodies(
    index: SourceIndex, path: Path, data: bytes, enums: list[str]
) -> ModuleSource | None:
    """``path`` with its module-level code and class bodies parsed, and of its methods only
    those that can answer for an enum (:func:`_hot_lines`): what a candidate is read from
    (None when it does not parse)."""
    try:
        source = data.decode("utf-8")
        tree = parse_for_sites(source, str(path), _hot_lines(source, enums)).tree
    except (UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return index_module(path, tree, module_name_of(index.root, path))


def _hot_lines(source: str, enums: list[str]) -> list[int]:
    """The lines whose definitions a candidate reads: every line naming one of the file's
    ``enums`` (its header; a holder's comparisons, ``self._enum == PlatformEnum.CUDA``),
    every ``def is_`` (an enum's or a holder's predicates), and every line that writes
    ``Literal[`` or names a ``Literal`` alias of the module (a setting's annotation): each
    found by a plain search, its line counted once."""
    literal = "Literal[" in source
    aliases = _ALIAS.findall(source) if literal else []
    classes = [(m.start(), m.group(1) is not None) for m in _TOP_DEFINITION.finditer(source)]
    starts = [at for at, _ in classes]
    offsets = _occurrences(source, "def is_")
    if literal:
        offsets += _occurrences(source, "Literal[")
    for name in [*enums, *aliases]:
        for at in _occurrences(source, name):
            if _word_char(source, at - 1) or _word_char(source, at + len(name)):
                continue
            # an enum named outside a class (a module-level function) holds no holder's test
            index = bisect.bisect_right(starts, at) - 1
            if name in aliases or (index >= 0 and classes[index][1]):
                offsets.append(at)
    lines: list[int] = []
    line, position = 1, 0
    for offset in sorted(offsets):
        line += source.count("\n", position, offset)
        position = offset
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def _occurrences(text: str, needle: str) -> list[int]:
    """Every offset of ``needle`` in ``text``."""
    found, at = [], text.find(needle)
    while at != -1:
        found.append(at)
        at = text.find(needle, at + 1)
    return found


def _word_char(text: str, at: int) -> bool:
    return 0 <= at < len(text) and (text[at].isalnum() or text[at] == "_")


def _recurrences(candidates: list[Candidate], words_of: list[set[bytes]]) -> list[int]:
    """For each candidate, the number of files mentioning two or more of its members (each
    file's words looked up once, through the words of every candidate)."""
    mentions: dict[bytes, list[tuple[int, str]]] = {}
    for number, candidate in enumerate(candidates):
        for word, member in candidate.words.items():
            mentions.setdefault(word, []).append((number, member))
    files = [0] * len(candidates)
    for words in words_of:
        seen: dict[int, set[str]] = {}
        for word in words & mentions.keys():
            for number, member in mentions[word]:
                seen.setdefault(number, set()).add(member)
        for number, members in seen.items():
            files[number] += len(members) >= 2
    return files
