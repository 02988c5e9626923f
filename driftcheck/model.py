"""The data model every stage shares: the backend universe, enumeration sites and findings.

Flow is one-directional: source text -> :class:`Universe` (enum, families) -> :class:`Site`
(a hand-written enumeration found in a file) -> :class:`Finding` (a site judged against a
:class:`Family`) -> fixes -> proofs. Every object here is immutable and JSON-serialisable
through ``to_dict`` so that the cache, the reporters and the verifier exchange plain data.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True, order=True)
class Span:
    """A source range; lines are 1-based, columns are 0-based UTF-8 offsets as ``ast`` gives."""

    line: int
    col: int
    end_line: int
    end_col: int


@dataclass(frozen=True)
class Member:
    """One member of the backend enum: ``DEEPEP = "deepep"`` tested by ``is_deepep()``."""

    attr: str
    value: str


Conditions = tuple[tuple[str, tuple[str, ...]], ...]  # (member, narrowing texts) pairs


@dataclass(frozen=True)
class MethodPredicate:
    """A named zero-argument predicate over the universe and the members it is true for: an
    enum method (``is_deepep()``), a method or ``@property`` of a class holding the setting
    (``use_deepep_ll_kernels``), or a canonical helper function.

    ``narrowing`` holds the source text of an extra condition (``is_mori_epv2`` is
    ``is_mori() and envs.SGLANG_MORI_EP_V2.get()``): the method is true for a subset of the
    runs where its members are selected, so it is recorded as a narrowing, not a new member.
    ``conditions`` gives, per member, the narrowing texts it depends on (``()``: none).
    ``access`` says how code spells it: ``method`` (``x.name()``), ``property`` (``x.name``)
    or ``function`` (``name()``); ``owner`` is the class defining it.
    """

    name: str
    members: frozenset[str]
    narrowing: str | None = None
    access: str = "method"
    owner: str = ""
    conditions: Conditions = ()

    def condition_of(self, member: str) -> tuple[str, ...]:
        """The narrowing texts ``member`` depends on (``()`` when it is accepted outright)."""
        return dict(self.conditions).get(member, ())


@dataclass(frozen=True)
class Family:
    """A canonical predicate, e.g. ``is_deepep_class_backend``, and the members its body accepts.

    ``access`` is how code calls it (``function``: ``name()``, ``method``: ``x.name()``,
    ``property``: ``x.name``, ``constant``: ``x in NAME``, ``inferred``: no helper exists,
    ``union``: several predicates, ``a | b``, or a property compared with an enum member);
    ``owner`` the class defining a method or property; ``universe`` the name of the universe
    it ranges over; ``conditions`` the narrowing texts each member is accepted under;
    ``inferred_from`` the number of hand-written copies an inferred family was read from
    (``inferred_complete`` of them list all of it), in ``inferred_files`` files; ``defines``
    the definitions that make up a configured canonical (its parts, and what they delegate to).
    """

    name: str
    qualified: str
    path: str
    line: int
    members: tuple[str, ...]
    label: str = ""
    access: str = "function"
    owner: str = ""
    universe: str = ""
    conditions: Conditions = ()
    inferred_from: int = 0
    inferred_files: int = 0
    inferred_complete: int = 0
    # the canonical's own definitions and those it delegates to (``(path, Class.name, access,
    # first line, last line)``): their bodies are the canonical, not copies of it, and reading
    # them elsewhere is calling it
    defines: tuple[tuple[str, str, str, int, int], ...] = ()

    @property
    def member_set(self) -> frozenset[str]:
        """The members as a set."""
        return frozenset(self.members)

    @property
    def inferred(self) -> bool:
        """Whether no helper defines the family (it was read from the tree's copies)."""
        return self.access == "inferred"

    def condition_of(self, member: str) -> tuple[str, ...]:
        """The narrowing texts ``member`` is accepted under (``()``: outright)."""
        return dict(self.conditions).get(member, ())

    def provenance(self) -> str:
        """How an inferred family was found: ``inferred from 5 complete and 12 partial
        hand-written copies in 11 files``."""
        partial = self.inferred_from - self.inferred_complete
        counts = f"{self.inferred_complete} complete" + (
            f" and {partial} partial" if partial else ""
        )
        files = f"{self.inferred_files} file{'s' if self.inferred_files != 1 else ''}"
        return f"inferred from {counts} hand-written copies in {files}"

    def call_text(self) -> str:
        """How a message names a call of it: ``is_x()``, ``.use_x``, ``.is_x()``, ``NAME``; for a
        family read from several predicates (``access == "union"``, ``name`` ``a | b``),
        ``Owner.a or Owner.b``."""
        if self.access == "union":
            owner = f"{self.owner}." if self.owner else ""
            return " or ".join(f"{owner}{part}" for part in self.name.split(" | "))
        if self.access == "property":
            return f".{self.name}"
        if self.access == "method":
            return f".{self.name}()"
        if self.access in ("constant", "inferred"):
            return self.name
        return f"{self.name}()"


@dataclass(frozen=True)
class Universe:
    """Everything read from the linted tree's source about one backend enum.

    ``getters`` are the zero-argument functions returning the enum (``get_moe_a2a_backend``);
    ``predicates`` maps each enum method name to what it tests; ``value_attributes`` are
    attribute/variable names whose string value is the backend (``moe_a2a_backend``).
    """

    enum_name: str
    enum_path: str
    enum_module: str
    members: tuple[Member, ...]
    predicates: dict[str, MethodPredicate]
    getters: frozenset[str]
    families: tuple[Family, ...]
    value_attributes: tuple[str, ...] = ()
    # classes whose instances answer the predicates (besides the enum itself), and the names
    # and attributes that hold one of them (``current_platform``, ``moe_parallel_config``)
    holders: frozenset[str] = frozenset()
    holder_names: frozenset[str] = frozenset()
    name: str = ""  # how messages name the universe: the enum, or ``Class.attribute``
    noun: str = "backends"  # how messages name its members
    # (condition text, members that imply it): ``if <condition>: return`` settles them
    implied: tuple[tuple[str, frozenset[str]], ...] = ()
    # words naming one implementation of the setting's members (the pack's
    # ``implementation-words``: a kernel library): a conjunct naming one pins a dispatch
    implementation_words: tuple[str, ...] = ()

    def implied_by(self, test_text: str) -> frozenset[str]:
        """The members a test's text (``get_parallel().moe_ep_size > 1``) is true for."""
        text = " ".join(test_text.split())
        found: set[str] = set()
        for condition, members in self.implied:
            if text == condition or text.endswith("." + condition):
                found |= members
        return frozenset(found)

    @property
    def key(self) -> str:
        """The universe's identity within a run (sites name it)."""
        return self.name or self.enum_name

    @property
    def ambient(self) -> frozenset[str]:
        """Narrowings the canonical families themselves carry (vLLM's kernels are all gated
        on ``use_all2all_kernels``): a predicate narrowed by these alone is a plain test of
        its members; one narrowed by anything else (``is_mori_epv2``) is not."""
        return frozenset(t for f in self.families for _, texts in f.conditions for t in texts)

    @property
    def values(self) -> tuple[str, ...]:
        """Member string values in declaration order."""
        return tuple(m.value for m in self.members)

    def value_of_attr(self, attr: str) -> str | None:
        """The string value of the member named ``attr`` (``DEEPEP`` -> ``deepep``)."""
        for member in self.members:
            if member.attr == attr:
                return member.value
        return None

    def predicate_for(self, value: str, like: str | None = None) -> str | None:
        """The single-member test for ``value`` (``deepep`` -> ``is_deepep``), spelled like
        the predicate ``like`` (same access and class) when given. A narrowed predicate is
        used only when its narrowing is one the families carry (:attr:`ambient`)."""
        model = self.predicates.get(like) if like else None
        ambient = self.ambient
        exact = [
            p
            for p in self.predicates.values()
            if p.members == frozenset({value})
            and all(set(texts) <= ambient for _, texts in p.conditions)
            and (model is None or (p.access == model.access and p.owner == model.owner))
        ]
        exact.sort(key=lambda p: p.narrowing is not None)
        names = [p.name for p in exact]
        if f"is_{value}" in names:
            return f"is_{value}"
        return names[0] if names else None

    def family(self, name: str) -> Family | None:
        """The family whose canonical predicate is called ``name``."""
        for fam in self.families:
            if fam.name == name:
                return fam
        return None

    def order(self, values: frozenset[str] | set[str]) -> tuple[str, ...]:
        """``values`` sorted by enum declaration order (stable, human-friendly output)."""
        rank = {v: i for i, v in enumerate(self.values)}
        return tuple(sorted(values, key=lambda v: (rank.get(v, len(rank)), v)))

    def fingerprint(self) -> str:
        """A stable text identifying the universe, used as part of every cache key."""
        parts = [self.key, self.enum_name, *self.values]
        for name in sorted(self.predicates):
            pred = self.predicates[name]
            parts.append(
                f"{name}={','.join(sorted(pred.members))}|{pred.narrowing or ''}|{pred.access}|{pred.conditions}"
            )
        for fam in self.families:
            parts.append(f"{fam.qualified}={','.join(fam.members)}|{fam.access}|{fam.conditions}")
        parts.extend(sorted(self.getters))
        parts.extend(self.value_attributes)
        parts.extend(self.implementation_words)
        parts.extend(sorted(self.holders))
        parts.extend(sorted(self.holder_names))
        return "\n".join(parts)


OperandKind = Literal["method", "property", "string", "enum", "helper", "pattern", "other"]
SiteForm = Literal[
    "or-chain",  # a.is_x() or a.is_y()
    "not-or",  # not (a.is_x() or a.is_y())
    "and-not",  # not a.is_x() and not a.is_y()
    "in",  # x in ("a", "b") / x in (E.A, E.B) / x in CONST
    "not-in",  # x not in (...)
    "eq-chain",  # x == "a" or x == "b"
    "ne-chain",  # x != "a" and x != "b"
    "single",  # one backend tested on its own: only sibling consensus (DC020) judges these
    "match",  # match x: case "a" | "b": ... (one case's patterns)
    "helper",  # a canonical helper called on its own: evidence of what the family controls
]


@dataclass(frozen=True)
class Operand:
    """One term of an enumeration: what it tests, where it is, and how it is spelled."""

    kind: OperandKind
    members: frozenset[str]
    span: Span
    text: str
    predicate: str | None = None  # method or helper name for kind method/helper


@dataclass(frozen=True)
class Reach:
    """One thing a site's value reaches in its module, where, and the steps that lead there.

    ``key`` is comparable across files (:mod:`driftcheck.sites.controls`): ``call:<name>``
    (a call a branch the value chooses makes), ``kw:<name>`` (a keyword it feeds), ``set:<name>``
    (a name or attribute it is stored in), ``raise``, ``call:assert``. ``how`` says how the
    value reaches it: ``guards`` (a statement of a branch it chooses), ``selects`` (an arm of
    a conditional expression it tests), ``feeds``, ``stores``, ``computes`` (the call whose
    result a branch it chooses stores: part of what the branch sets, not an effect of its
    own), ``inside`` (a call made inside a function of the module such a branch calls, one
    level deep: recorded only when it is one of the pack's role operations),
    or ``binds`` (a local name an ``if`` it tests chooses between two values of, assigned in
    both branches: ``activation_format = BatchedExperts`` / ``= Standard``; a file's local
    vocabulary is shared by its package, not by the tree, so it is compared only there:
    :attr:`Role.package_keys`).
    ``operation`` names the pack's role operation the key is (``tp-reduce``...), if any;
    ``via`` holds the lines of the steps from the site to here; ``scope`` the qualified name
    of the function or class the reached code sits in.
    """

    key: str
    line: int
    how: str = "guards"
    scope: str = ""
    operation: str = ""
    via: tuple[int, ...] = ()

    @property
    def block(self) -> str:
        """The class the reached code sits in (``""`` at module level)."""
        head, _, rest = self.scope.partition(".")
        return head if rest or head[:1].isupper() else ""

    def to_dict(self) -> dict[str, Any]:
        """Plain data (the fields; ``via`` as a list)."""
        return {**asdict(self), "via": list(self.via)}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Reach:
        """Inverse of :meth:`to_dict`."""
        return Reach(**{**data, "via": tuple(data.get("via", ()))})


@dataclass(frozen=True)
class Role:
    """What a site's value decides, computed once, when the site is found
    (:mod:`driftcheck.sites.controls`), and read by every consumer: DC020's evidence, the
    liveness of a copy, the fixer's applicability, the verifier's eligibility and block.

    ``name`` is what the value is called where it is used (the assigned attribute, the
    function returning it, the function and operation an ``if`` guards): sites of different
    files with the same name play the same role. ``reaches`` is the evidence, each with its
    location; ``comment`` the comment or docstring that says what the value is for;
    ``refusal`` the message of the raise, logged warning or returned reason of the branch an
    ``if`` whose whole test is the value takes, ``refusal_when`` the value it takes it on
    (``if not p.is_cuda(): raise ...``: ``False``) and ``refusal_line`` where it is.
    """

    name: str = ""
    reaches: tuple[Reach, ...] = ()
    comment: str = ""
    refusal: str = ""
    refusal_when: bool = True
    refusal_line: int = 0

    @property
    def keys(self) -> tuple[str, ...]:
        """What the value controls directly, comparable across files: the keys of its reaches,
        those found inside a called function excepted."""
        return tuple(sorted({r.key for r in self.reaches if r.how not in ("inside", "binds")}))

    @property
    def package_keys(self) -> tuple[str, ...]:
        """What the value controls, compared between the files of one package: ``call:<name>``
        as in :attr:`keys`, and ``name:<name>`` for a name the value is given — an attribute or
        local name it is assigned to or an ``if`` it tests chooses the value of, a keyword it feeds
        (``activation_format = BatchedExperts if ... else Standard`` and
        ``make(activation_format=...)`` compute the same thing). Validation (``raise``,
        ``call:assert``) decides nothing a family decides and is left out."""
        found: set[str] = set()
        for reach in self.reaches:
            kind, _, name = reach.key.partition(":")
            if reach.how == "inside" or reach.key in ("raise", "call:assert"):
                continue
            found.add(f"name:{name}" if kind in ("kw", "set") else reach.key)
        return tuple(sorted(found))

    @property
    def operations(self) -> tuple[Reach, ...]:
        """The reaches that are role operations the pack declares (a TP reduce, a DP gather,
        the forward switch, the shared expert's layout...)."""
        return tuple(r for r in self.reaches if r.operation)

    def only_sets(self) -> tuple[str, ...]:
        """The names the value is stored in or a branch sets, when setting them is all it
        does (a call computing what a branch stores is part of setting it); ``()`` otherwise."""
        direct = [r for r in self.reaches if r.how not in ("inside", "binds")]
        names = tuple(dict.fromkeys(r.key[4:] for r in direct if r.key.startswith("set:")))
        if names and all(r.key.startswith("set:") or r.how == "computes" for r in direct):
            return names
        return ()

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the cache and JSON output."""
        return {
            "name": self.name,
            "reaches": [r.to_dict() for r in self.reaches],
            "comment": self.comment,
            "refusal": self.refusal,
            "refusal_when": self.refusal_when,
            "refusal_line": self.refusal_line,
        }

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Role:
        """Inverse of :meth:`to_dict`."""
        return Role(
            name=data.get("name", ""),
            reaches=tuple(Reach.from_dict(r) for r in data.get("reaches", ())),
            comment=data.get("comment", ""),
            refusal=data.get("refusal", ""),
            refusal_when=data.get("refusal_when", True),
            refusal_line=data.get("refusal_line", 0),
        )


@dataclass(frozen=True)
class Site:
    """A hand-written enumeration of backends found in one file.

    ``members`` is the set the enumeration names; ``polarity`` is ``positive`` when the
    expression is true exactly for those members and ``negative`` when it is true for every
    member *except* them (``not in``, ``not a and not b``). ``helpers`` lists canonical
    predicates called inside the same chain (``is_deepep_class_backend() or b.is_megamoe()``).
    ``enumerator`` names the function whose body is this enumeration, so callers are not
    reported twice.
    """

    path: str
    symbol: str
    form: SiteForm
    polarity: Literal["positive", "negative"]
    span: Span
    members: frozenset[str]
    operands: tuple[Operand, ...]
    receiver: str
    helpers: tuple[str, ...] = ()
    context: str = "expression"
    enumerator: str | None = None
    constant: str | None = None
    kind: Literal["property", "allowlist", "dispatch"] = "property"
    # what the value decides, with its evidence (:class:`Role`)
    role: Role = field(default_factory=Role)
    text: str = ""
    has_other_terms: bool = False
    statement_line: int = 0
    universe: str = ""
    # members an earlier ``if <members>: return`` of the same block already sent elsewhere:
    # the site is never reached for them, so they are not missing from it
    settled: frozenset[str] = frozenset()
    # what it sets when that is all it does and its own file never reads it
    # (:func:`driftcheck.liveness.local_unread`); the judge asks the related classes too
    unread: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (sets become sorted lists) for the cache and JSON output."""
        data = asdict(self)
        data["members"] = sorted(self.members)
        data["settled"] = sorted(self.settled)
        data["operands"] = [{**asdict(op), "members": sorted(op.members)} for op in self.operands]
        data["role"] = self.role.to_dict()
        return data

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Site:
        """Inverse of :meth:`to_dict`."""
        ops = tuple(
            Operand(
                kind=o["kind"],
                members=frozenset(o["members"]),
                span=Span(**o["span"]),
                text=o["text"],
                predicate=o.get("predicate"),
            )
            for o in data["operands"]
        )
        fields = {
            k: v
            for k, v in data.items()
            if k not in ("members", "operands", "span", "helpers", "role", "settled", "unread")
        }
        return Site(
            **fields,
            span=Span(**data["span"]),
            members=frozenset(data["members"]),
            settled=frozenset(data.get("settled", ())),
            unread=tuple(data.get("unread", ())),
            operands=ops,
            helpers=tuple(data.get("helpers", ())),
            role=Role.from_dict(data.get("role", {})),
        )


@dataclass(frozen=True)
class Applicability:
    """Whether ``--fix`` may add one missing member without asking (Ruff's safe and unsafe
    fixes), and the evidence read from the tree (:mod:`driftcheck.rules.applicability`)."""

    member: str
    safe: bool
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"member", "applicability": "safe" | "unsafe", "reason"}``."""
        return {
            "member": self.member,
            "applicability": "safe" if self.safe else "unsafe",
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Fix:
    """A rewrite of one site's expression and the backends whose value it flips."""

    style: Literal["minimal", "helper", "delete"]  # "delete": a dead copy removed
    span: Span
    replacement: str
    flips: tuple[str, ...]
    import_line: str | None = None
    # how the value changes for the flipped members: "False -> True" (computed, not assumed)
    change: str = ""
    # further edits the fix needs outside ``span``: the helper's import, an unused receiver
    edits: tuple[tuple[Span, str], ...] = ()
    # the missing members this fix leaves out, each with why (applied by --unsafe-fixes); a
    # fix that flips nothing (every member held back) replaces ``span`` with its own text
    held_back: tuple[tuple[str, str], ...] = ()
    # every missing member's applicability, whichever of them the fix applies
    members: tuple[Applicability, ...] = ()

    @property
    def writes(self) -> bool:
        """Whether applying the fix changes the file: not when it holds every member back."""
        return bool(self.flips) or not self.held_back

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"style", "replacement", "flips", "held_back", "members", "change"}``
        plus the span."""
        return {
            "style": self.style,
            "replacement": self.replacement,
            "flips": list(self.flips),
            "held_back": [{"member": m, "reason": why} for m, why in self.held_back],
            "members": [a.to_dict() for a in self.members],
            "change": self.change,
            "span": {  # 1-based columns, like the finding's own col/end_col
                "line": self.span.line,
                "col": self.span.col + 1,
                "end_line": self.span.end_line,
                "end_col": self.span.end_col + 1,
            },
            "import": self.import_line,
        }


@dataclass(frozen=True)
class Related:
    """A place a finding rests on, for editors and SARIF: the canonical's definition, a
    sibling site, a site whose use is the evidence. ``line`` is 1-based, ``col`` 0-based."""

    path: str
    line: int
    col: int
    note: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form (1-based column, like a finding's own)."""
        return {"path": self.path, "line": self.line, "col": self.col + 1, "note": self.note}


