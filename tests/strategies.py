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
COMMENT_WORDS = ("keep", "in sync", "see the helper", "TODO", "order matters", "x", "!", "(a)")


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
            lines += ["", f"    def is_{value}(self):", f"        return self == {self.enum}.{attr}"]
        first = self.members[0][0]
        lines += ["", "", f"def {self.getter}() -> {self.enum}:", f"    return {self.enum}.{first}", "", ""]
        lines.append(f"def {self.helper}() -> bool:")
        if self.helper_form == "alias":
            lines.append(f"    backend = {self.getter}()")
            lines.append("    return " + " or ".join(f"backend.is_{v}()" for v in self.family))
        elif self.helper_form == "getter":
            lines.append("    return " + " or ".join(f"{self.getter}().is_{v}()" for v in self.family))
        else:
            lines += [f"    backend = {self.getter}()", "    return ("]
            lines += [f"        {'or ' if i else ''}backend.is_{v}()" for i, v in enumerate(self.family)]
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


@dataclass(frozen=True)
class SiteSpec:
    """One enumeration: its form, the members it names (in source order) and its spelling."""

    index: int
    form: str
    operand: str  # method | string | enum | constant
    members: tuple[str, ...]
    receiver: str  # getter | alias | self | param | module-alias | value | self-value | bare-value | dot-value
    container: str  # module | function-return | function-assign | method-return | init-assign
    wrapper: str  # plain | paren | ternary-body | ternary-test | call | keyword
    nest: str  # none | if | for | with | try
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
        if self.container in ("function-return", "method-return"):
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
    """Operands joined by `` or ``/`` and ``/``, ``, ``: on one line, or one per line with
    comments after them (the caller wraps multi-line text in brackets)."""
    layout = spec.layout
    if not layout.multiline:
        return separator.join(parts)
    out = parts[0]
    for i, part in enumerate(parts[1:]):
        comment = layout.comments[i] if i < len(layout.comments) else None
        if separator == ", ":
            out += "," + (f"  # {comment}" if comment else "") + "\n" + cont + part
        else:
            out += (f"  # {comment}" if comment else "") + "\n" + cont + separator.strip() + " " + part
    return out


def render_expression(spec: SiteSpec, universe: GenUniverse, cont: str) -> str:
    """The site's expression; multi-line text only ever appears inside brackets."""
    layout = spec.layout
    receiver = _receiver_text(spec, universe)

    def paren(i: int, text: str) -> str:
        wrap = i < len(layout.paren_operands) and layout.paren_operands[i]
        return f"({text})" if wrap else text

    if spec.operand == "method":
        calls = [f"{receiver}.is_{m}()" for m in spec.members]
        if spec.form == "and-not":
            return _join([paren(i, f"not {c}") for i, c in enumerate(calls)], " and ", spec, cont)
        chain = _join([paren(i, c) for i, c in enumerate(calls)], " or ", spec, cont)
        if spec.form == "not-or":
            return f"not ({chain})"
        return chain
    if spec.form in ("in", "not-in"):
        op = "not in" if spec.form == "not-in" else "in"
        if spec.operand == "constant":
            return f"{receiver} {op} _BACKENDS_{spec.index}"
        return f"{receiver} {op} {render_collection(spec, universe, cont)}"
    negative = spec.form == "ne-chain"
    if layout.identity:
        op = "is not" if negative else "is"
    else:
        op = "!=" if negative else "=="
    tests = []
    for i, member in enumerate(spec.members):
        value = _value_text(spec, universe, member)
        text = f"{value} {op} {receiver}" if layout.reversed_eq and op in ("==", "!=") else f"{receiver} {op} {value}"
        tests.append(paren(i, text))
    return _join(tests, " and " if negative else " or ", spec, cont)


def render_collection(spec: SiteSpec, universe: GenUniverse, cont: str) -> str:
    """The literal of an ``in`` test or of a constant."""
    layout = spec.layout
    items = [_value_text(spec, universe, m) for m in spec.members]
    body = _join(items, ", ", spec, cont)
    trailing = "," if layout.trailing_comma or (layout.collection == "tuple" and len(items) == 1) else ""
    if layout.multiline:
        body = "\n" + cont + body + trailing + "\n" + cont[:-1]
        trailing = ""
    open_, close = {"tuple": "()", "list": "[]", "set": "{}", "frozenset": "{}"}[layout.collection]
    text = f"{open_}{body}{trailing}{close}"
    return f"frozenset({text})" if layout.collection == "frozenset" else text


