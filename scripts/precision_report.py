"""Regenerate docs/precision-report.md: every finding (all rules) on each pinned sglang release
from 0.5.11 on, joined with the hand reviews (docs/reviews.toml) and the labelled upstream
history (docs/upstream-history.toml) for precision, recall and fixed-upstream marks.

Usage: python scripts/precision_report.py
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib
from driftcheck.rules import CATALOGUE

from driftcheck.corpus import PINNED_SHA256, fetch_release
from driftcheck.engine import CheckResult, check
from driftcheck.fix.apply import attach_fixes
from driftcheck.model import Finding

REPO = Path(__file__).resolve().parent.parent
FIRST = (0, 5, 11)  # the first release that defines is_deepep_class_backend()
KINDS = ("property", "allowlist", "dispatch")
LINE_WINDOW = 20  # a history record matches a finding this many lines away (code moves a bit)
VERDICTS = ("drift", "not drift", "advice")

Key = tuple[str, str, str]  # (path, subject, code): one review covers the site in every release
Reviews = dict[Key, dict[str, str]]
Record = dict[str, Any]  # one [[change]] of docs/upstream-history.toml


def version_key(version: str) -> tuple[int, ...]:
    """'0.5.9' -> (0, 5, 9), so that 0.5.10 sorts after 0.5.9."""
    return tuple(int(part) for part in version.split("."))


def releases() -> list[str]:
    """The pinned releases from FIRST on, oldest first."""
    return sorted((v for v in PINNED_SHA256 if version_key(v) >= FIRST), key=version_key)


def is_default(code: str) -> bool:
    """Whether a code is in the default report (no --select)."""
    return CATALOGUE[code].default_enabled


def key_of(finding: Finding) -> Key:
    """The reviews' key of a finding."""
    return (finding.path, finding.subject, finding.code)


def site_of(finding: Finding) -> tuple[str, str, str]:
    """A distinct site, whichever releases report it: its file, symbol and list text."""
    return (finding.path, finding.symbol, finding.site.text if finding.site else finding.subject)


def distinct_sites(
    runs: dict[str, list[Finding]], reviews: Reviews, errors: bool
) -> tuple[int, int, int]:
    """(distinct sites, judged drift, judged differently in different releases) over every
    release's default report (its errors alone when ``errors``): a site counts once however
    many releases report it, and as drift when every review of its findings says so."""
    verdicts: dict[tuple[str, str, str], set[str]] = {}
    for findings in runs.values():
        for f in findings:
            if is_default(f.code) and (f.severity == "error" or not errors):
                review = reviews.get(key_of(f))
                verdicts.setdefault(site_of(f), set()).add(
                    review["verdict"] if review else "unreviewed"
                )
    drift = sum(1 for v in verdicts.values() if v == {"drift"})
    mixed = sum(1 for v in verdicts.values() if len(v) > 1)
    return len(verdicts), drift, mixed


def load_toml(name: str) -> dict[str, Any]:
    """A TOML file of docs/."""
    return tomllib.loads((REPO / "docs" / name).read_text())


def run_all(
    versions: list[str], history: list[Record]
) -> tuple[dict[str, list[Finding]], list[Agreement]]:
    """Every finding of every rule per release, sorted, and the fix agreement of each
    measurable upstream fix; each release is checked once. The default report of the newest
    is checked against a default run, so that 'default' below (the default-enabled codes of
    an ALL run) means what a plain `driftcheck` prints."""
    runs: dict[str, list[Finding]] = {}
    agreements: list[Agreement] = []
    for version in versions:
        result = check([fetch_release(version)], use_cache=False, select=["ALL"])
        assert not result.problems, (version, result.problems)
        runs[version] = sorted(
            result.findings, key=lambda f: (f.path, f.span.line, f.span.col, f.code, f.subject)
        )
        agreements += fix_agreements(version, result, history)
    newest = versions[-1]
    plain = check([fetch_release(newest)], use_cache=False).findings
    subset = [f.to_dict() for f in runs[newest] if is_default(f.code)]
    assert sorted(map(repr, subset)) == sorted(repr(f.to_dict()) for f in plain), newest
    return runs, agreements


