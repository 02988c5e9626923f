"""Hypothesis strategies: random backend universes and model files that embed enumerations.

A generated :class:`Case` is a small tree, written by :meth:`Case.write`::

    pyproject.toml        [tool.driftcheck] canonical = ["pkg.utils:<helper>"], value-attributes, label
    pkg/utils.py          enum <E> (string members, ``is_*`` methods ``return self == E.X``),
                          ``def <getter>() -> E``, ``def <helper>() -> bool`` (the family)
    pkg/models/m<k>.py    sites in every form the engine supports, among unrelated code

Every site is data (:class:`SiteSpec`) and knows what the engine must say about it
(:meth:`SiteSpec.expected`): nothing when it names fewer than two family members or misses
none, else exactly one finding with its missing and extra members. Sites are plain
assignments and returns so that they classify as property predicates.

Profiles: ``ci`` (the default) is derandomized and small enough for the suite's time budget;
``thorough`` (``DRIFTCHECK_HYPOTHESIS_PROFILE=thorough``) runs many more, random examples.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

PROFILES = {
    "ci": settings(
        derandomize=True,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    ),
    "thorough": settings(
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    ),
}
PROFILE_NAME = os.environ.get("DRIFTCHECK_HYPOTHESIS_PROFILE", "ci")
PROFILE = PROFILES[PROFILE_NAME]
SCALE = {"ci": 1, "thorough": 20}[PROFILE_NAME]


def examples(count: int) -> settings:
    """The active profile with ``count`` examples (times the profile's scale)."""
    return settings(PROFILE, max_examples=count * SCALE)


START, END = "\x01", "\x02"  # site markers in rendered text, removed by Case.write
VALUE_ATTRIBUTE = "moe_a2a_backend"
COMMENT_WORDS = (
    "keep",
    "in sync",
    "see the helper",
    "TODO",
    "order matters",
    "x",
    "!",
    "(a)",
    "café",
    "Größe ±",
    "page\x0cbreak",  # a form feed: str.splitlines breaks here, Python's tokenizer does not
    "next\x85line",  # NEL, likewise (both encodable in latin-1)
)


# -- universes ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class GenUniverse:
    """A backend enum, its getter and one canonical family helper, as generated."""

    enum: str
    getter: str
    helper: str
    members: tuple[tuple[str, str], ...]  # (ATTR, value) in declaration order
    family: tuple[str, ...]  # values in the order the helper's body tests them
    helper_form: str  # alias | getter | multiline
    label: str

    @property
    def values(self) -> tuple[str, ...]:
        """Member values in declaration order."""
        return tuple(value for _, value in self.members)

    def attr(self, value: str) -> str:
        """The enum attribute of ``value``."""
        return next(a for a, v in self.members if v == value)

    def declared(self, values: set[str] | frozenset[str]) -> list[str]:
        """``values`` in declaration order (how one operand's members are listed)."""
        return [v for v in self.values if v in values]

    def utils_source(self) -> str:
        """``pkg/utils.py``."""
        lines = ['"""Generated backend utilities."""', "", "from enum import Enum", "", ""]
        lines.append(f"class {self.enum}(Enum):")
        lines += [f'    {attr} = "{value}"' for attr, value in self.members]
        for attr, value in self.members:
            lines += [
                "",
                f"    def is_{value}(self):",
                f"        return self == {self.enum}.{attr}",
            ]
        first = self.members[0][0]
        lines += [
            "",
            "",
            f"def {self.getter}() -> {self.enum}:",
            f"    return {self.enum}.{first}",
            "",
            "",
        ]
        lines.append(f"def {self.helper}() -> bool:")
        if self.helper_form == "alias":
            lines.append(f"    backend = {self.getter}()")
            lines.append("    return " + " or ".join(f"backend.is_{v}()" for v in self.family))
        elif self.helper_form == "getter":
            lines.append(
                "    return " + " or ".join(f"{self.getter}().is_{v}()" for v in self.family)
            )
        else:
            lines += [f"    backend = {self.getter}()", "    return ("]
            lines += [
                f"        {'or ' if i else ''}backend.is_{v}()" for i, v in enumerate(self.family)
            ]
            lines.append("    )")
        return "\n".join(lines) + "\n"

    def pyproject(self) -> str:
        """``pyproject.toml`` naming the helper, the value attribute and the label."""
        return (
            "[tool.driftcheck]\n"
            f'canonical = ["pkg.utils:{self.helper}"]\n'
            f'value-attributes = ["{VALUE_ATTRIBUTE}"]\n'
            f'label = "{self.label}"\n'
        )


_value = st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True)


