"""No name of a linted codebase in driftcheck's code: every one lives in a pack.

The code is every module of ``driftcheck/``, ``rules/`` and ``runtime_verify/``, read with
:mod:`ast` (never imported for this). Its *string constants* are every ``str`` constant,
f-string parts included, except:

- **docstrings**: the first statement of a module, class or function, when it is a string;
- **messages**: a constant holding whitespace. A name is one token (``deepep_v2``,
  ``sglang.srt.layers.moe.utils:MoeA2ABackend``, ``deepep,deepep_v2``); a constant with a
  space in it is prose (an exception or echo message, a help text, a warning, a template of
  code shown to the user), and prose may name what it talks about;
- **the rules' examples**: the value assigned (``=`` or ``+=``) to a ``VALID`` or ``INVALID``
  class attribute in ``rules/`` (snippets of SGLang-shaped code that the rule's tests run).

Each remaining constant is split into tokens (on anything but letters, digits, ``_``, ``.``,
``:`` and ``-``; a ``module:qualname`` into its module and the qualname's parts); a token
that is a Python name or dotted path fails
the test when it is (a) a name a shipped pack declares (:func:`pack_names`) or (b) a member
value or attribute name of a universe read from the pinned SGLang 0.5.23 and vLLM 0.33.0
corpora (:func:`corpus_names`), unless an allowlist below says why it may be there.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
PACKS = REPO / "driftcheck" / "packs"
CODE = ("driftcheck", "rules", "runtime_verify")

# The verifier's own third-party dependencies: the Python packages it imports to run real
# kernels (DeepGEMM's grouped GEMM, DeepEP's buffers) and the command-line choices naming
# them (``--runner deep_gemm``, ``--dispatcher deep_ep``). They are what the verifier runs
# on, not names of a linted codebase, so they may appear in the verifier's modules only; the
# SGLang pack names the same packages as stand-ins for the tree's imports.
VERIFIER_DEPENDENCIES = frozenset({"deep_gemm", "deep_ep"})
VERIFIER_MODULES = ("runtime_verify/", "driftcheck/verify_cli.py")
# The corpus fetcher downloads driftcheck's own test corpora (``python -m driftcheck.corpus
# 0.5.23``): the PyPI projects it pins are data of that module alone.
CORPUS_PROJECTS = frozenset({"sglang", "vllm"})
CORPUS_MODULE = "driftcheck/corpus.py"
# Words of driftcheck's own vocabulary that a codebase happens to use as a name too: ``none``
# is ``pack = "none"`` and the harness's ``none`` argument (SGLang's enum has ``NONE =
# "none"``); ``config`` is the ``[verify.config]`` table and a configuration's ``config``
# key, and ``prefix`` a regular expression's group in the fixer (SGLang's blocks take
# ``config`` and ``prefix`` arguments).
OWN_WORDS = frozenset({"none", "config", "prefix"})

# a token is letters, digits and ``_ . : -``; one with a ``-`` (``empty-prefix``, ``--config``)
# is driftcheck's own kebab-case vocabulary, never a Python name
_SPLIT = re.compile(r"[^A-Za-z0-9_.:-]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def tokens(text: str) -> set[str]:
    """The names a constant holds: ``a.b:C.d`` gives ``a.b``, ``C.d``, ``C`` and ``d``."""
    found: set[str] = set()
    for part in _SPLIT.split(text):
        module, colon, qualname = part.partition(":")
        pieces = [module, qualname] if colon else [part]
        for piece in pieces:
            if _NAME.fullmatch(piece):
                found.add(piece)
                if colon and piece is qualname:
                    found.update(qualname.split("."))
    return found


def _spec_names(spec: str) -> set[str]:
    """``module:qualname``: the dotted module, the qualname and each of its parts."""
    module, _, qualname = spec.partition(":")
    return {module, qualname, *qualname.split(".")} - {""}


def pack_names(table: dict) -> set[str]:
    """The names of a linted codebase a pack declares: its canonicals' and enum's modules and
    qualnames, value attributes, receivers, model marker, implementation words, gates, the
    identifiers of ``family-implies`` conditions, the role operations' names, the modules it
    is detected by, and in ``[verify]`` the arms and controls, stand-in packages, executed
    modules, and the keys of the tables mapping the codebase's names to the harness's own
    (block and forward arguments, substitutes, runtime objects' fields, model config
    fields, dispatchers) and the values of ``[verify.parameters]``. The right-hand sides of
    the other tables are the harness's own names."""
    names: set[str] = set()
    for entry in table.get("canonical", []):
        names |= _spec_names(entry["predicate"] if isinstance(entry, dict) else entry)
    if "enum" in table:
        names |= _spec_names(table["enum"])
    for key in ("value-attributes", "receivers", "implementation-words"):
        names.update(table.get(key, []))
    if table.get("model-marker"):
        names.add(table["model-marker"])
    for gate in table.get("gates", []):
        names |= {gate["member"], gate["register-call"], *_spec_names(gate["registry"])}
    for predicate, conditions in table.get("family-implies", {}).items():
        names |= _spec_names(predicate)
        for condition in conditions:
            names |= {n.id for n in ast.walk(ast.parse(condition)) if isinstance(n, ast.Name)}
    for keys in table.get("roles", {}).values():
        names.update(key.partition(":")[2] for key in keys)
    names.update(table.get("detect", {}).get("modules", []))
    verify = table.get("verify", {})
    for key in ("arms", "controls", "stand-in-packages", "executed-modules"):
        names.update(verify.get(key, []))
    for key in ("block-arguments", "forward-arguments", "substitutes", "config", "dispatchers"):
        names.update(verify.get(key, {}))
    for fields in verify.get("objects", {}).values():
        names.update(fields)
    for parameters in verify.get("parameters", {}).values():
        names.update(parameters.values())
    return names


