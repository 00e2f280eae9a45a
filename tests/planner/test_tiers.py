"""The tier choice's work estimate, and a cold start that neither imports numba nor compiles."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

import planner
from lookahead.jit import tier_for
from planner.tiers import node_work, prepare_search, search_work
from strategies import domain_dicts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@settings(max_examples=40)
@given(raw=domain_dicts(rich_preconditions=True), depth=st.integers(0, 5), entitled=st.booleans())
def test_the_work_estimate_bounds_the_nodes_the_search_expands(raw, depth, entitled):
    caller = planner.Caller(entitlements=["secret.read"] if entitled else [])
    node = planner.Session(planner.Domain.from_dict(raw), caller=caller).node
    c = node.compiled
    per_node = c.n_states * (c.loss.shape[0] + c.lik.shape[1] * len(c.obs_names))
    res = node.search(depth)
    assert res.nodes * per_node <= search_work(node, depth)
    assert search_work(node, depth) <= search_work(node, depth + 1) <= search_work(node)
    assert search_work(node, depth, cap=1) == per_node
    assert node_work(node) > 0


def test_the_seed_case_stays_in_the_python_tier_and_a_large_domain_compiles():
    from planner.generators import benchmark_domain

    node = planner.Session(planner.load_domain("payment_release")).node
    assert tier_for(search_work(node)) == tier_for(node_work(node)) == "python"
    big = planner.Session(planner.Domain.from_dict(benchmark_domain(12, 8, seed=1, chain=3))).node
    assert tier_for(search_work(big, cap=200_000)) == "compiled"
    assert prepare_search(big) == "compiled"  # the suite runs compiled (conftest); a call changes nothing


def _python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env})


def test_importing_the_packages_imports_neither_numba_nor_networkx():
    r = _python("import sys, lookahead, planner, planner.cli; "
                "print(sorted(m for m in ('numba', 'networkx', 'llvmlite') if m in sys.modules))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_the_seed_run_from_an_empty_kernel_cache_compiles_nothing_and_says_nothing(tmp_path):
    cache = tmp_path / "numba-cache"
    cache.mkdir()
    r = _python("import sys\n"
                "from planner.cli import main\n"
                "code = main(['run', 'payment_release', '--world', 'approval=pending'])\n"
                "print('numba imported:', 'numba' in sys.modules)\n"
                "sys.exit(code)", NUMBA_CACHE_DIR=str(cache))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    assert "stop: HOLD" in r.stdout and r.stdout.rstrip().endswith("numba imported: False")
    assert list(cache.iterdir()) == []


_SWITCH = """
import json, sys
import planner, planner.tiers as tiers
from lookahead import jit
from planner.generators import benchmark_domain
from planner.policies.bounded import Bounded

n_obs, states, seed, allowance = (int(a) for a in sys.argv[1:5])
tiers.PYTHON_SEARCH_WORK = allowance
node = planner.Session(planner.Domain.from_dict(benchmark_domain(n_obs, states, seed=seed, chain=2))).node


def decided():
    d = Bounded(work=2_000_000).decide(node)
    i = d.info
    return {"observe": d.observe, "interval": i["interval"], "certified": i["certified"], "phases": i["phases"],
            "plan": i["plan"], "tables": [(r.status, r.extra) for r in d.candidates]}


with jit.python_only():
    python = decided()
auto = decided()  # the Python tier first, then, past the allowance, the same search compiled
switched = jit.compiled(["lookahead.search"])
print(json.dumps({"python": python, "auto": auto, "compiled": decided(), "switched": switched}))
"""


@settings(max_examples=5, deadline=None)
@given(n_obs=st.integers(4, 8), states=st.sampled_from([4, 8]), seed=st.integers(0, 10_000),
       allowance=st.sampled_from([1, 3_000, 30_000, 10**9]))
def test_a_search_that_switches_tiers_midway_decides_as_either_tier_alone(n_obs, states, seed, allowance):
    # a fresh process: the suite itself runs compiled (conftest), and a switch happens once per process
    r = subprocess.run([sys.executable, "-c", _SWITCH, str(n_obs), str(states), str(seed), str(allowance)],
                       capture_output=True, text=True, cwd=ROOT, env=os.environ)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["auto"] == out["python"] == out["compiled"]
    if allowance == 10**9:
        assert not out["switched"]  # the whole search fit the Python tier's allowance: nothing compiled