@st.composite
def universes(draw: st.DrawFn) -> GenUniverse:
    """A random universe: 3-7 members, a family of at least two of them."""
    values = draw(st.lists(_value, min_size=3, max_size=7, unique=True))
    renamed = draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values)))
    attrs = []
    for value, rename in zip(values, renamed, strict=True):
        attr = f"M_{value.upper()}" if rename else value.upper()
        attrs.append(attr)
    family_size = draw(st.integers(2, len(values)))
    family = draw(st.permutations(values))[:family_size]
    name = draw(st.from_regex(r"[a-z]{2,6}", fullmatch=True))
    return GenUniverse(
        enum=f"{name.capitalize()}Backend",
        getter=f"get_{name}_backend",
        helper=f"is_{name}_family",
        members=tuple(zip(attrs, values, strict=True)),
        family=tuple(family),
        helper_form=draw(st.sampled_from(["alias", "getter", "multiline"])),
        label=f"{name.capitalize()}-family",
    )


# -- sites -------------------------------------------------------------------------------------
METHOD_FORMS = ("or-chain", "not-or", "and-not")
VALUE_FORMS = ("in", "not-in", "eq-chain", "ne-chain")
NEGATIVE = ("not-or", "and-not", "not-in", "ne-chain")


@dataclass(frozen=True)
class Layout:
    """How one site is spelled: everything that must not change what the engine reports."""

    multiline: bool = False
    comments: tuple[str | None, ...] = ()  # after operand i (multiline only)
    paren_operands: tuple[bool, ...] = ()
    trailing_comma: bool = False
    collection: str = "tuple"  # tuple | list | set | frozenset
    quote: str = '"'
    reversed_eq: bool = False
    identity: bool = False  # ``is`` / ``is not`` (enum members only)
    others: tuple[int, ...] = ()  # positions of unrelated operands (``self.ready``) in a chain
    group: tuple[int, int] | None = None  # operands [i, j) nested in parentheses: ``a or (b or c)``
    backslash: bool = False  # one line per operand with ``\\`` continuations (no brackets)


@dataclass(frozen=True)
class SiteSpec:
    """One enumeration: its form, the members it names (in source order) and its spelling."""

    index: int
    form: str
    operand: str  # method | string | enum | constant
    members: tuple[str, ...]
    receiver: str  # getter | alias | self | param | module-alias | value | self-value | bare-value | dot-value
    container: str  # one of CONTAINERS
    wrapper: str  # plain | paren | ternary-body | ternary-test | call | labelled-call | keyword
    nest: str  # one of NESTS
    layout: Layout = field(default_factory=Layout)

    @property
    def code(self) -> str:
        """The rule the site falls under."""
        return "DC001" if self.operand == "method" else "DC003"

    @property
    def subject(self) -> str:
        """How the finding names the site: the keyword, the assigned name or the function."""
        if self.wrapper == "keyword":
            return f"kw_{self.index}"
        if self.container in ("function-return", "async-return", "nested-return", "method-return"):
            return f"uses_{self.index}"
        return f"flag_{self.index}"

    def expected(self, universe: GenUniverse, path: str, line: int, col: int) -> tuple | None:
        """The finding the engine must report, as (code, path, line, col, message, missing,
        extra), or None."""
        family = universe.family
        present: list[str] = []
        operands = [self.members] if self.form in ("in", "not-in") else [(m,) for m in self.members]
        for operand in operands:
            for member in universe.declared(set(operand)):
                if member not in present:
                    present.append(member)
        overlap = [m for m in family if m in present]
        missing = tuple(m for m in family if m not in present)
        if len(overlap) < 2 or not missing:
            return None
        extra = tuple(m for m in present if m not in family)
        verb = "excludes" if self.form in NEGATIVE else "enumerates"
        message = (
            f"{self.subject} {verb} {len(overlap)} of {len(family)} {universe.label} backends; "
            f"missing {', '.join(missing)} (canonical: {universe.helper})"
        )
        return (self.code, path, line, col, message, missing, extra)