def shipped_pack_names() -> dict[str, set[str]]:
    """Each shipped pack's declared names."""
    return {p.stem: pack_names(tomllib.loads(p.read_text())) for p in sorted(PACKS.glob("*.toml"))}


def corpus_names(tree: Path) -> set[str]:
    """Member values and attribute names of every universe driftcheck reads from ``tree``
    with no configuration (the pack the tree selects): members (values and enum attribute
    names), predicates, getters, value attributes, holder classes and the names holding
    them, the enum's and the universe's names, and the families' names."""
    from driftcheck.project import discover_project
    from driftcheck.universe import load_universes

    project = discover_project([tree], cwd=tree)
    names: set[str] = set()
    for loaded in load_universes(project.root, project.config).universes:
        universe = loaded.universe
        names |= {m.value for m in universe.members} | {m.attr for m in universe.members}
        names |= set(universe.predicates) | set(universe.getters)
        names |= set(universe.value_attributes) | set(universe.holders)
        names |= set(universe.holder_names) | {f.name for f in universe.families}
        names |= {universe.enum_name, universe.enum_module, *universe.name.split(".")}
    return names - {""}


def _docstring_ids(tree: ast.Module) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _example_ids(tree: ast.Module) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            target = stmt.target if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
            value = getattr(stmt, "value", None)
            if isinstance(target, ast.Name) and target.id in ("VALID", "INVALID") and value:
                ids.update(id(sub) for sub in ast.walk(value))
    return ids


