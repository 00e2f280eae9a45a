"""The shape of the house: one-way imports, one place per rule, the CLI at the edge.

These tests read the source (AST and text), so they fail the moment a change
reintroduces what the architecture issue removed: an import cycle (module-level
or inside a function), ``lookahead`` importing ``planner``, a literal facts
code outside :mod:`lookahead.layout`, a reason string parsed as data, a child
node computed outside :mod:`planner.node`, ``argparse`` or an option name in a
library module.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import networkx as nx
import pytest

import planner
from planner.session.stop import STOP_REASONS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("planner", "lookahead")


def _modules() -> dict:
    """Module name -> path, for every module of the two packages."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _trees() -> dict:
    return {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


TREES = _trees()


def _imports(name: str, tree) -> set:
    """Project modules `name` imports anywhere in its body (function-level imports included).

    ``from a.b import c`` counts as an import of ``a.b.c`` when that is a
    module, else of ``a.b``; a package is not counted as imported by its own
    submodules' imports of siblings.
    """
    out = set()
    is_pkg = MODULES[name].name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PACKAGES:
                    out.add(a.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] not in PACKAGES:
                continue
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.add(sub if sub in MODULES else mod)
    return {m for m in out if m in MODULES and m != name}


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    for name, tree in TREES.items():
        g.add_node(name)
        for m in _imports(name, tree):
            g.add_edge(name, m)
    return g


def test_no_import_cycle_at_any_level():
    cycles = list(nx.simple_cycles(_graph()))
    assert cycles == [], f"import cycles: {cycles[:5]}"


def test_the_cycle_test_can_fail(tmp_path):
    """A control: the same walk finds a function-level cycle in a two-module toy package."""
    g = nx.DiGraph()
    a = ast.parse("def f():\n    from planner.b import x\n")
    b = ast.parse("from planner.a import y\n")
    saved = dict(MODULES)
    try:
        MODULES["planner.a"], MODULES["planner.b"] = Path("a.py"), Path("b.py")
        for name, tree in (("planner.a", a), ("planner.b", b)):
            for m in _imports(name, tree):
                g.add_edge(name, m)
    finally:
        MODULES.clear()
        MODULES.update(saved)
    assert list(nx.simple_cycles(g))


def test_lookahead_never_imports_planner_attrs_or_yaml():
    for name, tree in TREES.items():
        if not name.startswith("lookahead"):
            continue
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for n in names:
                assert n.split(".")[0] not in ("planner", "attrs", "yaml"), f"{name} imports {n}"


def test_argparse_only_under_the_cli_package():
    for name, tree in TREES.items():
        if name.startswith("planner.cli"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert "argparse" not in [a.name for a in node.names], name
            if isinstance(node, ast.ImportFrom):
                assert node.module != "argparse", name


def _strings(tree):
    """String literals that are not docstrings (f-string parts included)."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docs.add(id(body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


OPTION = re.compile(r"(?<![\w-])--[a-z][a-z-]+")


def test_no_library_message_names_an_option():
    found = [(name, line, text) for name, tree in TREES.items() if not name.startswith("planner.cli")
             for line, text in _strings(tree) if OPTION.search(text)]
    assert found == []


def _source_lines(skip: tuple):
    for name, path in MODULES.items():
        if name in skip:
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            code = line.split("#", 1)[0]
            if not code.strip().startswith((">>>", "...")):
                yield name, i, code


# Literal facts codes: positions into the fact tables, the contradicted status, expression and
# establishing kinds compared with digits.
FACT_CODES = [
    re.compile(r"facts\[\s*\d"),
    re.compile(r"[=!]=\s*-2\b"),
    re.compile(r"(status|work\[\d, *\w+\])\s*[=!]=\s*-1\b"),
    re.compile(r"(expr_kind|est_kind|\bek)\[[^\]]*\]\s*[=!]=\s*\d"),
    re.compile(r"\bk\s*==\s*[0-3]\b"),
]


def test_no_literal_facts_codes_outside_the_layout_module():
    found = [(name, i, code.strip()) for name, i, code in _source_lines(("lookahead.layout",))
             if any(rx.search(code) for rx in FACT_CODES)]
    assert found == []


def test_the_facts_grep_can_fail():
    assert any(rx.search("if node.status[p] == -2:") for rx in FACT_CODES)
    assert any(rx.search("action_req = c.facts[9]") for rx in FACT_CODES)
    assert any(rx.search("if k == 3:") for rx in FACT_CODES)


def test_no_code_parses_a_reason_string():
    texts = ("budget exceeded", "precondition unmet", "permission denied", "purpose mismatch", "stale for this")
    found = []
    for name, i, code in _source_lines(("planner.gates.admission",)):
        if any(t in code for t in texts) and re.search(r"startswith|removeprefix|split\(|partition|\bin\s+\w*reason", code):
            found.append((name, i, code.strip()))
    assert found == []


def test_exactly_one_place_computes_a_child_node():
    """The Bayes update of a node's belief (``posterior``) is called by planner.node only."""
    callers = set()
    for name, tree in TREES.items():
        if name.startswith("lookahead"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                fname = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else "")
                if fname in ("posterior", "_derive"):
                    callers.add(name)
    assert callers == {"planner.node"}


def test_one_audit_module_reads_the_raw_domain():
    """Only the audit (and the loader that builds it) reads ``domain.raw`` field by field."""
    readers = set()
    for name, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "raw" and isinstance(node.value, ast.Name) \
                    and node.value.id in ("domain", "d"):
                readers.add(name)
    assert readers <= {"planner.evaluation.audit", "planner.model.domain"}, readers


def test_stop_reasons_are_declared_once():
    schema = json.loads((ROOT / "planner" / "schema" / "domain.schema.json").read_text())
    text = json.dumps(schema)
    enum = re.search(r'"stop_reason": \{"enum": (\[[^\]]*\])', text)
    assert enum and tuple(json.loads(enum.group(1))) == STOP_REASONS
    receipt = (ROOT / "planner" / "schema" / "receipt.schema.json").read_text()
    for reason in STOP_REASONS:
        assert reason in receipt


@pytest.mark.parametrize("name", sorted(planner.shipped_domains()))
def test_shipped_domains_are_package_data(name):
    path = planner.DOMAINS / f"{name}.yaml"
    assert path.is_file() and path.resolve().parent == (ROOT / "planner" / "domains").resolve()
    assert (ROOT / "domains" / f"{name}.yaml").resolve() == path.resolve()  # one copy, readable at domains/


# --------------------------------------------------------------------------
# the lazy package: `import planner` loads nothing heavy, and every public name still resolves


def test_every_public_name_resolves_to_its_defining_object():
    import importlib

    assert len(set(planner.__all__)) == len(planner.__all__)
    assert set(planner.__all__) == set(planner._SOURCES) | set(planner._MODULES)
    for name in planner.__all__:
        value = getattr(planner, name)
        if name in planner._MODULES:
            assert value is importlib.import_module(planner._MODULES[name]), name
        else:
            assert value is getattr(importlib.import_module(planner._SOURCES[name]), name), name
    assert set(planner.__all__) <= set(dir(planner))
    with pytest.raises(AttributeError):
        planner.no_such_name


def test_the_type_checking_imports_name_what_the_table_says():
    """The TYPE_CHECKING block (what type checkers see) and the run-time table cannot drift apart."""
    tree = TREES["planner"]
    block = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    seen = {}
    for node in ast.walk(block):
        if isinstance(node, ast.ImportFrom):
            for a in node.names:
                seen[a.asname or a.name] = f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES \
                    else node.module
    expected = {**planner._SOURCES, **planner._MODULES}
    assert seen == expected


def test_import_planner_loads_nothing_heavy():
    import subprocess
    import sys

    code = "import json, sys, planner; print(json.dumps(sorted(sys.modules)))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    modules = set(json.loads(r.stdout))
    assert "planner" in modules
    loaded = sorted(m for m in modules if m.split(".")[0] in ("numpy", "attrs", "attr", "yaml", "jsonschema",
                                                              "networkx", "numba", "lookahead")
                    or m.startswith("planner."))
    assert loaded == []