def _receiver_text(spec: SiteSpec, universe: GenUniverse) -> str:
    i = spec.index
    return {
        "getter": f"{universe.getter}()",
        "alias": f"backend_{i}",
        "module-alias": f"_backend_{i}",
        "self": f"self._backend_{i}",
        "param": f"be_{i}",
        "value": f"args_{i}.{VALUE_ATTRIBUTE}",
        "self-value": f"self.server_args.{VALUE_ATTRIBUTE}",
        "bare-value": VALUE_ATTRIBUTE,
        "dot-value": f"{universe.getter}().value",
    }[spec.receiver]


def _value_text(spec: SiteSpec, universe: GenUniverse, value: str) -> str:
    if spec.operand == "enum":
        return f"{universe.enum}.{universe.attr(value)}"
    q = spec.layout.quote
    return f"{q}{value}{q}"


def _join(parts: list[str], separator: str, spec: SiteSpec, cont: str) -> str:
    """Operands joined by `` or ``/`` and ``/``, ``, ``: on one line, one per line with
    comments after them (the caller wraps multi-line text in brackets), or one per line with
    backslash continuations."""
    layout = spec.layout
    if layout.backslash and separator != ", ":
        return (" \\\n" + cont + separator.strip() + " ").join(parts)
    if not layout.multiline:
        return separator.join(parts)
    out = parts[0]
    for i, part in enumerate(parts[1:]):
        comment = layout.comments[i] if i < len(layout.comments) else None
        if separator == ", ":
            out += "," + (f"  # {comment}" if comment else "") + "\n" + cont + part
        else:
            out += (
                (f"  # {comment}" if comment else "") + "\n" + cont + separator.strip() + " " + part
            )
    return out


def _chain(spec: SiteSpec, operands: list[str], separator: str, other: str, cont: str) -> str:
    """A boolean chain of ``operands`` with the layout's unrelated operands and nested group."""
    layout = spec.layout
    items = list(operands)
    for position in sorted(layout.others, reverse=True):
        items.insert(min(position, len(items)), other)
    if layout.group is not None:
        first, stop = layout.group
        stop = min(stop, len(items))
        if stop - first >= 2 and stop - first < len(items):
            items[first:stop] = ["(" + separator.join(items[first:stop]) + ")"]
    return _join(items, separator, spec, cont)


def render_expression(spec: SiteSpec, universe: GenUniverse, cont: str) -> str:
    """The site's expression; multi-line text appears inside brackets or after backslashes."""
    layout = spec.layout
    receiver = _receiver_text(spec, universe)
    other = f"ready_{spec.index}"

    def paren(i: int, text: str) -> str:
        wrap = i < len(layout.paren_operands) and layout.paren_operands[i]
        return f"({text})" if wrap else text

    if spec.operand == "method":
        calls = [f"{receiver}.is_{m}()" for m in spec.members]
        if spec.form == "and-not":
            return _chain(
                spec, [paren(i, f"not {c}") for i, c in enumerate(calls)], " and ", other, cont
            )
        chain = _chain(spec, [paren(i, c) for i, c in enumerate(calls)], " or ", other, cont)
        if spec.form == "not-or":
            return f"not ({chain})"
        return chain
    if spec.form in ("in", "not-in"):
        op = "not in" if spec.form == "not-in" else "in"
        if spec.operand == "constant":
            return f"{receiver} {op} _BACKENDS_{spec.index}"
        return f"{receiver} {op} {render_collection(spec, universe, cont)}"
    negative = spec.form == "ne-chain"
    op = ("is not" if negative else "is") if layout.identity else ("!=" if negative else "==")
    tests = []
    for i, member in enumerate(spec.members):
        value = _value_text(spec, universe, member)
        text = (
            f"{value} {op} {receiver}"
            if layout.reversed_eq and op in ("==", "!=")
            else f"{receiver} {op} {value}"
        )
        tests.append(paren(i, text))
    return _chain(spec, tests, " and " if negative else " or ", other, cont)


