"""Regenerate ``docs/reliability.md``: what was tried against hostile and broken input, and
what happened.

    /work/venv/bin/python scripts/reliability_report.py [--skip-load]

Runs, and reports from their own output:

* the property tests (``tests/test_properties.py``) under the fixed ``ci`` hypothesis profile
  (derandomized: the same examples every time), counting what the strategies generated;
* the bad-input table (``tests/test_bad_input.py``): each case with the exit code and the exact
  lines driftcheck printed, recorded by the tests themselves in the JUnit report;
* the never-run-linted-code tests over ``fixtures/hostile`` and the kept regressions;
* issue 31's cases, as a newcomer hit them: every ``tests/test_newcomer_*.py`` (a glob: a new
  file is picked up) and the tests of the cases kept elsewhere (``NEWCOMER_ELSEWHERE``), each
  test listed under its case (``ISSUE_31``, by name), a case no test ran for said so;
* the load benchmark (``benchmarks/bench_load.py``: SGLang 0.5.23 copied 10 times) and the
  site-shape benchmark (``benchmarks/bench_shapes.py``: issue 31's case 5, every site shape at
  1k, 2k and 4k sites in one file), unless ``--skip-load``.

Exit code 1 when a test failed or the load run reported a failure (the document is still
written, saying so).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "reliability.md"
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]


@dataclass
class Case:
    """One test case from a JUnit report."""

    module: str
    name: str
    outcome: str  # passed | failed | skipped | xfailed
    reason: str = ""
    properties: list[tuple[str, str]] = field(default_factory=list)


def run_pytest(
    paths: list[str], junit: Path, basetemp: Path, env: dict[str, str]
) -> tuple[int, str]:
    """Run pytest on ``paths``; the exit code and the output's tail."""
    command = [*PYTEST, f"--junitxml={junit}", f"--basetemp={basetemp}", *paths]
    proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    return proc.returncode, (proc.stdout + proc.stderr)[-6000:]


def read_junit(path: Path, basetemp: Path) -> list[Case]:
    """The test cases of a JUnit report, temporary paths replaced by ``<tmp>``."""
    cases = []
    for element in ET.parse(path).iter("testcase"):
        outcome, reason = "passed", ""
        for child in element:
            if child.tag in ("failure", "error"):
                outcome, reason = "failed", (child.get("message") or "")[:300]
            elif child.tag == "skipped":
                xfail = child.get("type") == "pytest.xfail"
                outcome, reason = ("xfailed" if xfail else "skipped"), child.get("message") or ""
        properties = [
            (prop.get("name") or "", scrub(prop.get("value") or "", basetemp))
            for prop in element.iter("property")
        ]
        module = (element.get("classname") or "").rsplit(".", 1)[-1]
        cases.append(Case(module, element.get("name") or "", outcome, reason, properties))
    return cases


def scrub(text: str, basetemp: Path) -> str:
    """Replace the per-test temporary directories in ``text`` by ``<tmp>``."""
    return re.sub(re.escape(str(basetemp)) + r"/[^/\s']+", "<tmp>", text)


def code(text: str) -> str:
    """``text`` as a Markdown code span inside a table cell."""
    text = text.replace("|", "\\|")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def title(name: str) -> str:
    """``test_symlink_loop_is_reported[x]`` -> ``symlink loop is reported [x]``."""
    name = name.removeprefix("test_")
    base, _, param = name.partition("[")
    return base.replace("_", " ") + (f" [{param}" if param else "")


