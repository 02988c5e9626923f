"""Ignore files, as git and ruff read them: ``.gitignore`` and ``.ignore`` in each directory.

A walk honours them by default (``respect-gitignore``, ruff's setting and default): a file or
directory they ignore is not checked and not fixed, and an ignored directory is not entered.
The rules are git's (``gitignore(5)``): blank lines and ``#`` comments are skipped, ``!``
re-includes, a trailing ``/`` matches directories only, a pattern with a ``/`` before its end
is anchored to its file's directory (otherwise it matches a name at any depth), ``*`` and
``?`` stop at ``/``, ``**`` spans directories, and the last matching line wins. A deeper
directory's files win over its ancestors', and in one directory ``.ignore`` wins over
``.gitignore``. As ruff's walker (the ``ignore`` crate) does, ``.gitignore`` and
``.git/info/exclude`` count only inside a git repository, while ``.ignore`` counts anywhere;
the files read are those from the repository root (outside one: the project root) down. The
user's global excludes file (``core.excludesFile``) is not read, so a run's answer does not
depend on who runs it.

Matching costs nothing in a tree without ignore files: a directory's listing already says
whether it holds one, and no pattern is tried until one is read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

GITIGNORE = ".gitignore"
DOT_IGNORE = ".ignore"
IGNORE_NAMES = (GITIGNORE, DOT_IGNORE)  # lower precedence first
GIT_EXCLUDE = os.path.join(".git", "info", "exclude")


@dataclass(frozen=True)
class Pattern:
    """One line of an ignore file, compiled."""

    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    anywhere: bool  # no ``/`` before its end: it matches an entry's name at any depth
    source: str  # its expression (over the entry's name when ``anywhere``, else its path)
    glob: str  # the glob itself (a literal one is screened by a set, ``*.ext`` by suffix)


def _glob_regex(glob: str) -> str:
    """The regular expression of one gitignore glob (its slashes already interpreted)."""
    out = []
    i = 0
    while i < len(glob):
        char = glob[i]
        if glob.startswith("**/", i) and (i == 0 or glob[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("/.*")
            i += 3
        elif char == "*":
            while i < len(glob) and glob[i] == "*":
                i += 1  # any other run of asterisks is one
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = glob.find("]", i + 2)
            if end < 0:
                out.append(re.escape(char))
                i += 1
                continue
            body = glob[i + 1 : end]
            if body[0] in "!^":
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif char == "\\" and i + 1 < len(glob):
            out.append(re.escape(glob[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def parse_line(line: str) -> Pattern | None:
    """The pattern of one ignore-file line, or None for a blank line or a comment."""
    line = line.rstrip("\n").rstrip("\r")
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        stripped += " "  # an escaped trailing space is kept
    line = stripped
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated or line.startswith(("\\!", "\\#")):
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anywhere = "/" not in line
    line = line.lstrip("/")
    expression = _glob_regex(line)
    try:
        regex = re.compile(expression, re.DOTALL)
    except re.error:
        return None  # git skips a pattern it cannot read; so does the walk
    return Pattern(regex, negated, dir_only, anywhere, f"(?:{expression})", line)


def parse(text: str) -> tuple[Pattern, ...]:
    """Every pattern of an ignore file's text, in order."""
    return tuple(p for line in text.splitlines() if (p := parse_line(line)) is not None)


GLOB_CHARS = frozenset("*?[\\")


@dataclass(frozen=True)
class Screen:
    """What any of a level's patterns matches, told quickly: most entries match no line, and
    a set lookup, a suffix test and at most two expressions say so (a literal name such as
    ``__pycache__`` or ``*.so`` costs no expression at all)."""

    names: frozenset[str]
    suffixes: tuple[str, ...]
    by_name: re.Pattern[str] | None
    paths: frozenset[str]
    by_path: re.Pattern[str] | None

    @staticmethod
    def of(patterns: tuple[Pattern, ...]) -> Screen:
        """The screen of ``patterns``."""
        names, suffixes, paths = set(), [], set()
        named, pathed = [], []
        for pattern in patterns:
            literal = GLOB_CHARS.isdisjoint(pattern.glob)
            tail = pattern.glob[1:]
            if pattern.anywhere and literal:
                names.add(pattern.glob)
            elif pattern.anywhere and pattern.glob[0] == "*" and GLOB_CHARS.isdisjoint(tail):
                suffixes.append(tail)
            elif pattern.anywhere:
                named.append(pattern)
            elif literal:
                paths.add(pattern.glob)
            else:
                pathed.append(pattern)
        return Screen(
            frozenset(names), tuple(suffixes), _joined(named), frozenset(paths), _joined(pathed)
        )

    def matches(self, rel: str, name: str) -> bool:
        """Whether some pattern matches the entry ``name`` at ``rel``."""
        return (
            name in self.names
            or name.endswith(self.suffixes)
            or rel in self.paths
            or (self.by_name is not None and self.by_name.fullmatch(name) is not None)
            or (self.by_path is not None and self.by_path.fullmatch(rel) is not None)
        )