def render_collection(spec: SiteSpec, universe: GenUniverse, cont: str) -> str:
    """The literal of an ``in`` test or of a constant."""
    layout = spec.layout
    items = [_value_text(spec, universe, m) for m in spec.members]
    body = _join(items, ", ", spec, cont) if not layout.backslash else ", ".join(items)
    trailing = (
        "," if layout.trailing_comma or (layout.collection == "tuple" and len(items) == 1) else ""
    )
    if layout.multiline and not layout.backslash:
        body = "\n" + cont + body + trailing + "\n" + cont[:-1]
        trailing = ""
    open_, close = {"tuple": "()", "list": "[]", "set": "{}", "frozenset": "{}"}[layout.collection]
    text = f"{open_}{body}{trailing}{close}"
    return f"frozenset({text})" if layout.collection == "frozenset" else text


def render_value(spec: SiteSpec, universe: GenUniverse, cont: str, flag: str) -> str:
    """The statement's right-hand side: the marked expression inside its wrapper."""
    inner = START + render_expression(spec, universe, cont + "\t") + END
    bracketed = "\n" in inner and not spec.layout.backslash  # backslashes need no brackets
    if spec.wrapper == "plain":
        return f"(\n{cont}\t{inner}\n{cont})" if bracketed else inner
    if spec.wrapper == "paren":
        return f"(\n{cont}\t{inner}\n{cont})" if bracketed else f"({inner})"
    if spec.wrapper == "ternary-body":
        return f"({inner}) if {flag} else False"
    if spec.wrapper == "ternary-test":
        return f"1 if ({inner}) else 0" if bracketed else f"1 if {inner} else 0"
    if spec.wrapper == "call":
        return f"bool({inner})"
    if spec.wrapper == "labelled-call":  # non-ASCII text before the site on its line
        return f'configure("naïve Größe", {inner})'
    return f"configure(kw_{spec.index}={inner})"


# site shapes: (operand, form, receivers allowed per container kind)
_METHOD_RECEIVERS = {
    "module": ("getter", "module-alias"),
    "function": ("getter", "alias", "param"),
    "method": ("getter", "self"),
}
_VALUE_RECEIVERS = {
    "module": ("value",),
    "function": ("value", "bare-value", "dot-value"),
    "method": ("self-value", "value"),
}
_ENUM_RECEIVERS = {
    "module": ("getter", "module-alias"),
    "function": ("getter", "alias", "param"),
    "method": ("getter", "self"),
}


def _kind(container: str) -> str:
    if container in ("module", "class-attr"):
        return "module"
    return "method" if container in ("method-return", "init-assign") else "function"


@st.composite
def layouts(draw: st.DrawFn, count: int, operand: str, form: str) -> Layout:
    """A random spelling for a site with ``count`` operands."""
    multiline = draw(st.booleans())
    comments: tuple[str | None, ...] = ()
    if multiline:
        comments = tuple(
            draw(
                st.lists(
                    st.one_of(st.none(), st.sampled_from(COMMENT_WORDS)),
                    min_size=count,
                    max_size=count,
                )
            )
        )
    chain = form not in ("in", "not-in")
    rarely = st.sampled_from([False, False, False, True])
    parens = tuple(draw(st.lists(rarely, min_size=count, max_size=count))) if chain else ()
    others = (
        tuple(draw(st.lists(st.integers(0, count), max_size=2))) if chain and draw(rarely) else ()
    )
    group = None
    if chain and draw(rarely):
        first = draw(st.integers(0, count - 1))
        group = (first, draw(st.integers(first + 2, count + len(others) + 1)))
    return Layout(
        multiline=multiline,
        comments=comments,
        paren_operands=parens,
        trailing_comma=draw(st.booleans()),
        collection=draw(st.sampled_from(["tuple", "list", "set", "frozenset"])),
        quote=draw(st.sampled_from(['"', "'"])),
        reversed_eq=draw(st.booleans()) and operand != "enum",
        identity=operand == "enum" and form in ("eq-chain", "ne-chain") and draw(st.booleans()),
        others=others,
        group=group,
        backslash=chain and draw(rarely),
    )


