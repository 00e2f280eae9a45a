"""Each rule has one place: affordability, the budget tolerance, the tie rule, the establishing roles, the
tolerance constants, the caller-fixed gates, the stop's budget dimension, and unique class names.

Every check reads the source (AST and text) of the whole of ``planner`` and of ``lookahead`` except
``lookahead/search.py`` and ``lookahead/bounded.py``: the planning engine's rewrite (issue 20) replaces those
two files, so their rules are checked once they are rewritten. Each check has a control beside it that feeds
the same detector a snippet breaking the rule, so a check that can no longer fail shows up.

``PENDING`` lists the places the engine's rewrite still has to bring in line (its files, which this issue does
not edit). A pending place that disappears fails too, so the entry is removed when the engine lands.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
#: Replaced by issue 20's engine: checked after it lands.
ENGINE_REWRITE = ("lookahead/search.py", "lookahead/bounded.py")


def _sources() -> dict:
    out = {}
    for pkg in ("planner", "lookahead"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in ENGINE_REWRITE:
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path.read_text(encoding="utf-8")
    return out


SOURCES = _sources()
TREES = {name: ast.parse(text) for name, text in SOURCES.items()}

#: Places issue 20 brings in line in its own files: (module, rule) -> how many sites there are today.
PENDING = {
    ("planner.node", "affordability"): 2,      # Node._reasons and _derive: use planner.gates.budget
    ("lookahead.reference", "affordability"): 3,  # the reference's three loops: one helper of its own
    ("lookahead.reference", "tie"): 3,         # the reference's tie-breaks: one helper of its own
}


def _code_lines(text: str):
    """(line number, code) of every line outside docstrings and comments."""
    tree = ast.parse(text)
    doc_lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                doc_lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    for i, line in enumerate(text.splitlines(), start=1):
        if i in doc_lines:
            continue
        code = line.split("#", 1)[0]
        if code.strip():
            yield i, code


def _sites(rule_rx, skip=()) -> dict:
    """module -> number of code lines matching any regex of `rule_rx`."""
    out = {}
    for name, text in SOURCES.items():
        if name in skip:
            continue
        n = sum(1 for _, code in _code_lines(text) if any(rx.search(code) for rx in rule_rx))
        if n:
            out[name] = n
    return out


def _check(rule: str, found: dict, allowed: dict) -> None:
    """`found` (module -> sites) must be `allowed` plus exactly the pending sites of `rule`."""
    pending = {m: n for (m, r), n in PENDING.items() if r == rule}
    extra = {m: n for m, n in found.items() if m not in allowed and m not in pending}
    assert extra == {}, f"{rule} written outside its one place: {extra}"
    for m, n in allowed.items():
        assert found.get(m, 0) <= n, f"{rule}: {m} writes it {found.get(m, 0)} times, at most {n}"
    for m, n in pending.items():
        assert found.get(m, 0) == n, (f"{rule}: {m} now writes it {found.get(m, 0)} times, not the {n} pending "
                                      "ones: remove or update its entry in PENDING")


# --------------------------------------------------------------------------
# affordability: spent + cost <= limit + BUDGET_TOL, once per world

#: A limit compared with a literal slack (the shape of a second affordability rule).
LITERAL_SLACK = re.compile(r"[<>]=?\s*[\w\[\].]*lim\w*(\[[^\]]*\])?\s*\+\s*1e-")


def _afford_sites(tree, text) -> int:
    """Uses of BUDGET_TOL (names read, imports and the definition aside) plus limits compared with a literal slack."""
    uses = sum(1 for n in ast.walk(tree) if (isinstance(n, ast.Name) and n.id == "BUDGET_TOL"
                                             and isinstance(n.ctx, ast.Load))
               or (isinstance(n, ast.Attribute) and n.attr == "BUDGET_TOL"))
    return uses + sum(1 for _, code in _code_lines(text) if LITERAL_SLACK.search(code))


def test_affordability_is_written_once_in_each_world():
    found = {m: _afford_sites(TREES[m], SOURCES[m]) for m in SOURCES}
    _check("affordability", {m: n for m, n in found.items() if n},
           {"lookahead.core": 1, "planner.gates.budget": 1})


def test_the_affordability_check_can_fail():
    text = "def f(spent, cost, limits, lim, extra):\n    a = spent + cost > limits + BUDGET_TOL\n" \
           "    return a or spent + extra > lim + 1e-9\n"
    assert _afford_sites(ast.parse(text), text) == 2
    with pytest.raises(AssertionError, match="outside its one place"):
        _check("affordability", {"planner.session.stop": 1}, {"planner.gates.budget": 1})


def test_the_budget_tolerance_is_stated_once():
    defs = [(m, n.targets[0].id) for m, tree in TREES.items() for n in ast.walk(tree)
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
            and n.targets[0].id == "BUDGET_TOL"]
    assert defs == [("lookahead.core", "BUDGET_TOL")]
    from lookahead.core import BUDGET_TOL as kernels
    from planner.tolerances import BUDGET_TOL as python

    assert python is kernels


@given(st.lists(st.floats(0, 10, allow_nan=False), min_size=1, max_size=4), st.data())
def test_the_two_affordability_helpers_agree(spent, data):
    """A property test holds the kernels' helper and the Python side's equal, at the tolerance's edge too."""
    from lookahead.core import BUDGET_TOL, affordable as kernel
    from planner.gates.budget import affordable as python

    d = len(spent)
    cost = np.array([data.draw(st.lists(st.floats(0, 10, allow_nan=False), min_size=d, max_size=d))])
    spent = np.array(spent)
    edge = data.draw(st.sampled_from([0.0, BUDGET_TOL / 2, -BUDGET_TOL / 2, 2 * BUDGET_TOL, -2 * BUDGET_TOL]))
    limits = spent + cost[0] + edge
    assert bool(kernel(0, spent, cost, limits)) == bool(python(spent, cost[0], limits))


