"""``--fix`` / ``--diff``: plan a fix for each DC001/DC003 finding (and
DC005: delete the redundant operand), then apply them per file.

:func:`attach_fixes` gives every fixable finding either a :class:`~driftcheck.model.Fix` (the
rewrite, and the backends it flips, computed by evaluating the old and the new expression per
enum member) or a one-line ``fix_refusal``. :func:`apply_fixes` applies the fixes of each file
in one pass from the end backwards, checks the result byte-compiles, and writes it atomically
unless the file changed on disk since it was scanned.

Planning runs in a thread with room for the deepest expression it rewrites
(:mod:`driftcheck.fix.deepstack`: a chain of 100,000 operands is 100,000 levels for libcst).
It reads only the rewritten expression's text (located by the scan's ``ast`` spans) and
rewrites it as a libcst tree of that text alone (:mod:`driftcheck.fix.cstfragment`, imported
on the first plan); a file's whole-module AST is parsed only for plans that need it (helper
style, constants), and libcst never sees the whole file.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from functools import cached_property

from driftcheck.engine import CheckResult
from driftcheck.groups import block_group
from driftcheck.model import Finding, Fix, Problem
from driftcheck.project import module_name_of
from driftcheck.rules.base import drift

from .dead import STYLE as DELETE
from .dead import plan_delete
from .deepstack import nesting, run_deep
from .flips import Change, FlipError, compute_change, site_receivers
from .fragment import FragmentError
from .held import applied_note, held_back_members, held_back_of, held_fix, not_applied_note
from .imports import import_edit, import_statement
from .layout import lay_out
from .plan import FileContext, HeldBack, Refusal, Replacement, Rewrite, SiteJob
from .text import LineIndex, SourceFile, read_source, source_of
from .unused import unused_receiver_edits
from .write import WriteError, compiles, unified_diff, write_atomically


def fixable(finding: Finding) -> bool:
    """Whether ``finding``'s rule offers a fix (its examples say so) and it has a site."""
    from driftcheck.rules import CATALOGUE

    rule = CATALOGUE.get(finding.code)
    return rule is not None and rule.fixable() and finding.site is not None


@dataclass
class FixOutcome:
    """What applying the fixes did: per-file changes, notes for stderr, what is left."""

    fixed: list[Finding] = field(default_factory=list)
    remaining: list[Finding] = field(default_factory=list)
    # fixed findings whose fix held members back: they are also in ``remaining``
    partial: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    changes: dict[str, tuple[str, str]] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)

    @property
    def held_back(self) -> int:
        """The remaining findings whose fix left members out (``--unsafe-fixes`` adds them)."""
        return sum(1 for f in self.remaining if f.fix is not None and f.fix.held_back)

    @property
    def groups(self) -> tuple[int, int]:
        """How many fixed findings are sites of a group (sites that meet in one block, fixed
        as one change: :mod:`driftcheck.groups`), and how many such groups were fixed."""
        counted: dict[tuple[str, str], int] = defaultdict(int)
        for finding in self.fixed:
            group = block_group(finding.path, finding.canonical, finding.site)
            if group is not None:
                counted[group] += 1
        together = [n for n in counted.values() if n > 1]
        return sum(together), len(together)

    @cached_property
    def diff_text(self) -> str:
        """A unified diff of every changed file (``a/``/``b/`` prefixes, root-relative)."""
        return "".join(
            unified_diff(rel, old, new) for rel, (old, new) in sorted(self.changes.items())
        )


# -- planning ------------------------------------------------------------------------------
def attach_fixes(
    result: CheckResult, findings: list[Finding], style: str, *, unsafe: bool = False
) -> list[Finding]:
    """``findings`` with ``fix`` or ``fix_refusal`` set on each DC001/DC003/DC005 finding.

    ``style`` is ``minimal`` or ``helper``; a per-site policy's ``fix-style`` overrides it.
    Each fix adds the safe members only, unless ``unsafe`` (``--unsafe-fixes``): then the
    held-back ones too. A fix that may add nothing flips nothing and lists what it leaves out.
    """
    if result.universe is None or result.loaded is None:
        return findings
    by_path: dict[str, list[int]] = defaultdict(list)
    for index, finding in enumerate(findings):
        if fixable(finding):
            by_path[finding.path].append(index)
    if not by_path:
        return list(findings)
    # a plan reads other files (where a name is defined): the deferred ones too
    result.complete()

    def plan() -> list[Finding]:
        out = list(findings)
        for rel, indexes in by_path.items():
            chosen = [findings[i] for i in indexes]
            for index, fix, refusal in _plan_file(result, rel, chosen, style, unsafe):
                out[indexes[index]] = replace(chosen[index], fix=fix, fix_refusal=refusal)
        return out

    levels = max(_nesting(findings[i]) for indexes in by_path.values() for i in indexes)
    return run_deep(levels, plan)