CONTAINERS = (
    "module", "class-attr", "function-return", "function-assign", "async-return", "nested-return",
    "method-return", "init-assign",
)  # fmt: skip


@st.composite
def sites(draw: st.DrawFn, universe: GenUniverse, index: int) -> SiteSpec:
    """One site in a random form, container and spelling; members biased towards the family."""
    operand = draw(st.sampled_from(["method", "string", "enum", "constant"]))
    forms = (
        METHOD_FORMS
        if operand == "method"
        else ("in", "not-in")
        if operand == "constant"
        else VALUE_FORMS
    )
    form = draw(st.sampled_from(forms))
    container = draw(st.sampled_from(CONTAINERS))
    kind = _kind(container)
    table = {"method": _METHOD_RECEIVERS, "enum": _ENUM_RECEIVERS}.get(operand, _VALUE_RECEIVERS)
    receiver = draw(st.sampled_from(table[kind]))
    family_part = draw(
        st.lists(
            st.sampled_from(universe.family), min_size=0, max_size=len(universe.family), unique=True
        )
    )
    others = [v for v in universe.values if v not in universe.family]
    extra_part = (
        draw(st.lists(st.sampled_from(others), max_size=len(others), unique=True)) if others else []
    )
    members = draw(st.permutations(family_part + extra_part)) if family_part or extra_part else []
    if len(members) < 2:
        members = list(draw(st.permutations(universe.values)))[:2]
    wrapper = draw(
        st.sampled_from(
            ["plain", "paren", "ternary-body", "ternary-test", "call", "labelled-call", "keyword"]
        )
    )
    nest = draw(st.sampled_from(sorted(NESTS)))
    layout = draw(layouts(len(members), operand, form))
    return SiteSpec(
        index, form, operand, tuple(members), receiver, container, wrapper, nest, layout
    )


# -- unrelated code ----------------------------------------------------------------------------
def decoys(universe: GenUniverse, index: int) -> list[str]:
    """Code that names members, enum methods or the helper and must never be reported."""
    a, b = universe.values[0], universe.values[1]
    non_family = [v for v in universe.values if v not in universe.family]
    blocks = [
        # the same methods on an object that is not the backend
        f"def decoy_{index}(other):\n\treturn other.is_{a}() or other.is_{b}()\n",
        # member values compared with names that are not the backend
        f'def decoy_mode_{index}(mode, args):\n\treturn mode in ("{a}", "{b}") or args.transfer_backend in ("{a}", "{b}")\n',
        # single-backend tests
        f"def decoy_single_{index}():\n\treturn {universe.getter}().is_{a}()\n",
        # arithmetic and strings
        f'def unrelated_{index}(x, y):\n\tz = x * {index} + y\n\tif z > 3:\n\t\treturn "{a}"\n\treturn str(z)\n',
        f'class Unrelated{index}:\n\t"""Nothing to see."""\n\n\tdef __init__(self, n):\n\t\tself.n = n\n\n\tdef twice(self):\n\t\treturn self.n * 2\n',
    ]
    if non_family:
        # the helper plus a member it does not include: complete, nothing to report
        blocks.append(
            f"def decoy_helper_{index}():\n\treturn {universe.helper}() or {universe.getter}().is_{non_family[0]}()\n"
        )
    return blocks


# -- files and cases ---------------------------------------------------------------------------
NESTS = {
    "none": ([], 0, []),
    "if": (["if flag:"], 1, []),
    "for": (["for _ in range(2):"], 1, []),
    "while": (["while flag:"], 1, []),
    "with": (["with context():"], 1, []),
    "try": (["try:"], 1, ["except Exception:", "\tpass"]),
    "match": (["match flag:", "\tcase _:"], 2, []),
}


def _nest(spec: SiteSpec, statement: str) -> list[str]:
    """``statement`` inside the site's compound statement (lines relative to its block)."""
    head, depth, tail = NESTS[spec.nest]
    return [*head, "\t" * depth + statement, *tail]


def _depth(spec: SiteSpec) -> int:
    return NESTS[spec.nest][1]


