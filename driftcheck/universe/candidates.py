"""The universes of a tree that no pack recognises and no configuration names.

Such a tree still holds what a family ranges over, and the hand-written copies show which:

1. every enum class of the tree with two or more members, and every class attribute
   annotated ``Literal["a", "b", ...]`` (a string setting), is a *candidate*; an enum held
   by a class of its module whose methods compare ``self.<attribute>`` with its members
   (vLLM's ``Platform._enum``) is read with that class, whose predicates it answers;
2. a candidate whose members are mentioned two or more at a time (``Enum.MEMBER``, its
   ``is_*()`` predicates, its string values) in at least two files recurs in enumerations
   across files, and becomes a universe;
3. the families of each universe are then inferred from its copies (:mod:`driftcheck.infer`),
   exactly as for a fork whose helper is missing, and a universe without one is dropped.

The tree is read as text first (a byte search per file), and only a file mentioning an enum
base or ``Literal[`` is parsed; nothing is imported.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .domain import Domain, attributes_of
from .enums import enum_members, is_enum_class, zero_arg_methods
from .source import ModuleSource, SourceIndex, UniverseError
from .vocabulary import literal_values

MIN_FILES = 2  # files a candidate's members must recur in, two or more at a time
MAX_UNIVERSES = 8  # the most widely recurring candidates scanned for (each costs a scan's share)
SKIPPED_DIRS = {"__pycache__", "node_modules", "site-packages", "build", "dist"}
_CLASS = re.compile(rb"^class\s+\w+\s*\([^)]*(?:Enum|Flag)\b", re.M)
_LITERAL = rb"Literal["
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*|\"[^\"\n]{1,64}\"|'[^'\n]{1,64}'")


@dataclass(frozen=True)
class Candidate:
    """A domain a tree could range over, and the words that mention each of its members."""

    domain: Domain
    words: dict[bytes, str]  # ``MEMBER``, ``is_member``, ``"value"`` -> the member's value
    name: str


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
        words[member.attr.encode()] = member.value
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
            words[name.encode()] = by_word[name[3:].lower()]
    if holder is None:
        return Candidate(Domain(module, cls), words, cls.name)
    return Candidate(Domain(module, cls, module, holder[0], holder[1]), words, cls.name)


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
            found.append(Candidate(domain, words, f"{cls.name}.{stmt.target.id}"))
    return found


def candidate_universes(index: SourceIndex, excluded: Callable[[str], bool]) -> list[Candidate]:
    """The candidates of the tree under ``index.root`` whose members recur in enumerations
    across files, the most widely recurring first (one per set of members: the same
    ``Literal`` written on two classes is one universe; at most :data:`MAX_UNIVERSES`)."""
    candidates, words_of = _gather(index, excluded)
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
    return chosen[:MAX_UNIVERSES]


def _gather(
    index: SourceIndex, excluded: Callable[[str], bool]
) -> tuple[list[Candidate], list[set[bytes]]]:
    """Every candidate of the tree, and each file's words."""
    candidates: list[Candidate] = []
    words_of: list[set[bytes]] = []
    for path, _ in python_files(index.root, excluded):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        words_of.append(set(_WORD.findall(data)))
        if not (_CLASS.search(data) or _LITERAL in data):
            continue
        try:
            module = index.at(path)
        except UniverseError:
            continue
        for cls in module.classes.values():
            candidate = _enum_candidate(module, cls) if is_enum_class(cls, module) else None
            if candidate is not None:
                candidates.append(candidate)
        if _LITERAL in data:
            candidates.extend(_setting_candidates(module, index))
    return candidates, words_of


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