def _nesting(finding: Finding) -> int:
    """How deep libcst's tree of the finding's expression nests (0: not an expression)."""
    try:
        return nesting(finding.site.text) if finding.site is not None else 0
    except FragmentError:
        return 0


def _plan_file(  # noqa: C901 - each way a plan can fail is caught where it happens, so one bad site never stops the file
    result: CheckResult, rel: str, findings: list[Finding], style: str, unsafe: bool
) -> list[tuple[int, Fix | None, str | None]]:
    scan = result.scans.get(rel)
    try:
        source = _read(result, rel)
    except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
        return [(i, None, f"cannot read the file: {exc}") for i in range(len(findings))]
    if scan is None or source.digest != scan.digest:
        return [
            (i, None, "the file changed since it was checked; run again")
            for i in range(len(findings))
        ]
    from driftcheck.rules import CATALOGUE

    outcomes: dict[int, tuple[Fix | None, str | None]] = {}
    planned: list[tuple[int, SiteJob, Rewrite]] = []
    contexts: dict[str, FileContext] = {}
    ctx: FileContext | None = None
    groups = _groups(findings)
    for index, finding in enumerate(findings):
        try:
            job = _job(result, finding, unsafe)
            ctx = contexts.get(job.site.universe) or _context(
                result, rel, source, job.site.universe
            )
            contexts[job.site.universe] = ctx
            unread = result.reads.unread(job.site) if result.reads is not None else ()
            if unread:  # the finding says to delete it: never widen it
                receivers = frozenset(site_receivers(job.site, ctx.universe))
                job = replace(job, held_back=frozenset())
                planned.append((index, job, plan_delete(ctx, job, unread, receivers)))
                continue
            policy = result.config.policy_for(finding.path, finding.symbol)
            chosen = policy.fix_style if policy is not None and policy.fix_style else style
            rule = CATALOGUE[finding.code]()
            if job.held_back and not job.adds:
                # planned in full all the same: a fix that could not be made is refused
                full = rule.plan_fix(ctx, replace(job, held_back=frozenset()), chosen)
                outcomes[index] = (held_fix(ctx, job, full.style), None)
                continue
            try:
                planned.append((index, job, rule.plan_fix(ctx, job, chosen)))
            except HeldBack:  # a style that adds every member at once
                outcomes[index] = (held_fix(ctx, job, "helper"), None)
        except Refusal as exc:
            outcomes[index] = (None, str(exc))
        except (SyntaxError, ValueError) as exc:  # parsing the whole module
            outcomes[index] = (None, f"cannot parse the file: {exc}")
        except RecursionError:
            outcomes[index] = (None, "the expression is nested too deeply to rewrite")
        except Exception as exc:  # a planning bug must neither stop the run nor touch the file
            outcomes[index] = (None, _bug(exc))
    if ctx is None:
        return [(i, *_whole(outcomes, groups, findings, i)) for i in range(len(findings))]
    planned = _drop_overlaps(planned, outcomes, ctx)
    checked: list[tuple[int, SiteJob, Rewrite]] = []
    changes: dict[int, Change] = {}
    for index, job, rewrite in planned:
        if rewrite.style == DELETE:  # nothing reads what it sets: no backend changes
            changes[index] = Change(())
            checked.append((index, job, rewrite))
            continue
        try:
            changes[index] = _checked_change(contexts[job.site.universe], job, rewrite)
            checked.append((index, job, rewrite))
        except Refusal as exc:
            outcomes[index] = (None, str(exc))
        except Exception as exc:
            outcomes[index] = (None, _bug(exc))
    # imports and unused receivers are decided once the set of rewrites is final
    checked = _add_imports(checked, outcomes, ctx)
    try:
        extras = unused_receiver_edits(
            ctx, [(job.site.span.line, rewrite) for _, job, rewrite in checked]
        )
    except Exception:  # keeping a receiver variable is always safe
        extras = {}
    for position, (index, job, rewrite) in enumerate(checked):
        rewrite = replace(rewrite, extra=(*rewrite.extra, *extras.get(position, [])))
        outcomes[index] = (_as_fix(ctx, job, rewrite, changes[index]), None)
    return [(i, *_whole(outcomes, groups, findings, i)) for i in range(len(findings))]