@dataclass(frozen=True)
class Agreement:
    """What driftcheck's fix adds at an upstream fix's `from` release, against what upstream
    added: ``safe`` is what `--fix` writes, ``held`` what it leaves for `--unsafe-fixes`."""

    record: Record
    finding: Finding | None  # the default finding the record matches (None: not flagged)
    safe: tuple[str, ...] = ()
    held: tuple[str, ...] = ()
    refusal: str = ""

    @property
    def upstream(self) -> tuple[str, ...]:
        """The family members upstream's fix added."""
        return tuple(self.record["added"])

    @property
    def matches(self) -> bool:
        """Whether `--fix` adds exactly upstream's members."""
        return self.finding is not None and set(self.safe) == set(self.upstream)

    @property
    def full_matches(self) -> bool:
        """Whether `--unsafe-fixes` (every missing member) adds exactly upstream's members."""
        return self.finding is not None and set(self.finding.missing) == set(self.upstream)


def fix_agreements(version: str, result: CheckResult, history: list[Record]) -> list[Agreement]:
    """The measurable drift fixes from ``version``, each with the nearest default finding
    that matches it and what that finding's `--fix` (default style) would add."""
    found: list[Agreement] = []
    for record in measurable_fixes(history):
        if record["from"] != version:
            continue
        hits = [f for f in result.findings if is_default(f.code) and matches(f, record)]
        if not hits:
            found.append(Agreement(record, None))
            continue
        nearest = min(hits, key=lambda f: (abs(f.span.line - record["line"]), f.span.line))
        fixed = attach_fixes(result, [nearest], result.config.fix_style)[0]
        fix = fixed.fix
        if fix is None:
            held = tuple(a.member for a in nearest.held_back)
            found.append(Agreement(record, nearest, (), held, fixed.fix_refusal or ""))
            continue
        safe = fix.flips if fix.writes else ()
        found.append(Agreement(record, nearest, safe, tuple(m for m, _ in fix.held_back)))
    return found


def measurable_fixes(history: list[Record]) -> list[Record]:
    """The measurable drift-fix records (the helper existed and lacked a member they add),
    by release, path and line."""
    fixes = [c for c in history if c["classification"] == "drift-fix" and c.get("measurable")]
    return sorted(fixes, key=lambda c: (version_key(c["from"]), c["path"], c["line"]))


def where(version: str, finding: Finding) -> tuple[Any, ...]:
    """A finding's identity within one run: release, file, position, code and subject."""
    return (
        version,
        finding.path,
        finding.span.line,
        finding.span.col,
        finding.code,
        finding.subject,
    )


def matches(finding: Finding, record: Record) -> bool:
    """A history record names the finding's site: same file and symbol, nearby line."""
    return (
        finding.path == record["path"]
        and finding.symbol == record["symbol"]
        and abs(finding.span.line - record["line"]) <= LINE_WINDOW
    )


@dataclass
class Joined:
    """The findings of every release joined with the upstream drift fixes."""

    # where(release, finding) -> (release that fixed it, True when matched at `from` itself)
    fixed: dict[tuple[Any, ...], tuple[str, bool]] = field(default_factory=dict)
    # release -> measurable drift-fix records of that `from` no default finding matches
    missed: dict[str, list[Record]] = field(default_factory=dict)
    # release -> measurable drift-fix records of that `from` a default finding matches
    recalled: Counter = field(default_factory=Counter)


def join_history(runs: dict[str, list[Finding]], history: list[Record]) -> Joined:
    """Mark findings fixed upstream and count recall. A finding at R is fixed upstream in R'
    when a drift-fix record from R to R' matches it; the same (path, subject, code) in the
    unbroken run of releases before R is marked too ("carried"). A measurable fix is recalled
    when a default finding matches it at its `from` release."""
    joined = Joined()
    versions = list(runs)
    fixes = [c for c in history if c["classification"] == "drift-fix" and c["from"] in runs]
    for record in sorted(fixes, key=lambda c: (version_key(c["from"]), c["path"], c["line"])):
        hits = [f for f in runs[record["from"]] if matches(f, record)]
        if record.get("measurable"):
            if any(is_default(f.code) for f in hits):
                joined.recalled[record["from"]] += 1
            else:
                joined.missed.setdefault(record["from"], []).append(record)
        keys = {key_of(f) for f in hits}
        for f in hits:
            joined.fixed[where(record["from"], f)] = (record["to"], True)
        for earlier in reversed(versions[: versions.index(record["from"])]):
            keys &= {key_of(f) for f in runs[earlier]}
            for f in runs[earlier]:
                if key_of(f) in keys:
                    joined.fixed.setdefault(where(earlier, f), (record["to"], False))
    return joined


def cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|")