# -- sections ------------------------------------------------------------------------------------
def property_section(cases: list[Case], stats: list[dict], code_: int, tail: str) -> list[str]:
    """The generated-cases section."""
    lines = ["## Property-based tests (hypothesis)", ""]
    lines.append(
        "`tests/strategies.py` generates a universe of 3-7 members and a canonical family of 2 "
        "or more, of one of four kinds (each property runs per kind): a string enum with `is_*` "
        "methods, a getter and a helper function; an `IntEnum`/`Enum`/`StrEnum` of `auto()` "
        "(or integer) members with `is_*` methods on the enum and a helper function or enum "
        "method; the same enum with its predicates on a holder class (a global and an "
        "attribute annotated with it, subclasses using `self`); a config class with a "
        "`@property` per value of a string setting and a canonical property. Then 1-3 model "
        "files embedding enumerations in every supported form (`is_*()` and property chains, "
        "value comparisons, constants of strings or enum members, `match` cases), among decoys "
        "that must not be reported. Profile `ci` (derandomized, the same examples every run); "
        "`DRIFTCHECK_HYPOTHESIS_PROFILE=thorough` runs 20 times as many, randomly."
    )
    lines.append("")
    lines.append("| property | result |")
    lines.append("| --- | --- |")
    for case in cases:
        lines.append(
            f"| {title(case.name)} | {case.outcome}{' (' + case.reason + ')' if case.reason else ''} |"
        )
    lines.append("")
    if stats:
        by_test = collections.Counter(s["test"] for s in stats)
        total = collections.Counter()
        for s in stats:
            for key in ("files", "sites", "drifting", "bytes"):
                total[key] += s[key]
        lines.append(
            f"Generated (cases written to disk and checked): {len(stats)} universes "
            f"({', '.join(f'{n} for {title(t)}' for t, n in sorted(by_test.items()))}), "
            f"{total['files']} model files ({total['bytes'] / 1e6:.1f} MB), {total['sites']} "
            f"enumeration sites of which {total['drifting']} drift (the rest name fewer than "
            "two family members or miss none and must not be reported)."
        )
        lines.append("")
        lines.append("| dimension | values generated (count) |")
        lines.append("| --- | --- |")
        kinds = collections.Counter(s.get("kind", "string-enum") for s in stats)
        values = ", ".join(f"{code(str(k))} {n}" for k, n in sorted(kinds.items()))
        lines.append(f"| universe kinds | {values} |")
        for key in (
            "forms",
            "operands",
            "receivers",
            "containers",
            "wrappers",
            "nests",
            "newlines",
            "encodings",
            "indents",
        ):
            counter = collections.Counter(v for s in stats for v in s[key])
            values = ", ".join(f"{code(str(k))} {n}" for k, n in sorted(counter.items()))
            lines.append(f"| {key} | {values} |")
        lines.append("")
    if code_ != 0:
        lines += ["Output of the failing run:", "", "```", tail.strip(), "```", ""]
    return lines


def evidence_table(cases: list[Case]) -> list[str]:
    """One row per case: result, exit codes, and the lines driftcheck printed."""
    lines = [
        "| case | result | exit | what driftcheck printed besides the fixture's two findings |",
        "| --- | --- | --- | --- |",
    ]
    for case in cases:
        exits = [v for k, v in case.properties if k == "exit"]
        printed = list(dict.fromkeys(v for k, v in case.properties if k in ("stderr", "stdout")))
        if len(printed) > 4:  # the 10 MB file's findings: the first ones and a count
            printed = [*printed[:2], f"... and {len(printed) - 2} more lines like these"]
        shown = "<br>".join(code(line) for line in printed) or "(no error or warning)"
        result = case.outcome + (
            f": {case.reason}"
            if case.outcome in ("skipped", "xfailed", "failed") and case.reason
            else ""
        )
        lines.append(
            f"| {title(case.name)} | {result} | {', '.join(dict.fromkeys(exits)) or '-'} | {shown} |"
        )
    return lines


# issue 31's cases: (number, what must be true, a pattern of the names of the tests that show
# it); a test is listed under the first case whose pattern finds its name
ISSUE_31 = (
    (
        "1",
        "a `[tool.driftcheck]` table below the root is an error naming it",
        r"nested_table|nested_pyproject|nested_driftcheck|table_inside",
    ),
    (
        "2",
        "suppressions are read past a syntax error, which is reported",
        r"syntax_error|tokenizer_error|unclosed_bracket|suppression_inside_a_string|"
        r"not_parsed_whole",
    ),
    (
        "3",
        "a suppression is stale only when every rule it applies to ran",
        r"stale|did_not_run|needed_by_a_full_run",
    ),
    (
        "4",
        "`.gitignore` and `.ignore` are honoured",
        r"gitignore|ignore_line|info_exclude|ignored|last_matching_line",
    ),
    ("5", "linear time for every site shape", r"linear|quadratic|shape"),
    ("6", "`verify` fails what it did not check", r"verify_site|verify_layer_on_cuda"),
    (
        "7",
        "install advice that works from this repository",
        r"install_advice|pre_commit_snippets|missing_package|without_its_extra",
    ),
    ("8a", "columns count characters", r"column"),
    ("8b", "`--diff` counts what remains as `--fix` does", r"diff_counts_what_remains"),
    ("8c", "`--diff` with a machine-readable format exits 2", r"diff_with_a_machine|diff_in_text"),
    ("8d", "a baseline of another version exits 2", r"baseline_of"),
    ("8e", "a policy without a reason or naming nothing exits 2", r"policy"),
    ("8f", "a file behind a symlinked alias is reported once", r"symlink"),
    ("8g", "DC005's fix keeps an assignment `locals()` may read", r"dc005"),
    ("8h", "the language server shows a broken configuration", r"language_server|lsp|editor"),
    ("9", "the tests that need torch are a tier of their own", r"torch_tier|without_torch"),
)
# tests of issue 31's cases kept beside the code they test, outside tests/test_newcomer_*.py
NEWCOMER_ELSEWHERE = (
    "tests/test_fix_applicability.py::test_diff_counts_what_remains_as_the_same_fix_does",
    "tests/test_server.py::test_a_syntax_error_elsewhere_keeps_the_suppressions_and_their_dc004",
    "tests/test_server.py::test_the_same_buffer_without_the_syntax_error_shows_the_same_findings",
    "tests/test_server.py::test_language_server_shows_a_broken_configuration_at_its_line_and_in_a_message",
    "tests/test_server.py::test_language_server_withdraws_a_fixed_configurations_diagnostic",
    "tests/test_server.py::test_language_server_publishes_nothing_on_a_valid_configuration",
    "tests/test_sites_at_scale.py::test_200_sites_of_five_shapes_give_their_200_findings",
)