def string_constants(path: Path, rel: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each string constant of the module at ``path`` that is neither a
    docstring, nor a message, nor (in ``rules/``) a rule's example."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = _docstring_ids(tree)
    if rel.startswith("rules/"):
        skipped |= _example_ids(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        if id(node) in skipped or any(c.isspace() for c in node.value):
            continue
        yield node.lineno, node.value


def allowed(token: str, rel: str) -> bool:
    """Whether an allowlist above lets ``token`` stand in module ``rel``."""
    if token in OWN_WORDS:
        return True
    if token in VERIFIER_DEPENDENCIES and rel.startswith(VERIFIER_MODULES):
        return True
    return token in CORPUS_PROJECTS and rel == CORPUS_MODULE


def offending(root: Path, packages: tuple[str, ...], names: dict[str, set[str]]) -> list[str]:
    """``path:line: 'constant' names NAME (where the name comes from)`` for every string
    constant of ``packages`` under ``root`` holding a name of ``names`` (source -> names)."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            for line, text in sorted(string_constants(path, rel)):
                for token in sorted(tokens(text)):
                    sources = [source for source, known in names.items() if token in known]
                    if sources and not allowed(token, rel):
                        found.append(f"{rel}:{line}: {text!r} names {token} ({', '.join(sources)})")
    return found


def test_tokens_split_a_spec_into_its_module_and_qualname_parts() -> None:
    assert tokens("vllm.platforms.interface:Platform.is_cuda_alike") == {
        "vllm.platforms.interface",
        "Platform.is_cuda_alike",
        "Platform",
        "is_cuda_alike",
    }
    assert tokens("deepep,deepep_v2") == {"deepep", "deepep_v2"}
    assert tokens("--runner=empty-prefix") == set()


def test_no_name_a_shipped_pack_declares_is_in_the_code() -> None:
    names = {f"pack {name}": known for name, known in shipped_pack_names().items()}
    assert offending(REPO, CODE, names) == []


@pytest.mark.corpus
def test_no_name_of_the_pinned_corpora_universes_is_in_the_code(sglang_0_5_23: Path) -> None:
    from driftcheck.corpus import fetch_release

    names = {
        "sglang 0.5.23": corpus_names(sglang_0_5_23),
        "vllm 0.33.0": corpus_names(fetch_release("vllm==0.33.0")),
    }
    assert {"deepep_v2", "moe_a2a_backend", "EntryClass"} <= names["sglang 0.5.23"] | set(
        shipped_pack_names()["sglang"]
    )
    assert "all2all_backend" in names["vllm 0.33.0"]
    assert offending(REPO, CODE, names) == []


def test_a_name_planted_in_a_module_is_reported(tmp_path: Path) -> None:
    """Negative control: the same reading on a planted module finds the planted names, and
    leaves its docstring, its message and a rule's example alone."""
    package = tmp_path / "driftcheck"
    package.mkdir()
    (package / "planted.py").write_text(
        '"""Mentions deepep_v2 in a docstring."""\n'
        'ARMS = "deepep,deepep_v2"\n'
        "def f(cfg):\n"
        '    """moe_a2a_backend in a docstring."""\n'
        '    if getattr(cfg, "moe_a2a_backend") == "deepep_v2":\n'
        '        raise ValueError("deepep_v2 is not supported here")\n'
        '    return "sglang.srt.layers.moe.utils:MoeA2ABackend"\n'
        "class Rule:\n"
        '    VALID = ["deepep_v2"]\n'
    )
    names = {"pack sglang": shipped_pack_names()["sglang"]}
    assert offending(tmp_path, ("driftcheck",), names) == [
        "driftcheck/planted.py:2: 'deepep,deepep_v2' names deepep (pack sglang)",
        "driftcheck/planted.py:2: 'deepep,deepep_v2' names deepep_v2 (pack sglang)",
        "driftcheck/planted.py:5: 'deepep_v2' names deepep_v2 (pack sglang)",
        "driftcheck/planted.py:5: 'moe_a2a_backend' names moe_a2a_backend (pack sglang)",
        "driftcheck/planted.py:7: 'sglang.srt.layers.moe.utils:MoeA2ABackend' names "
        "MoeA2ABackend (pack sglang)",
        "driftcheck/planted.py:7: 'sglang.srt.layers.moe.utils:MoeA2ABackend' names "
        "sglang.srt.layers.moe.utils (pack sglang)",
        "driftcheck/planted.py:9: 'deepep_v2' names deepep_v2 (pack sglang)",
    ]