def render_site_block(spec: SiteSpec, universe: GenUniverse) -> tuple[str, str]:
    """(module-level prelude, the block holding the site), indented with tabs."""
    i = spec.index
    prelude = ""
    if spec.receiver == "module-alias":
        prelude += f"_backend_{i} = {universe.getter}()\n"
    if spec.operand == "constant":
        prelude += f"_BACKENDS_{i} = {render_collection(spec, universe, chr(9))}\n"
    if spec.container == "module":
        value = render_value(spec, universe, "\t" * _depth(spec), "flag")
        return prelude, "\n".join(_nest(spec, f"flag_{i} = {value}")) + "\n"
    if spec.container == "class-attr":
        value = render_value(spec, universe, "\t" * (1 + _depth(spec)), "flag")
        lines = [f"class Config{i}:", *("\t" + line for line in _nest(spec, f"flag_{i} = {value}"))]
        return prelude, "\n".join(lines) + "\n"
    if spec.container in ("function-return", "function-assign", "async-return", "nested-return"):
        outer = 1 if spec.container == "nested-return" else 0
        value = render_value(spec, universe, "\t" * (1 + outer + _depth(spec)), "flag")
        params = [f"args_{i}", VALUE_ATTRIBUTE, f"be_{i}: {universe.enum}", "flag=True"]
        keyword = "async def" if spec.container == "async-return" else "def"
        lines = [f"{keyword} uses_{i}({', '.join(params)}) -> bool:"]
        lines += [f"\tbackend_{i} = {universe.getter}()", "\tz = len(str(flag)) + 1"]
        if spec.container == "function-assign":
            lines += ["\t" + line for line in _nest(spec, f"flag_{i} = {value}")]
            lines.append(f"\treturn bool(flag_{i}) if z else False")
        else:
            lines += ["\t" + line for line in _nest(spec, f"return {value}")]
            if spec.nest != "none":
                lines.append("\treturn False")
        if outer:
            lines = [f"def outer_{i}():", *("\t" + line for line in lines), f"\treturn uses_{i}"]
        return prelude, "\n".join(lines) + "\n"
    value = render_value(spec, universe, "\t" * (2 + _depth(spec)), "self.flag")
    lines = [
        f"class Block{i}:",
        "\tdef __init__(self, server_args, flag=True):",
        f"\t\tself._backend_{i} = {universe.getter}()",
        "\t\tself.server_args = server_args",
        "\t\tself.flag = flag",
    ]
    if spec.container == "init-assign":
        lines += ["\t\t" + line for line in _nest(spec, f"self.flag_{i} = {value}")]
        # something reads the attribute: a copy nothing reads decides nothing (DC006)
        lines += [
            "",
            "\tdef forward(self, x):",
            f"\t\treturn x if getattr(self, 'flag_{i}', False) else -x",
        ]
    else:
        lines += ["", f"\tdef uses_{i}(self):"]
        lines += ["\t\t" + line for line in _nest(spec, f"return {value}")]
        if spec.nest != "none":
            lines.append("\t\treturn False")
    return prelude, "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ModelFile:
    """One generated model module: its sites and the unrelated blocks around them."""

    name: str
    sites: tuple[SiteSpec, ...]
    decoy_slots: tuple[int, ...]  # where decoy blocks go among the site blocks
    indent: str  # the file's indentation unit
    newline: str  # "\n", "\r\n" or "\r"
    page_breaks: bool = False  # blocks separated by form feed lines
    encoding: str = "utf-8"  # utf-8 | utf-8-sig (a BOM) | latin-1 (with a PEP 263 coding line)


@st.composite
def model_files(draw: st.DrawFn, universe: GenUniverse, number: int, first_index: int) -> ModelFile:
    """A model file with 0-6 sites and some decoys."""
    count = draw(st.integers(0, 6))
    specs = tuple(draw(sites(universe, first_index + k)) for k in range(count))
    slots = tuple(draw(st.lists(st.integers(0, max(count, 0)), max_size=3)))
    return ModelFile(
        name=f"m{number}.py",
        sites=specs,
        decoy_slots=slots,
        indent=draw(st.sampled_from(["    ", "\t", "  "])),
        newline=draw(st.sampled_from(["\n", "\n", "\r\n", "\r"])),
        page_breaks=draw(st.booleans()),
        encoding=draw(st.sampled_from(["utf-8", "utf-8", "utf-8-sig", "latin-1"])),
    )