def newcomer_paths() -> list[str]:
    """``tests/test_newcomer_*.py`` and the tests elsewhere that still exist."""
    paths = [str(p.relative_to(REPO)) for p in sorted((REPO / "tests").glob("test_newcomer_*.py"))]
    for node in NEWCOMER_ELSEWHERE:
        path, _, name = node.partition("::")
        if (REPO / path).is_file() and f"def {name}(" in (REPO / path).read_text():
            paths.append(node)
    return paths


def issue_31_table(cases: list[Case], notes: dict[str, str] | None = None) -> list[str]:
    """One row per case of issue 31: its tests' outcomes (``notes``: what to say for a case
    no test ran, by number); then the tests no case claims."""
    lines = ["| case | what must be true | tests | result |", "| --- | --- | --- | --- |"]
    claimed: set[int] = set()
    for number, what, pattern in ISSUE_31:
        mine = [i for i, c in enumerate(cases) if i not in claimed and re.search(pattern, c.name)]
        claimed.update(mine)
        outcomes = collections.Counter(cases[i].outcome for i in mine)
        result = ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items())) or (
            (notes or {}).get(number, "**no test ran**")
        )
        lines.append(f"| {number} | {what} | {len(mine)} | {result} |")
    others = [c for i, c in enumerate(cases) if i not in claimed]
    if others:
        lines += ["", f"Tests no case's pattern names ({len(others)}):", ""]
        lines += [f"- {c.module}: {title(c.name)}: {c.outcome}" for c in others]
    return lines


def simple_table(cases: list[Case]) -> list[str]:
    """One row per case: its name and result."""
    lines = ["| test | result |", "| --- | --- |"]
    for case in cases:
        reason = f" ({case.reason})" if case.reason and case.outcome != "passed" else ""
        lines.append(f"| {title(case.name)} | {case.outcome}{reason} |")
    return lines