def counts_table(findings: list[Finding]) -> list[str]:
    """Counts per code and kind, default codes first."""
    counts = Counter((f.code, f.kind) for f in findings)
    codes = sorted({f.code for f in findings}, key=lambda c: (not is_default(c), c))
    rows = [
        "| code | default | " + " | ".join(KINDS) + " | total |",
        "| --- | --- | " + " | ".join("---:" for _ in KINDS) + " | ---: |",
    ]
    for code in codes:
        per_kind = [counts[(code, kind)] for kind in KINDS]
        rows.append(
            f"| {code} | {'yes' if is_default(code) else 'no'} | "
            + " | ".join(str(n) if n else "" for n in per_kind)
            + f" | {sum(per_kind)} |"
        )
    return rows


def finding_row(
    finding: Finding, review: dict[str, str] | None, fixed: tuple[str, bool] | None
) -> str:
    """One per-finding table row."""
    f = finding
    site = ": ".join(part for part in (f.site.context, f.site.role.name) if part) if f.site else "-"
    held = {a.member for a in f.held_back}
    missing = (
        ", ".join(
            f"{m} (latent)" if m in f.latent else f"{m} (held back)" if m in held else m
            for m in f.missing
        )
        or "-"
    )
    verdict = f"{review['verdict']}: {review['note']}" if review else "UNREVIEWED"
    upstream = "-" if fixed is None else fixed[0] + ("" if fixed[1] else " (carried)")
    return (
        f"| {f.code} | {f.severity} | {'yes' if is_default(f.code) else 'no'} | {f.kind} | "
        f"`{f.path}:{f.span.line}` | {cell(f.subject)} | {cell(site)} | {missing} | "
        f"{upstream} | {cell(verdict)} |"
    )


def tally(version: str, findings: list[Finding], reviews: Reviews, joined: Joined) -> Counter:
    """Summary counts of one release's default report."""
    counts: Counter = Counter()
    for f in findings:
        if not is_default(f.code):
            counts["drift off by default"] += reviews.get(key_of(f), {}).get("verdict") == "drift"
            continue
        review = reviews.get(key_of(f))
        counts["default"] += 1
        counts[review["verdict"] if review else "unreviewed"] += 1
        if f.severity == "error":
            counts["errors"] += 1
            counts["errors judged drift"] += bool(review) and review["verdict"] == "drift"
        counts["fixed upstream later"] += where(version, f) in joined.fixed
    counts["upstream fixes recalled"] = joined.recalled[version]
    counts["upstream fixes missed"] = len(joined.missed.get(version, []))
    return counts


def release_section(
    version: str, findings: list[Finding], reviews: Reviews, joined: Joined
) -> list[str]:
    """The markdown of one release: counts, findings, missed upstream fixes."""
    rows = [f"## sglang {version}", "", *counts_table(findings), ""]
    rows += [
        "| code | severity | default | kind | location | subject | site (form: role) "
        "| missing (live / latent) | fixed upstream | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    rows += [
        finding_row(f, reviews.get(key_of(f)), joined.fixed.get(where(version, f)))
        for f in findings
    ]
    missed = joined.missed.get(version, [])
    if missed:
        rows += ["", f"Measurable upstream drift fixes of {version} that driftcheck misses:", ""]
        rows += [
            f"- `{c['path']}:{c['line']}` {c['symbol']}: `{c['expr']}` "
            f"(missing {', '.join(c['missing_before'])}; fixed in {c['to']})"
            for c in missed
        ]
    return [*rows, ""]


SUMMARY_COLUMNS = (
    "default",
    "drift",
    "not drift",
    "advice",
    "unreviewed",
    "fixed upstream later",
    "upstream fixes recalled",
    "upstream fixes missed",
    "drift off by default",
)