# -- sites that meet in one block: fixed as one group --------------------------------------
def _groups(findings: list[Finding]) -> dict[int, list[int]]:
    """Each finding of a group of two or more (:func:`driftcheck.groups.block_group`), by
    index: the indexes of its group, in file order."""
    by_group: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, finding in enumerate(findings):
        group = block_group(finding.path, finding.canonical, finding.site)
        if group is not None:
            by_group[group].append(index)
    return {i: members for members in by_group.values() if len(members) > 1 for i in members}


def _whole(
    outcomes: dict[int, tuple[Fix | None, str | None]],
    groups: dict[int, list[int]],
    findings: list[Finding],
    index: int,
) -> tuple[Fix | None, str | None]:
    """Finding ``index``'s outcome, refused when another site of its group cannot be fixed
    while this one would be written: a group is never left half-fixed."""
    fix, refusal = outcomes[index]
    if fix is None or not fix.writes or index not in groups:
        return fix, refusal
    for other in groups[index]:
        other_fix, why = outcomes[other]
        if other_fix is None and why is not None:
            line = findings[other].span.line
            return None, f"fixed together with line {line} of its block, which is not fixed: {why}"
    return fix, refusal


def _read(result: CheckResult, rel: str) -> SourceFile:
    """File ``rel`` as the run judged it: its unsaved buffer (the language server's), else
    the file."""
    path = result.root / rel
    if rel in result.buffers:
        return source_of(path, result.buffers[rel])
    return read_source(path)


def _bug(exc: Exception) -> str:
    return f"driftcheck bug while planning the fix ({type(exc).__name__}: {exc}); please report it"


def _context(result: CheckResult, rel: str, source, key: str) -> FileContext:
    loaded = result.loaded_for(key)
    assert loaded is not None
    return FileContext(
        rel=rel,
        source=source,
        universe=result.universes.get(key, loaded.universe),
        scope=loaded.scope,
        module_name=module_name_of(result.root, result.root / rel),
        root=result.root,
        all_files=tuple(result.scans),
    )


def _job(result: CheckResult, finding: Finding, unsafe: bool) -> SiteJob:
    site = finding.site
    universe = result.universes.get(site.universe) if site is not None else None
    universe = universe or result.universe
    family = universe.family(finding.canonical) if universe is not None else None
    if site is None or family is None or universe is None:
        raise Refusal("the finding's enumeration was not found in the scan")
    _, raw_missing, _ = drift(site, family, universe)
    allowed = frozenset(raw_missing) - frozenset(finding.missing)
    return SiteJob(finding, site, family, allowed, held_back_members(finding, unsafe))