STATIC = """\
## What the cache checksum does and does not protect against

Each cache entry (`<root>/.driftcheck_cache/scan-<key>.json`, or `$DRIFTCHECK_CACHE_DIR`) carries
`sum = blake2b(key + data)`, where `key` hashes driftcheck's version, the scanner's own source,
the universe read from the tree and the configuration; the files of a directory that contribute
nothing share one block of `name<TAB>stamp` lines with one such sum. An entry (or block) whose
checksum does not match is ignored (its files are scanned again) and the run warns `ignored N
corrupted or tampered cache entries in <file>`; a cache file that is truncated or not JSON is
ignored as a whole.

- **Protects against:** accidental corruption (truncation, bit flips, a half-written file from a
  killed process: writes are atomic anyway), hand edits, entries written by another driftcheck
  version, scanner or configuration, and a forgery by someone who recomputes the checksum
  without the key (tested: an unsalted blake2b of the altered data is rejected), or that lists
  a drifting file among its directory's files without sites (tested: the block is rejected).
- **Does not protect against:** a deliberate forgery by anyone who can read the cache file. The
  key is not secret: it is written in the file (`"key"`) and derivable from public inputs. The
  checksum is an integrity check, not a MAC. Whoever can write the cache directory can make
  driftcheck report what they like, just as whoever can write the source tree can; keep the cache
  directory as trusted as the tree (the default lives inside it), and use `--no-cache` in CI
  jobs that check untrusted trees.
- **Staleness:** an entry is reused while the file's stamp (size, `mtime_ns`, `ctime_ns`, inode)
  is unchanged; the content is not re-read. `ctime` cannot be set from user space, so a
  same-size rewrite that restores the modification time (`cp -p`, `rsync -t`, `tar x`) still
  changes the stamp (`test_same_size_rewrite_keeping_the_mtime_is_noticed`). A `chmod` or a new
  hard link also changes `ctime`: that costs a rescan, never a wrong answer.

## Other known limits found on the way

- A file that cannot hold an enumeration (no getter, value attribute, enum or helper name and
  fewer than two member tokens) is never parsed, so its syntax errors, NUL bytes or bad encoding
  are not reported: driftcheck is not a syntax checker. UTF-16 source is such a file.
- A file whose analysis overflows the recursion limit (it parses, but an expression is nested a
  few thousand levels deep) is skipped whole, with `expression nested too deeply to analyse`;
  its other enumerations are not reported.
- `python -m driftcheck` run from inside an untrusted tree imports the tree's own
  `driftcheck.py`, `click.py`, ... before driftcheck starts (Python puts the working directory
  first on `sys.path`). Use the `driftcheck` console script, or `python -P -m driftcheck`
  (Python 3.11+). driftcheck's own child processes (the `verify --layer` ranks) are started with
  `PYTHONSAFEPATH` set and from a temporary directory for the same reason.
- The enum must be defined in the canonical helper's own module: moved to another module
  (`from .backends import MoeA2ABackend`), the run stops with exit 2 and "calls no
  zero-argument getter annotated to return an enum defined in <module>" (tested).
- The 2x memory target of the load run is not met (see Load). Memory grows linearly with the
  number of files, about 1-2.5 KB per file (a scan result for every file, including the ~97%
  without an enumeration; the cache entries; the walk's file list), on top of a ~30 MB
  interpreter per process. The single tree's peak fell from 48-51 MB to 38-44 MB when the
  scan's pool of two workers became one forked helper beside the main process
  (`driftcheck/workshare.py`), while the ten-copy peaks stayed where they were (84 MB cold,
  124 MB filling the cache): the ratios rose. The larger remaining saving is a compact record
  for files without sites, in memory and in the cache file.
- The minimal fixer refuses a chain whose every separator touches a parenthesis
  (`a or (b)`): "no separator between the operands is a plain 'or' to copy". The property test
  predicts exactly these refusals and requires every other drifting site to be fixed.
"""