def summary(
    tallies: dict[str, Counter], runs: dict[str, list[Finding]], reviews: Reviews
) -> list[str]:
    """The cross-release summary: one row per release, totals, precision and recall."""
    rows = [
        "## Summary",
        "",
        "| release | "
        + " | ".join(SUMMARY_COLUMNS)
        + " | precision | errors | precision of errors |",
        "| --- | " + " | ".join("---:" for _ in SUMMARY_COLUMNS) + " | ---: | ---: | ---: |",
    ]
    total: Counter = Counter()
    for version in reversed(runs):
        counts = tallies[version]
        total += counts
        rows.append(
            f"| {version} | "
            + " | ".join(str(counts[c]) for c in SUMMARY_COLUMNS)
            + f" | {ratio(counts)} | {counts['errors']} | {error_ratio(counts)} |"
        )
    rows.append(
        "| all | "
        + " | ".join(str(total[c]) for c in SUMMARY_COLUMNS)
        + f" | {ratio(total)} | {total['errors']} | {error_ratio(total)} |"
    )
    sites = {key_of(f) for fs in runs.values() for f in fs if is_default(f.code)}
    verdicts = Counter(reviews[k]["verdict"] if k in reviews else "unreviewed" for k in sites)
    recalled, missed = total["upstream fixes recalled"], total["upstream fixes missed"]
    distinct, sites_drift, mixed = distinct_sites(runs, reviews, errors=False)
    error_sites, error_sites_drift, error_mixed = distinct_sites(runs, reviews, errors=True)
    rows += [
        "",
        f"Recall: {recalled} of {recalled + missed} measurable upstream drift fixes are reported "
        "by the default report at the release before the fix.",
        f"Precision of the default report: {total['drift']} of "
        f"{sum(total[v] for v in VERDICTS)} reviewed findings judged drift ({ratio(total)}) "
        f"over all releases; by distinct (path, subject, code): {verdicts['drift']} of "
        f"{sum(verdicts[v] for v in VERDICTS)} ({ratio(verdicts)}), "
        f"{verdicts['unreviewed']} unreviewed. Errors alone (what fails a run under the default "
        f"`--fail-on error`): {total['errors judged drift']} of {total['errors']} judged drift "
        f"({error_ratio(total)}); the warnings are copies nothing reads, latent-only drift and "
        "redundant members.",
        "",
        "The sums above count a site once per release that reports it. As distinct sites (by "
        "file, symbol and list text, whichever releases report them): the default report's "
        f"errors are {error_sites} sites, {error_sites_drift} of them judged drift "
        f"({error_sites_drift / error_sites:.0%}); all its findings are {distinct} sites, "
        f"{sites_drift} judged drift ({sites_drift / distinct:.0%}). A site counts as drift when "
        f"every review of its findings says so ({error_mixed} error sites and {mixed} sites were "
        "judged differently in different releases, and count as not drift). The reviews are "
        "the project's own: each finding was read in context by the driftcheck developers, "
        "not by SGLang's maintainers.",
        "",
    ]
    return rows


def ratio(counts: Counter) -> str:
    """drift / reviewed default findings, as a percentage."""
    reviewed = sum(counts[v] for v in VERDICTS)
    return f"{counts['drift'] / reviewed:.0%}" if reviewed else "-"


def error_ratio(counts: Counter) -> str:
    """Error-severity default findings judged drift, as a percentage of those findings (the
    ones that fail a run under the default ``--fail-on error``)."""
    return f"{counts['errors judged drift'] / counts['errors']:.0%}" if counts["errors"] else "-"