# --------------------------------------------------------------------------
# the tie rule: largest within TIE, then lower penalty within TIE, then file order

TIE_RULE = [re.compile(r"\bbest\w*\s*-\s*TIE\b"), re.compile(r"\blow\w*\s*\+\s*TIE\b"), re.compile(r"\bTIE\s*\*"),
            re.compile(r"\*\s*TIE\b")]


def test_the_tie_rule_is_written_once_in_each_world():
    # retrieval's merge of candidate streams is not a policy's choice: ties within TIE go to source order and
    # rank there (its docstring), not to a lower penalty
    _check("tie", _sites(TIE_RULE), {"planner.policies.base": 2, "lookahead.core": 1, "planner.retrieval.topk": 1})


def test_the_tie_check_can_fail():
    # the drift that issue 21 found in decision_region._pick: a relative tolerance
    assert any(rx.search("tied = [o for o in key if key[o] >= best - TIE * max(1.0, abs(best))]") for rx in TIE_RULE)
    assert any(rx.search("o = next(o for o in tied if c.penalty[o] <= low + TIE)") for rx in TIE_RULE)


def test_every_policy_breaks_ties_through_the_one_function():
    """No policy module compares against TIE to pick among observations; they call pick_best or best_of."""
    for name, text in SOURCES.items():
        if name.startswith("planner.policies.") and name not in ("planner.policies.base", "planner.policies.registry"):
            tree = TREES[name]
            calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
            picks = calls & {"pick_best", "best_of", "one_step_table"}
            decides = any(isinstance(n, ast.FunctionDef) and n.name == "decide" for n in ast.walk(tree))
            if decides and name not in ("planner.policies.baselines", "planner.policies.postfilter",
                                        "planner.policies.confidence"):
                assert picks, f"{name} decides without the tie function"


# --------------------------------------------------------------------------
# the establishing roles


def _role_sets(tree) -> list:
    return [n.lineno for n in ast.walk(tree) if isinstance(n, (ast.Tuple, ast.Set, ast.List))
            and {e.value for e in n.elts if isinstance(e, ast.Constant)} >= {"establish", "supersede"}]


def test_the_establishing_roles_are_named_once():
    found = {m: len(_role_sets(t)) for m, t in TREES.items() if _role_sets(t)}
    # ROLES (every role) and ESTABLISHING (the two that set facts), both in the model
    assert found == {"planner.model.parts": 2}, found


def test_the_role_check_can_fail():
    assert _role_sets(ast.parse('if o.role in ("establish", "supersede"):\n    pass\n'))


# --------------------------------------------------------------------------
# one named constant per tolerance concept