def main() -> int:
    """Run everything and write the document."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--skip-load", action="store_true", help="do not run benchmarks/bench_load.py"
    )
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory(prefix="driftcheck-reliability-") as tmp:
        work = Path(tmp)
        stats_file = work / "stats.jsonl"
        env = {
            **os.environ,
            "DRIFTCHECK_HYPOTHESIS_PROFILE": "ci",
            "DRIFTCHECK_PROPERTY_STATS": str(stats_file),
        }
        runs = {}
        for label, paths in (
            ("properties", ["tests/test_properties.py"]),
            ("bad", ["tests/test_bad_input.py"]),
            ("hostile", ["tests/test_never_runs_linted_code.py"]),
            ("regressions", ["tests/regressions"]),
            ("newcomer", newcomer_paths()),
        ):
            basetemp = work / f"t-{label}"
            junit = work / f"{label}.xml"
            code_, tail = run_pytest(paths, junit, basetemp, env)
            runs[label] = (code_, tail, read_junit(junit, basetemp) if junit.exists() else [])
            failed |= code_ != 0
            print(f"{label}: pytest exit {code_}", file=sys.stderr)
        stats = (
            [json.loads(line) for line in stats_file.read_text().splitlines()]
            if stats_file.exists()
            else []
        )
        load_text = "not run this time (`--skip-load`)."
        shapes_text = load_text
        if not args.skip_load:
            shapes = subprocess.run(
                [sys.executable, str(REPO / "benchmarks/bench_shapes.py"),
                 "--sizes", "1000,2000,4000", "--runs", "1", "--large", "0"],
                cwd=REPO, capture_output=True, text=True, check=False,
            )  # fmt: skip
            shapes_text = "```\n" + shapes.stdout.strip() + "\n```"
            if shapes.returncode != 0:
                failed = True
                shapes_text += "\n\n```\n" + shapes.stderr[-3000:] + "\n```"
            print(f"shapes: exit {shapes.returncode}", file=sys.stderr)
            proc = subprocess.run(
                [sys.executable, str(REPO / "benchmarks/bench_load.py")],
                cwd=REPO, capture_output=True, text=True, check=False,
            )  # fmt: skip
            output = [line for line in proc.stdout.splitlines() if not line.startswith("usage(")]
            load_text = "```\n" + "\n".join(output).strip() + "\n```"
            if proc.returncode != 0:
                failed = True
                load_text += "\n\n```\n" + proc.stderr[-3000:] + "\n```"
            print(f"load: exit {proc.returncode}", file=sys.stderr)

    def count(label: str) -> str:
        outcomes = collections.Counter(case.outcome for case in runs[label][2])
        return ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))

    lines = [
        "# Reliability: hostile and broken input",
        "",
        "Regenerated by `python scripts/reliability_report.py`; every figure and message below comes",
        "from the run that wrote this file. The claims: the engine, the fixer and the verifier never",
        "crash on input, never lose a byte they were not asked to change, and never run linted code.",
        "",
        f"Summary: properties {count('properties')}; bad input {count('bad')}; never runs linted "
        f"code {count('hostile')}; regressions {count('regressions')}; issue 31 "
        f"{count('newcomer')}.",
        "",
    ]
    lines += property_section(
        runs["properties"][2], stats, runs["properties"][0], runs["properties"][1]
    )
    lines += [
        "## Bad input",
        "",
        "`tests/test_bad_input.py`: each case adds one bad thing to a copy of the fixture tree, whose",
        "two drifting model files must still be reported. Exit 2 means the run could not do all of its",
        "job (every other file was still checked); paths under the test's temporary directory are",
        "shown as `<tmp>`.",
        "",
        *evidence_table(runs["bad"][2]),
        "",
        "## Never running linted code",
        "",
        "`fixtures/hostile/` is laid out like SGLang; its module top levels, the enum's class body,",
        "`__eq__` and `__hash__`, the getter, the helper's default argument, a module `__getattr__`,",
        "and modules at its root shadowing `click`, `enum`, `multiprocessing`, `torch`, `driftcheck`,",
        "`sitecustomize` ... append to a marker file and connect to a listening port on 127.0.0.1.",
        "Each command runs through the `driftcheck` console script from inside a copy of the tree",
        "and must do its job with the marker absent and no connection made; in-process runs must",
        "add no module from the tree to `sys.modules`.",
        "",
        *simple_table(runs["hostile"][2]),
        "",
        "## Regressions kept",
        "",
        "`tests/regressions/`: examples found by the property tests, the bad-input probes and the",
        "load run, each a small file (`cases/*.example`, byte-exact) and a test.",
        "",
        *simple_table(runs["regressions"][2]),
        "",
        "## Issue 31: every case a newcomer hit",
        "",
        "Each `tests/test_newcomer_*.py` and the tests of issue 31 kept elsewhere, listed under the",
        "case they show (by test name); every test asserts the exact output. Case 5's figures are",
        "the site-shape benchmark's, below the table.",
        "",
        *issue_31_table(
            runs["newcomer"][2],
            {
                "5": "the benchmark below"
                if not args.skip_load
                else "benchmark not run (`--skip-load`)"
            },
        ),
        "",
        "`benchmarks/bench_shapes.py --sizes 1000,2000,4000 --runs 1 --large 0` (each shape's time",
        "as its sites double: linear time is about 2.0x):",
        "",
        shapes_text,
        "",
        "## Load",
        "",
        "`benchmarks/bench_load.py`: SGLang 0.5.23 copied 10 times side by side (hard links), checked,",
        "partly rewritten and fixed. Peak memory is the sum of the process tree's proportional set",
        "sizes (main process and forked workers, sampled from /proc as `benchmarks/bench_check.py`",
        "does; shared copy-on-write pages are not counted once per worker). Target: every 10-copy",
        "peak within 2x the single-tree peak; the stricter ratio per kind of run is printed too.",
        "",
        load_text,
        "",
        STATIC,
    ]
    for label in ("bad", "hostile", "regressions", "newcomer"):
        if runs[label][0] != 0:
            lines += [f"## Failing run: {label}", "", "```", runs[label][1].strip(), "```", ""]
    DOC.write_text("\n".join(lines).rstrip() + "\n")
    print(f"wrote {DOC.relative_to(REPO)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