def render_value(spec: SiteSpec, universe: GenUniverse, cont: str, flag: str) -> str:
    """The statement's right-hand side: the marked expression inside its wrapper."""
    inner = START + render_expression(spec, universe, cont + "\t") + END
    multiline = "\n" in inner
    if spec.wrapper == "plain":
        return f"(\n{cont}\t{inner}\n{cont})" if multiline else inner
    if spec.wrapper == "paren":
        return f"(\n{cont}\t{inner}\n{cont})" if multiline else f"({inner})"
    if spec.wrapper == "ternary-body":
        return f"({inner}) if {flag} else False"
    if spec.wrapper == "ternary-test":
        return f"1 if ({inner}) else 0" if multiline else f"1 if {inner} else 0"
    if spec.wrapper == "call":
        return f"bool({inner})"
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
    return "module" if container == "module" else "function" if container.startswith("function") else "method"


@st.composite
def layouts(draw: st.DrawFn, count: int, operand: str, form: str) -> Layout:
    """A random spelling for a site with ``count`` operands."""
    multiline = draw(st.booleans())
    comments: tuple[str | None, ...] = ()
    if multiline:
        comments = tuple(
            draw(st.lists(st.one_of(st.none(), st.sampled_from(COMMENT_WORDS)), min_size=count, max_size=count))
        )
    single_compare = form in ("in", "not-in")
    parens = () if single_compare else tuple(draw(st.lists(st.booleans(), min_size=count, max_size=count)))
    return Layout(
        multiline=multiline,
        comments=comments,
        paren_operands=parens,
        trailing_comma=draw(st.booleans()),
        collection=draw(st.sampled_from(["tuple", "list", "set", "frozenset"])),
        quote=draw(st.sampled_from(['"', "'"])),
        reversed_eq=draw(st.booleans()) and operand != "enum",
        identity=operand == "enum" and form in ("eq-chain", "ne-chain") and draw(st.booleans()),
    )


@st.composite
def sites(draw: st.DrawFn, universe: GenUniverse, index: int) -> SiteSpec:
    """One site in a random form, container and spelling; members biased towards the family."""
    operand = draw(st.sampled_from(["method", "string", "enum", "constant"]))
    forms = METHOD_FORMS if operand == "method" else ("in", "not-in") if operand == "constant" else VALUE_FORMS
    form = draw(st.sampled_from(forms))
    container = draw(
        st.sampled_from(["module", "function-return", "function-assign", "method-return", "init-assign"])
    )
    kind = _kind(container)
    table = {"method": _METHOD_RECEIVERS, "enum": _ENUM_RECEIVERS}.get(operand, _VALUE_RECEIVERS)
    receiver = draw(st.sampled_from(table[kind]))
    if operand == "enum" and receiver == "dot-value":  # pragma: no cover - not in the table
        receiver = "getter"
    family_part = draw(st.lists(st.sampled_from(universe.family), min_size=0, max_size=len(universe.family), unique=True))
    others = [v for v in universe.values if v not in universe.family]
    extra_part = draw(st.lists(st.sampled_from(others), max_size=len(others), unique=True)) if others else []
    members = draw(st.permutations(family_part + extra_part)) if family_part or extra_part else []
    if len(members) < 2:
        members = list(draw(st.permutations(universe.values)))[:2]
    wrapper = draw(st.sampled_from(["plain", "paren", "ternary-body", "ternary-test", "call", "keyword"]))
    nest = "none" if container == "module" else draw(st.sampled_from(["none", "if", "for", "with", "try"]))
    layout = draw(layouts(len(members), operand, form))
    return SiteSpec(index, form, operand, tuple(members), receiver, container, wrapper, nest, layout)


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
        f"class Unrelated{index}:\n\t\"\"\"Nothing to see.\"\"\"\n\n\tdef __init__(self, n):\n\t\tself.n = n\n\n\tdef twice(self):\n\t\treturn self.n * 2\n",
    ]
    if non_family:
        # the helper plus a member it does not include: complete, nothing to report
        blocks.append(f"def decoy_helper_{index}():\n\treturn {universe.helper}() or {universe.getter}().is_{non_family[0]}()\n")
    return blocks