@dataclass(frozen=True)
class Finding:
    """A site judged against a family: what it misses, what it adds, and what to say."""

    code: str
    severity: Severity
    path: str
    span: Span
    symbol: str
    canonical: str
    members: tuple[str, ...]
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    message: str
    kind: str = "property"
    subject: str = ""
    live: tuple[str, ...] = ()
    latent: dict[str, str] = field(default_factory=dict)
    fix: Fix | None = None
    fix_refusal: str | None = None
    key: str = ""
    # the site the finding was made from (None for a stale suppression): the fixer, the
    # verifier and gen-test read it instead of finding the site again by its span
    site: Site | None = field(default=None, compare=False, repr=False)
    # what the finding rests on, when a rule's fix depends on it ("helper": the evidence
    # calls the canonical helper, so the fix does too)
    evidence: str = field(default="", compare=False)
    # judged against a family read from the tree's copies (no helper defines it)
    inferred: bool = False
    # the places the finding rests on: the canonical's definition, then the rule's evidence
    related: tuple[Related, ...] = field(default=(), compare=False)
    # each missing member's fix applicability, in ``missing``'s order (family rules only)
    applicability: tuple[Applicability, ...] = ()

    @property
    def held_back(self) -> tuple[Applicability, ...]:
        """The missing members ``--fix`` leaves out (only ``--unsafe-fixes`` adds them)."""
        return tuple(a for a in self.applicability if not a.safe)

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON contract documented in ``docs/json-output.md``."""
        data: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity,
            "path": self.path,
            "line": self.span.line,
            "col": self.span.col + 1,
            "end_line": self.span.end_line,
            "end_col": self.span.end_col + 1,
            "symbol": self.symbol,
            "canonical": self.canonical,
            "members": list(self.members),
            "missing": list(self.missing),
            "extra": list(self.extra),
            "message": self.message,
            "kind": self.kind,
            "key": self.key,
        }
        if self.latent:
            data["latent"] = dict(sorted(self.latent.items()))
        if self.inferred:
            data["inferred"] = True
        if self.fix is not None:
            data["fix"] = self.fix.to_dict()
        elif self.fix_refusal is not None:
            data["fix_refused"] = self.fix_refusal
        return data


@dataclass(frozen=True)
class Problem:
    """A file or configuration that could not be processed: always reported, exit code 2."""

    path: str
    line: int | None
    message: str
    # the file was checked all the same (a syntax error outside the statements the check
    # parses, in a file whose suppressions it read): not counted as a path left unchecked
    checked: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON form used in the ``errors`` array."""
        return {"path": self.path, "line": self.line, "message": self.message}

    def __str__(self) -> str:
        if self.path.startswith("--"):  # a command-line option, not a file
            return f"error: {self.path}: {self.message}"
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: error: {self.message}"