def _ranges(rewrite: Rewrite) -> list[tuple[int, int]]:
    return [(r.start, r.end) for r in rewrite.replacements()]


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two edits touch the same text (an insertion conflicts strictly inside a range,
    or at the very point of another insertion)."""
    (s1, e1), (s2, e2) = a, b
    if s1 == e1 and s2 == e2:
        return s1 == s2
    if s1 == e1:
        return s2 < s1 < e2
    if s2 == e2:
        return s1 < s2 < e1
    return s1 < e2 and s2 < e1


def _drop_overlaps(
    planned: list[tuple[int, SiteJob, Rewrite]],
    outcomes: dict[int, tuple[Fix | None, str | None]],
    ctx: FileContext,
) -> list[tuple[int, SiteJob, Rewrite]]:
    """Keep the outer of nested or overlapping rewrites; refuse the others."""
    kept: list[tuple[int, SiteJob, Rewrite]] = []
    ordered = sorted(planned, key=lambda p: (p[2].primary.start, -p[2].primary.end))
    for index, job, rewrite in ordered:
        clash = next(
            (
                other
                for other in kept
                if any(_overlap(a, b) for a in _ranges(rewrite) for b in _ranges(other[2]))
            ),
            None,
        )
        if clash is not None:
            line = clash[1].site.span.line
            outcomes[index] = (
                None,
                f"overlaps the fix of the enclosing enumeration at line {line}; run --fix again",
            )
            continue
        kept.append((index, job, rewrite))
    return sorted(kept, key=lambda p: p[0])


def _add_imports(
    planned: list[tuple[int, SiteJob, Rewrite]],
    outcomes: dict[int, tuple[Fix | None, str | None]],
    ctx: FileContext,
) -> list[tuple[int, SiteJob, Rewrite]]:
    kept = []
    for index, job, rewrite in planned:
        if rewrite.style != "helper" or job.family.access not in ("function", "constant"):
            kept.append((index, job, rewrite))
            continue
        try:
            edit = import_edit(ctx, job.family, job.site.span.line)
        except Refusal as exc:
            outcomes[index] = (None, str(exc))
            continue
        except Exception as exc:
            outcomes[index] = (None, _bug(exc))
            continue
        if edit is not None:
            rewrite = replace(
                rewrite, extra=(*rewrite.extra, edit), import_line=import_statement(job.family)
            )
        kept.append((index, job, rewrite))
    return kept


def _checked_change(ctx: FileContext, job: SiteJob, rewrite: Rewrite) -> Change:
    """The rewrite's computed change; refused unless it flips exactly the members it adds."""
    try:
        change = compute_change(
            ctx.scope,
            ctx.universe,
            rewrite.before,
            rewrite.after,
            set(rewrite.receivers),
            rewrite.before_names,
            rewrite.after_names,
        )
    except FlipError as exc:
        raise Refusal(f"cannot compute which backends the rewrite flips: {exc}") from exc
    rank: dict[str, int] = {}
    for member in (*job.family.members, *ctx.universe.values):
        rank.setdefault(member, len(rank))
    change = replace(change, directions=tuple(sorted(change.directions, key=lambda d: rank[d[0]])))
    expected = tuple(sorted(job.adds, key=rank.__getitem__))
    if change.flips != expected:
        raise Refusal(
            f"driftcheck bug: the {rewrite.style} rewrite would flip "
            f"{', '.join(change.flips) or 'nothing'}, not {', '.join(expected)}; please report it"
        )
    return change


def _as_fix(ctx: FileContext, job: SiteJob, rewrite: Rewrite, change: Change) -> Fix:
    """The planned rewrite in the model's terms (``ast`` spans), with what it leaves out."""
    index = ctx.index
    primary = rewrite.primary
    dead = rewrite.style == DELETE
    return Fix(
        style=rewrite.style,  # type: ignore[arg-type]
        span=index.span_of(primary.start, primary.end),
        replacement=lay_out(ctx.source.text, primary.start, primary.end, primary.text, ctx.layout),
        flips=change.flips,
        import_line=rewrite.import_line,
        change=f"deleted (nothing reads {', '.join(job.site.unread)})"
        if dead
        else change.describe(),
        edits=tuple((index.span_of(r.start, r.end), r.text) for r in rewrite.extra),
        held_back=held_back_of(job),
        members=() if dead else job.finding.applicability,
    )


# -- applying ------------------------------------------------------------------------------
def apply_fixes(
    result: CheckResult,
    findings: list[Finding],
    write: bool,
    additions: dict[str, str] | None = None,
) -> FixOutcome:
    """Apply the fixes attached to ``findings`` (and append ``additions``, text per file: the
    helpers ``--create-helper`` writes); write the files when ``write`` is true."""
    additions = additions or {}
    outcome = FixOutcome()
    by_path: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        if finding.fix is not None and finding.fix.writes:
            by_path[finding.path].append(finding)
            continue
        outcome.remaining.append(finding)
        why = finding.fix_refusal if finding.fix is None else not_applied_note(finding.fix)
        if why is not None:
            outcome.notes.append(
                f"{finding.path}:{finding.span.line}: not fixed {finding.code}: {why}"
            )
    for rel in sorted(set(by_path) | set(additions)):
        _apply_file(result, rel, by_path.get(rel, []), write, outcome, additions.get(rel, ""))
    order = {id(f): i for i, f in enumerate(findings)}
    outcome.remaining.sort(key=lambda f: order[id(f)])
    outcome.notes.sort(key=_note_key)
    return outcome


def _note_key(note: str) -> tuple[str, int]:
    path, _, rest = note.partition(":")
    line = rest.split(":", 1)[0]
    return path, int(line) if line.isdigit() else 0