def agreement_section(agreements: list[Agreement]) -> list[str]:
    """The fix agreement of every measurable upstream fix: a row each, then the figures."""
    rows = [
        "## Fix agreement",
        "",
        "| from → to | site | finding | safe (`--fix` adds) | held back | upstream added "
        "| upstream's change | match | full fix matches |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for a in agreements:
        r, f = a.record, a.finding
        site = f"`{r['path']}:{r['line']}` {r['symbol']}"
        change = "the helper" if f is not None and f.canonical in r["after_expr"] else "by hand"
        if f is None:
            rows.append(
                f"| {r['from']} → {r['to']} | {site} | not flagged | - | - | "
                f"{', '.join(a.upstream)} | {change} | no | no |"
            )
            continue
        safe = ", ".join(a.safe) or "-"
        if a.refusal:
            safe += f" (fix refused: {cell(a.refusal)})"
        rows.append(
            f"| {r['from']} → {r['to']} | {site} | {f.code} `:{f.span.line}` | {safe} | "
            f"{', '.join(a.held) or '-'} | {', '.join(a.upstream)} | {change} | "
            f"{'yes' if a.matches else 'no'} | {'yes' if a.full_matches else 'no'} |"
        )
    flagged = [a for a in agreements if a.finding is not None]
    extra = [a for a in flagged if set(a.safe) - set(a.upstream)]
    short = [a for a in flagged if set(a.upstream) - set(a.safe)]
    kept_back = [a for a in flagged if set(a.held) & set(a.upstream)]
    rows += [
        "",
        f"Fix agreement: `--fix` adds exactly upstream's members at "
        f"{sum(a.matches for a in agreements)} of {len(agreements)} measurable upstream fixes "
        f"({len(flagged)} flagged); the full fix (every missing member, `--unsafe-fixes`) at "
        f"{sum(a.full_matches for a in agreements)}. `--fix` adds a member upstream did not at "
        f"{len(extra)}, and adds less than upstream at {len(short)} (at {len(kept_back)} of "
        "them it holds back a member upstream added).",
        "",
        *member_agreement(flagged),
    ]
    return rows


def member_agreement(flagged: list[Agreement]) -> list[str]:
    """Per member, over the flagged upstream fixes: how often it was missing, what `--fix`
    did with it, and what upstream did."""
    assert all(a.finding is not None for a in flagged)
    seen = {m for a in flagged for m in a.finding.missing}  # type: ignore[union-attr]
    order = flagged[-1].record["helper_members"] if flagged else []  # the newest helper's order
    members = [m for m in order if m in seen] + sorted(seen - set(order))
    rows = [
        "| member | missing at | `--fix` adds | held back | upstream added | "
        "upstream added where held back | upstream left out where `--fix` adds |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for member in members:
        missing = [a for a in flagged if member in a.finding.missing]  # type: ignore[union-attr]
        added = [a for a in missing if member in a.safe]
        held = [a for a in missing if member in a.held]
        upstream = [a for a in missing if member in a.upstream]
        rows.append(
            f"| {member} | {len(missing)} | {len(added)} | {len(held)} | {len(upstream)} | "
            f"{sum(member in a.upstream for a in held)} | "
            f"{sum(member not in a.upstream for a in added)} |"
        )
    return [*rows, ""]


def unused_reviews(runs: dict[str, list[Finding]], reviews: Reviews) -> list[str]:
    """Reviews whose key matches no finding of any release covered."""
    seen = {key_of(f) for fs in runs.values() for f in fs}
    stale = sorted(k for k in reviews if k not in seen)
    if not stale:
        return []
    rows = ["## Reviews that match no finding", ""]
    rows += [f"- `{path}` {cell(subject)} {code}" for path, subject, code in stale]
    return [*rows, ""]


HEADER = f"""\
# Precision report: driftcheck on sglang releases

Generated by `python scripts/precision_report.py` (do not edit by hand). Every pinned release
from 0.5.11 (the first with `is_deepep_class_backend()`) is checked once with every rule
(`--select ALL`); `default` says whether the code is in the default report (the rule's
`default_enabled`; the newest release's subset is checked against a plain run).

How to read it:

- **Verdict** comes from `docs/reviews.toml` (each site read in context by hand), keyed by
  (path, subject, code) so one review covers the site in every release; UNREVIEWED: no review.
  drift = should follow the canonical helper; not drift = legitimate divergence; advice =
  DC002/DC005, correct today but worth cleaning up.
- **Kind**: property (decides a code path; errors), allowlist (validation; DC010, off by
  default), dispatch (per-backend arm or kernel capability; DC011, off by default). **Site**:
  the statement form and the role driftcheck gives the site (function: what the value decides).
- **Missing**: members of the family the site lacks; (latent) = gated per model at that release;
  (held back) = live, and no same-role site lists it: `--fix` leaves it for `--unsafe-fixes`
  (`driftcheck explain DC001`, Fix safety).
- **Fixed upstream**: the release whose drift fix (`docs/upstream-history.toml`, `drift-fix`
  records from this release) touches the finding's site: same path and symbol, line within
  {LINE_WINDOW}. (carried): the same (path, subject, code) reported in every release from this one to the
  fix's. Measurable fixes no default finding matches are listed under each release.
- **Summary**: counts over the default report per release; precision = drift / reviewed
  default findings; recall = measurable drift fixes (upstream fixes recalled + missed, listed
  under the `from` release) reported by the default report at the release before the fix.
- **Fix agreement**: for each measurable upstream drift fix, the default finding nearest its
  site at `from` and what its fix adds: **safe** = what `--fix` writes (default style);
  **held back** = what it leaves for `--unsafe-fixes`; **upstream added** = the family members
  upstream's change added (a switch to the helper adds all its members); **match** = `--fix`
  adds exactly upstream's set; **full fix matches** = every missing member (`--unsafe-fixes`)
  is upstream's set. Nothing is tuned to this table: the applicability rule is the one the rule
  docs state.
"""


def main() -> int:
    """Check every release, join reviews and history, write docs/precision-report.md."""
    versions = releases()
    reviews: Reviews = {
        (r["path"], r["subject"], r["code"]): r for r in load_toml("reviews.toml")["review"]
    }
    history = load_toml("upstream-history.toml")["change"]
    runs, agreements = run_all(versions, history)
    joined = join_history(runs, history)
    tallies = {v: tally(v, runs[v], reviews, joined) for v in versions}
    lines = [HEADER, *summary(tallies, runs, reviews), *agreement_section(agreements)]
    for version in reversed(versions):
        lines += release_section(version, runs[version], reviews, joined)
    lines += unused_reviews(runs, reviews)
    (REPO / "docs/precision-report.md").write_text("\n".join(lines).rstrip() + "\n")
    print(f"wrote docs/precision-report.md for {', '.join(versions)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