def _joined(patterns: list[Pattern]) -> re.Pattern[str] | None:
    """One expression matching what any of ``patterns`` matches."""
    return re.compile("|".join(p.source for p in patterns), re.DOTALL) if patterns else None


@dataclass(frozen=True)
class Level:
    """The patterns that apply below one directory (``base`` ends with the separator)."""

    base: str
    patterns: tuple[Pattern, ...]
    screens: tuple[Screen, Screen] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        files = tuple(p for p in self.patterns if not p.dir_only)
        object.__setattr__(self, "screens", (Screen.of(files), Screen.of(self.patterns)))

    def decide(self, path: str, name: str, is_dir: bool) -> bool | None:
        """True: ``path`` is ignored here; False: re-included (``!``); None: no line matches."""
        rel = path[len(self.base) :].replace(os.sep, "/")
        if not self.screens[is_dir].matches(rel, name):
            return None
        for pattern in reversed(self.patterns):
            if pattern.dir_only and not is_dir:
                continue
            if pattern.regex.fullmatch(name if pattern.anywhere else rel):
                return not pattern.negated
        return None


def _read(path: str) -> tuple[Pattern, ...]:
    """The patterns of the ignore file at ``path`` (none when it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return parse(handle.read())
    except OSError:
        return ()


@dataclass(frozen=True)
class Ignores:
    """The ignore rules in force in one directory: its ancestors' and its own, nearest last.

    ``git`` says whether ``.gitignore`` files count (the walk is inside a git repository);
    ``read`` collects every ignore file read, for the run's record."""

    levels: tuple[Level, ...] = ()
    git: bool = False

    def names(self) -> tuple[str, ...]:
        """The ignore file names that count here."""
        return IGNORE_NAMES if self.git else (DOT_IGNORE,)

    def enter(self, directory: str, present: list[str], read: list[str] | None) -> Ignores:
        """The rules below ``directory``, whose ignore files (of :meth:`names`) are ``present``
        (names); ``read`` receives each file's path."""
        patterns: tuple[Pattern, ...] = ()
        for name in self.names():
            if name in present:
                path = os.path.join(directory, name)
                patterns += _read(path)
                if read is not None:
                    read.append(path)
        if not patterns:
            return self
        base = directory.rstrip(os.sep) + os.sep
        return Ignores((*self.levels, Level(base, patterns)), self.git)

    def ignored(self, path: str, name: str, is_dir: bool) -> bool:
        """Whether the entry at ``path`` (named ``name``) is ignored: the nearest level with a
        matching line decides."""
        for level in reversed(self.levels):
            if path.startswith(level.base):
                decision = level.decide(path, name, is_dir)
                if decision is not None:
                    return decision
        return False


def ignores_above(
    directory: str, top: str, git_root: str | None, read: list[str] | None
) -> Ignores:
    """The rules in force in ``directory`` from the ignore files of ``top`` and every directory
    between (``directory``'s own are added when the walk enters it). ``git_root`` (the git
    repository's root, None outside one) makes ``.gitignore`` and ``.git/info/exclude`` count;
    ``read`` receives every path looked at, present or not (the run's record notices one
    appear)."""
    ignores = Ignores(git=git_root is not None)
    if git_root is not None:
        exclude = os.path.join(git_root, GIT_EXCLUDE)
        if read is not None:
            read.append(exclude)
        patterns = _read(exclude) if os.path.isfile(exclude) else ()
        if patterns:
            base = git_root.rstrip(os.sep) + os.sep
            ignores = Ignores((Level(base, patterns),), True)
    top = top.rstrip(os.sep)
    if directory != top and not directory.startswith(top + os.sep):
        return ignores
    chain = [top]
    rest = directory[len(top) :].strip(os.sep)
    for part in rest.split(os.sep) if rest else []:
        chain.append(os.path.join(chain[-1], part))
    for ancestor in chain[:-1]:
        paths = [os.path.join(ancestor, name) for name in ignores.names()]
        if read is not None:
            read.extend(paths)
        present = [os.path.basename(p) for p in paths if os.path.isfile(p)]
        ignores = ignores.enter(ancestor, present, None)
    return ignores