#: An algorithm's own iteration parameters: named in its module (not a tolerance shared between modules).
ALGORITHM_PARAMETERS = {
    "planner.calibration.calibrate": {"EM_TOL"},
    "planner.retrieval.calibration": {"NEWTON_STEP_MIN", "NEWTON_TOL", "REGULARISE"},
}
#: Module-level names that mean "a tolerance", and literals that are one.
TOL_NAME = re.compile(r"(TOL|^TIE$|EPS$|ATOL|^EQ$|SLACK)")


def _tolerance_definitions(name, tree) -> list:
    out = []
    for n in tree.body:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            target = n.targets[0].id
            v = n.value
            tiny = isinstance(v, ast.Constant) and isinstance(v.value, float) and 0 < abs(v.value) < 1e-6
            if (TOL_NAME.search(target) or tiny) and target not in ALGORITHM_PARAMETERS.get(name, ()):
                out.append(target)
    return out


def _tiny_literals_in_comparisons(tree) -> list:
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            for sub in ast.walk(n):
                if isinstance(sub, ast.Constant) and isinstance(sub.value, float) and 0 < abs(sub.value) < 1e-6:
                    out.append(n.lineno)
    return out


def test_each_tolerance_concept_has_one_name():
    defs = {m: _tolerance_definitions(m, t) for m, t in TREES.items()}
    defs = {m: d for m, d in defs.items() if d}
    assert defs == {"lookahead.core": ["TIE", "BUDGET_TOL"], "planner.tolerances": ["VALUE_TOL", "PROB_TOL"]}, defs


def test_no_comparison_writes_a_tolerance_as_a_number():
    found = {m: _tiny_literals_in_comparisons(t) for m, t in TREES.items() if m != "planner.tolerances"}
    assert {m: v for m, v in found.items() if v} == {}


def test_the_tolerance_checks_can_fail():
    assert _tolerance_definitions("planner.x", ast.parse("REPLAY_TOL = 1e-9\n")) == ["REPLAY_TOL"]
    assert _tolerance_definitions("planner.x", ast.parse("_TOL = 1e-9\n")) == ["_TOL"]
    assert _tiny_literals_in_comparisons(ast.parse("ok = abs(a - b) <= 1e-9\n"))


# --------------------------------------------------------------------------
# the caller-fixed gates are read once; the stop reads the node's reasons

STATIC_GATES = {"ENTITLEMENT", "PURPOSE", "FRESHNESS"}


def _static_reason_constructions(tree) -> int:
    n = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Reason":
            for kw in node.keywords:
                if kw.arg == "gate" and isinstance(kw.value, ast.Name) and kw.value.id in STATIC_GATES:
                    n += 1
    return n


def test_entitlement_purpose_and_freshness_are_read_in_one_function():
    found = {m: _static_reason_constructions(t) for m, t in TREES.items()}
    assert {m: n for m, n in found.items() if n} == {"planner.gates.admission": 3}


def test_the_gate_check_can_fail():
    assert _static_reason_constructions(ast.parse("out.append(Reason(gate=ENTITLEMENT))\n")) == 1


def _budget_readings(tree) -> list:
    names = {"affordable", "limits", "BUDGET_TOL", "cost"}
    return [n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(tree)
            if (isinstance(n, ast.Attribute) and n.attr in names) or (isinstance(n, ast.Name) and n.id in names)]


def test_the_stop_reads_the_node_reasons_not_the_masks():
    """The budget dimension of a stop comes from ``node.reasons``: a new budget rule needs no second reading."""
    assert _budget_readings(TREES["planner.session.stop"]) == []
    assert "reasons" in SOURCES["planner.session.stop"]


def test_the_stop_check_can_fail():
    assert _budget_readings(ast.parse("over = node.spent + c.cost[o] > c.limits + BUDGET_TOL\n"))


# --------------------------------------------------------------------------
# names


def _public_classes() -> dict:
    out: dict = {}
    for m, tree in TREES.items():
        for n in tree.body:
            if isinstance(n, ast.ClassDef) and not n.name.startswith("_"):
                out.setdefault(n.name, []).append(m)
    return out


def test_no_two_public_classes_share_a_name():
    clashes = {k: v for k, v in _public_classes().items() if len(v) > 1}
    assert clashes == {}


def test_the_name_check_can_fail():
    tree = ast.parse("class Facts:\n    pass\n")
    saved = dict(TREES)
    try:
        TREES["planner.toy"] = tree
        TREES["planner.toy2"] = tree
        assert {k for k, v in _public_classes().items() if len(v) > 1} == {"Facts"}
    finally:
        TREES.clear()
        TREES.update(saved)