# -- files and cases ---------------------------------------------------------------------------
def _nest(spec: SiteSpec, body: list[str]) -> list[str]:
    """Put the statement lines ``body`` (indented one level) inside a compound statement."""
    if spec.nest == "none":
        return body
    inner = ["\t" + line for line in body]
    if spec.nest == "if":
        return ["if flag:", *inner]
    if spec.nest == "for":
        return ["for _ in range(2):", *inner]
    if spec.nest == "with":
        return ["with context():", *inner]
    return ["try:", *inner, "except Exception:", "\tpass"]


def render_site_block(spec: SiteSpec, universe: GenUniverse) -> tuple[str, str]:
    """(module-level prelude, the block holding the site), indented with tabs."""
    i = spec.index
    prelude = ""
    if spec.receiver == "module-alias":
        prelude += f"_backend_{i} = {universe.getter}()\n"
    if spec.operand == "constant":
        prelude += f"_BACKENDS_{i} = {render_collection(spec, universe, chr(9))}\n"
    if spec.container == "module":
        return prelude, f"flag_{i} = {render_value(spec, universe, '', 'flag')}\n"
    if spec.container.startswith("function"):
        value = render_value(spec, universe, "\t" * (2 if spec.nest != "none" else 1), "flag")
        params = [f"args_{i}", VALUE_ATTRIBUTE, f"be_{i}: {universe.enum}", "flag=True"]
        lines = [f"def uses_{i}({', '.join(params)}) -> bool:"]
        body = [f"\tbackend_{i} = {universe.getter}()", "\tz = len(str(flag)) + 1"]
        if spec.container == "function-return":
            statement = _nest(spec, [f"return {value}"])
            tail: list[str] = ["return False"] if spec.nest != "none" else []
        else:
            statement = _nest(spec, [f"flag_{i} = {value}"])
            tail = [f"return bool(flag_{i}) if z else False"]
        lines += body + ["\t" + line for line in statement] + ["\t" + line for line in tail]
        return prelude, "\n".join(lines) + "\n"
    value = render_value(spec, universe, "\t" * (3 if spec.nest != "none" else 2), "self.flag")
    lines = [
        f"class Block{i}:",
        f"\tdef __init__(self, server_args, flag=True):",
        f"\t\tself._backend_{i} = {universe.getter}()",
        "\t\tself.server_args = server_args",
        "\t\tself.flag = flag",
    ]
    if spec.container == "init-assign":
        lines += ["\t\t" + line for line in _nest(spec, [f"self.flag_{i} = {value}"])]
    else:
        lines += ["", f"\tdef uses_{i}(self):"]
        lines += ["\t\t" + line for line in _nest(spec, [f"return {value}"])]
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
    newline: str  # "\n" or "\r\n"


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
        newline=draw(st.sampled_from(["\n", "\n", "\r\n"])),
    )


@dataclass(frozen=True)
class Written:
    """A case on disk: its root, and per model file the expected findings and site spans."""

    root: Path
    expected: tuple[tuple, ...]
    spans: dict[str, tuple[tuple[int, int, int, int, SiteSpec], ...]]
    texts: dict[str, str]


@dataclass(frozen=True)
class Case:
    """A universe and its model files."""

    universe: GenUniverse
    files: tuple[ModelFile, ...]

    def render(self, model: ModelFile) -> str:
        """The model file's text with site markers, before indentation and line endings."""
        u = self.universe
        header = (
            '"""Generated model file."""\n\n'
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
        return header + "".join(preludes) + ("\n\n" if any(preludes) else "") + "\n\n".join(blocks)

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
            (root / rel).write_bytes(final.encode("utf-8"))
        return Written(root, tuple(sorted(expected)), spans, texts)


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