def _apply_file(
    result: CheckResult,
    rel: str,
    findings: list[Finding],
    write: bool,
    outcome: FixOutcome,
    addition: str = "",
) -> None:
    path = result.root / rel
    scan = result.scans.get(rel)
    try:
        source = _read(result, rel)
    except (OSError, UnicodeDecodeError, SyntaxError, LookupError) as exc:
        outcome.problems.append(Problem(rel, None, f"not fixed: cannot read the file: {exc}"))
        outcome.remaining.extend(findings)
        return
    if findings and (scan is None or source.digest != scan.digest):
        outcome.problems.append(
            Problem(rel, None, "not fixed: the file changed since it was checked")
        )
        outcome.remaining.extend(findings)
        return
    broken = compiles(source.text, rel)
    if broken is not None:
        # the check reads only the statements around its sites; a fix must see the whole file
        outcome.problems.append(
            Problem(rel, None, f"not fixed: the file does not compile ({broken})")
        )
        outcome.remaining.extend(findings)
        return
    index = LineIndex(source.text)
    accepted: list[Finding] = []
    taken: list[Replacement] = []
    for finding in sorted(findings, key=lambda f: (f.span.line, f.span.col)):
        mine = [r for r in _edits(index, finding, deletions=True) if r not in taken]
        if any(_overlap((a.start, a.end), (b.start, b.end)) for a in mine for b in taken):
            outcome.remaining.append(finding)
            outcome.notes.append(
                f"{rel}:{finding.span.line}: not fixed {finding.code}: overlaps another fix; run --fix again"
            )
            continue
        accepted.append(finding)
        taken.extend(mine)
    new_text = _splice(source.text, taken)
    if len(accepted) < len(findings) or compiles(new_text, rel) is not None:
        # a partial set: a removed receiver may still be needed by a fix left out, so keep it
        accepted, new_text = _compiling_subset(source.text, index, accepted, rel, outcome)
    if addition:
        new_text = _with_addition(new_text, addition, source.newline)
        error = compiles(new_text, rel)
        if error is not None:
            outcome.problems.append(
                Problem(rel, None, f"not changed: the helper would not compile ({error})")
            )
            return
    elif not accepted:
        return
    if write:
        try:
            write_atomically(path, source.encode(new_text), expected_digest=source.digest)
        except WriteError as exc:
            outcome.problems.append(Problem(rel, None, f"not fixed: {exc}"))
            outcome.remaining.extend(accepted)
            return
        outcome.written.append(rel)
    outcome.changes[rel] = (source.text, new_text)
    verb = "fixed" if write else "would fix"
    for finding in accepted:
        fix = finding.fix
        assert fix is not None
        outcome.fixed.append(finding)
        if fix.held_back:
            outcome.partial.append(finding)
            outcome.remaining.append(finding)
        outcome.notes.append(
            f"{rel}:{finding.span.line}: {verb} {finding.code} ({fix.style}): "
            f"{fix.change}{applied_note(fix)}"
        )


def _with_addition(text: str, addition: str, newline: str) -> str:
    """``text`` with ``addition`` appended after a line break, in the file's line endings."""
    if text and not text.endswith(("\n", "\r")):
        text += newline
    return text + addition.replace("\n", newline)


def _edits(index: LineIndex, finding: Finding, deletions: bool) -> list[Replacement]:
    """The fix's replacements in file offsets; ``deletions=False`` leaves out pure deletions
    (an unused receiver's assignment)."""
    fix = finding.fix
    assert fix is not None
    start, end = index.range_of(fix.span)
    edits = [Replacement(start, end, fix.replacement)]
    for span, text in fix.edits:
        if text or deletions:
            start, end = index.range_of(span)
            edits.append(Replacement(start, end, text))
    return edits


def _splice(text: str, replacements: list[Replacement]) -> str:
    """``text`` with non-overlapping ``replacements`` applied, from the end backwards."""
    for r in sorted(replacements, key=lambda r: (r.start, r.end), reverse=True):
        text = text[: r.start] + r.text + text[r.end :]
    return text


def _compiling_subset(
    text: str, index: LineIndex, findings: list[Finding], rel: str, outcome: FixOutcome
) -> tuple[list[Finding], str]:
    """The fixes that compile, added one at a time, without deleting any statement."""
    kept: list[Finding] = []
    taken: list[Replacement] = []
    for finding in findings:
        mine = [r for r in _edits(index, finding, deletions=False) if r not in taken]
        error = compiles(_splice(text, [*taken, *mine]), rel)
        if error is None:
            kept.append(finding)
            taken.extend(mine)
        else:
            outcome.remaining.append(finding)
            outcome.notes.append(
                f"{rel}:{finding.span.line}: not fixed {finding.code}: the rewrite would not compile ({error})"
            )
    return kept, _splice(text, taken)
