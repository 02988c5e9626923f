"""What a fix leaves out: its held-back members (Ruff's unsafe fixes, decided per member by
the rule: :mod:`driftcheck.rules.applicability`), the fix that flips nothing when none of
its members may be added, and how the notes of ``--fix`` and ``--diff`` name them.

``--fix`` adds the safe members only; ``--unsafe-fixes`` adds the held-back ones too. The
helper style replaces the whole list, so it adds every member or none: with a member held
back it applies only with ``--unsafe-fixes``.
"""

from __future__ import annotations

from driftcheck.model import Finding, Fix

from .plan import FileContext, HeldBack, Rewrite, SiteJob

UNSAFE_FLAG = "--unsafe-fixes"


def held_back_members(finding: Finding, unsafe: bool) -> frozenset[str]:
    """The missing members this run's fix of ``finding`` leaves out."""
    return frozenset() if unsafe else frozenset(a.member for a in finding.held_back)


def _reasons(finding: Finding) -> dict[str, str]:
    return {a.member: a.reason for a in finding.applicability}


def unless_held(job: SiteJob, rewrite: Rewrite) -> Rewrite:
    """``rewrite`` (which adds every missing member at once) unless a member is held back:
    then :class:`HeldBack`, whose message says the rewrite needs ``--unsafe-fixes``."""
    held = held_back_of(job)
    if not held:
        return rewrite
    raise HeldBack(all_or_nothing(rewrite.style, held))


def all_or_nothing(style: str, held: tuple[tuple[str, str], ...]) -> str:
    """``the helper style adds every member at once, and pplx (no same-role site lists it) is
    held back: applied only with --unsafe-fixes``."""
    verb = "is" if len(held) == 1 else "are"
    return (
        f"the {style} style adds every member at once, and {_grouped(held)} {verb} held back: "
        f"applied only with {UNSAFE_FLAG}"
    )


def held_back_of(job: SiteJob) -> tuple[tuple[str, str], ...]:
    """The members a fix that adds ``job.adds`` leaves out, each with why."""
    reasons = _reasons(job.finding)
    return tuple((m, reasons.get(m, "")) for m in job.finding.missing if m in job.held_back)


def held_fix(ctx: FileContext, job: SiteJob, style: str) -> Fix:
    """The fix of a job that adds nothing: every missing member is held back, or ``style``
    adds them all at once and some are. It flips nothing, replaces the site's expression with
    its own text, and lists every member it leaves out with why (a safe member left out by
    an all-at-once style: ``the helper style adds every member at once``)."""
    start, end = ctx.index.range_of(job.site.span)
    reasons = _reasons(job.finding)
    whole = f"the {style} style adds every member at once"
    return Fix(
        style=style,  # type: ignore[arg-type]
        span=job.site.span,
        replacement=ctx.source.text[start:end],
        flips=(),
        held_back=tuple(
            (m, reasons.get(m, "") if m in job.held_back else whole) for m in job.finding.missing
        ),
        members=job.finding.applicability,
    )


def applied_note(fix: Fix) -> str:
    """What a note adds after the fix's change: the members it held back (``; held back:
    pplx (no same-role site lists it): --unsafe-fixes adds it``), or the unsafe members it
    applied (``; unsafe: pplx (no same-role site lists it)``)."""
    if fix.held_back:
        return f"; held back: {_adds(fix.held_back)}"
    unsafe = tuple((a.member, a.reason) for a in fix.members if not a.safe)
    return f"; unsafe: {_grouped(unsafe)}" if unsafe else ""


def not_applied_note(fix: Fix) -> str:
    """Why a fix that flips nothing is not applied: ``held back: mori, pplx (no same-role
    site lists them): --unsafe-fixes adds them``, or the all-at-once style's reason."""
    unsafe = {a.member for a in fix.members if not a.safe}
    held = tuple((m, why) for m, why in fix.held_back if m in unsafe)
    if len(held) < len(fix.held_back):  # a safe member left out: the style adds all at once
        return all_or_nothing(fix.style, held)
    return f"held back: {_adds(held)}"


def _adds(held: tuple[tuple[str, str], ...]) -> str:
    pronoun = "it" if len(held) == 1 else "them"
    return f"{_grouped(held)}: {UNSAFE_FLAG} adds {pronoun}"


def _grouped(held: tuple[tuple[str, str], ...]) -> str:
    """``mori, pplx (no same-role site lists them)``: members with the same reason together."""
    by_reason: dict[str, list[str]] = {}
    for member, why in held:
        by_reason.setdefault(why, []).append(member)
    parts = []
    for why, members in by_reason.items():
        if len(members) > 1 and why.endswith(" it"):
            why = why.removesuffix(" it") + " them"
        parts.append(f"{', '.join(members)} ({why})")
    return "; ".join(parts)