@dataclass(frozen=True)
class Written:
    """A case on disk: its root, and per model file the expected findings and site spans."""

    root: Path
    expected: tuple[tuple, ...]
    spans: dict[str, tuple[tuple[int, int, int, int, SiteSpec], ...]]
    texts: dict[str, str]
    encodings: dict[str, str]


@dataclass(frozen=True)
class Case:
    """A universe and its model files."""

    universe: GenUniverse
    files: tuple[ModelFile, ...]

    def render(self, model: ModelFile) -> str:
        """The model file's text with site markers, before indentation and line endings."""
        u = self.universe
        coding = "# -*- coding: latin-1 -*-\n" if model.encoding == "latin-1" else ""
        header = (
            f'{coding}"""Generated model file (naïve, Größe)."""\n\n'
            f"from pkg.utils import {u.enum}, {u.getter}, {u.helper}\n\n\n"
        )
        preludes, blocks = [], []
        for spec in model.sites:
            prelude, block = render_site_block(spec, u)
            preludes.append(prelude)
            blocks.append(block)
        decoy_pool = decoys(u, int(model.name[1:-3]))
        for n, slot in enumerate(model.decoy_slots):
            blocks.insert(min(slot, len(blocks)), decoy_pool[n % len(decoy_pool)])
        separator = "\n\x0c\n" if model.page_breaks else "\n\n"  # a form feed line: GNU-style pages
        return (
            header + "".join(preludes) + ("\n\n" if any(preludes) else "") + separator.join(blocks)
        )

    def write(self, root: Path) -> Written:
        """Write the tree under ``root``; return the expected findings and each site's span."""
        u = self.universe
        (root / "pkg/models").mkdir(parents=True)
        (root / "pyproject.toml").write_text(u.pyproject())
        (root / "pkg/__init__.py").write_text("")
        (root / "pkg/models/__init__.py").write_text("")
        (root / "pkg/utils.py").write_text(u.utils_source())
        expected: list[tuple] = []
        spans: dict[str, tuple] = {}
        texts: dict[str, str] = {}
        encodings: dict[str, str] = {}
        for model in self.files:
            rel = f"pkg/models/{model.name}"
            text = self.render(model).replace("\t", model.indent)
            found, clean = locate_markers(text)
            file_spans = []
            for (line, col, end_line, end_col), spec in zip(found, model.sites, strict=True):
                file_spans.append((line, col, end_line, end_col, spec))
                finding = spec.expected(u, rel, line, col)
                if finding is not None:
                    expected.append(finding)
            spans[rel] = tuple(file_spans)
            final = clean.replace("\n", model.newline)
            texts[rel] = final
            encodings[rel] = model.encoding
            (root / rel).write_bytes(final.encode(model.encoding))
        return Written(root, tuple(sorted(expected)), spans, texts, encodings)


def locate_markers(text: str) -> tuple[list[tuple[int, int, int, int]], str]:
    """Site spans ``(line, col, end_line, end_col)`` (``ast`` style: 1-based lines, UTF-8 byte
    columns) of the marked expressions in ``text``, and the text without markers."""
    spans = []
    clean: list[str] = []
    line, col = 1, 0
    start: tuple[int, int] | None = None
    for char in text:
        if char == START:
            start = (line, col)
            continue
        if char == END:
            assert start is not None
            spans.append((*start, line, col))
            continue
        clean.append(char)
        if char == "\n":
            line, col = line + 1, 0
        else:
            col += len(char.encode("utf-8"))
    return spans, "".join(clean)


@st.composite
def cases(draw: st.DrawFn, max_files: int = 3) -> Case:
    """A universe and 1-``max_files`` model files."""
    universe = draw(universes())
    count = draw(st.integers(1, max_files))
    files = []
    index = 0
    for number in range(count):
        model = draw(model_files(universe, number, index))
        index += len(model.sites)
        files.append(model)
    return Case(universe, tuple(files))
