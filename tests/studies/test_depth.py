"""The depth study's second edition: its rows against ``planner evaluate``, its quick run, its rules."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from studies.depth import run as edition2
from studies.depth.run import Config, Job, build_jobs, run_job
from studies.families import to_yaml
from studies.wide import wide_domain
from studies.tables import read_csv
from studies.depth.report import Cases, verdict

#: The studies' tests run the studies (seconds to minutes each): CI runs them, the quick loop does not.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

#: The depth and baseline columns checked against the CLI (the table's exact values).
CHECKED = ("none", "one-step", "dependency", "blinkered:2", "decision-region", "lookahead:2", "lookahead:3",
           "lookahead:auto", "bounded")

#: A sample of cases: different seeds, chains, budgets and sizes (small enough for a test).
SAMPLE = ((0, 1), (0, 3), (1, 2))


@pytest.fixture(scope="module")
def sample_rows():
    return {(s, i): run_job(Job("case", s, i))["rows"] for s, i in SAMPLE}


@pytest.mark.parametrize("seed,instance", SAMPLE)
def test_depth_columns_match_planner_evaluate_on_the_instance_written_as_yaml(seed, instance, sample_rows,
                                                                            tmp_path):
    path = tmp_path / f"wide-{seed}-{instance}.yaml"
    path.write_text(to_yaml(wide_domain(seed, instance)), encoding="utf-8")
    args = [sys.executable, "-m", "planner.cli", "evaluate", str(path), "--json", "--no-progress",
            "--entitlement", "case.read", "--purpose", "case_decision"]
    for p in CHECKED:
        args += ["--policy", p]
    r = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    cli = {e["policy"]: e["expected_total_loss"] for e in json.loads(r.stdout)}
    rows = {row["policy"]: row for row in sample_rows[(seed, instance)]}
    for p in CHECKED:
        assert_allclose(rows[p]["total_loss"], cli[p], rtol=0, atol=1e-9, err_msg=p)
    # the regret columns use V* where it is certified, and its interval bounds every policy's loss
    b = rows["bounded"]
    if b["certified"]:
        assert_allclose(b["regret"], cli["bounded"] - b["v_lo"], atol=1e-12)
    else:
        assert math.isnan(b["regret"]) and b["v_lo"] < b["v_up"]
    assert min(cli.values()) >= b["v_lo"] - 1e-9


def test_case_rows_hold_the_study_invariants(sample_rows):
    for rows in sample_rows.values():
        assert [r["policy"] for r in rows] == list(edition2.POLICIES)
        v = rows[0]
        assert v["v_lo"] <= v["v_up"] + 1e-12
        for r in rows:
            assert r["error"] == "", r["error"]
            assert r["breach_paths"] == 0 and r["forbidden"] == 0 and r["unavailable_acquisitions"] == 0
            assert abs(r["audit_diff"]) <= 1e-9
            assert r["regret_lo"] >= -1e-9, (r["policy"], r["regret_lo"])  # nothing beats the optimum
            assert r["lat_p95_ms"] >= r["lat_median_ms"] >= 0


def test_jobs_have_unique_keys_and_do_not_depend_on_order():
    jobs = build_jobs(Config.full(), peer=True, peer_exploration=0.3)
    keys = [j.key for j in jobs]
    assert len(keys) == len(set(keys))
    assert {j.kind for j in jobs} == {"case", "peer", "model", "frontier"}
    assert sum(j.kind == "case" for j in jobs) == 5 * Config.full().instances
    a = run_job(Job("model", 0, 3, ("scaled", 0.5, 0, None)))["rows"]
    b = run_job(Job("model", 0, 3, ("scaled", 0.5, 0, None)))["rows"]
    assert [r["loss"] for r in a] == [r["loss"] for r in b]


def test_a_scaled_model_at_one_is_the_truth():
    rows = run_job(Job("model", 0, 1, ("scaled", 1.0, 0, None)))["rows"]
    truth = {r["policy"]: r["total_loss"] for r in run_job(Job("case", 0, 1))["rows"]}
    for r in rows:
        assert_allclose(r["loss"], truth[r["policy"]], atol=1e-9, err_msg=r["policy"])


def test_the_frontier_never_gains_from_a_tighter_budget_for_the_optimum():
    rows = run_job(Job("frontier", 0, 1, ((1, 2, 4, None), (1.0,), 0, None)))["rows"]
    v = [next(r["v_lo"] for r in rows if r["calls_limit"] == lv) for lv in (1, 2, 4, "none")]
    assert all(a >= b - 1e-9 for a, b in zip(v, v[1:])), v  # more calls can only help the optimum
    assert all(r["total_loss"] >= r["v_lo"] - 1e-9 for r in rows)


def test_verdict_names_its_reason():
    assert verdict([0.005] * 5, [0.005] * 5)[0] == "no gain"
    assert verdict([0.3] * 5, [0.3] * 5)[0] == "pays"
    assert verdict([0.3] * 5, [0.004] * 5)[0] == "latency"
    assert verdict([1.0, 0, 0, 0, 0, 0], [1.0, 0, 0, 0, 0, 0])[0] in ("few cases", "uncertain")
    _, m, lo, hi, share = verdict([0.2, 0.4, 0.6], [0.2, 0.4, 0.6])
    assert lo <= m <= hi and share == 1.0


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition2") / "quick"
    from planner.cli import main

    rc = main(["bench", "depth", "--edition", "2", "--quick", "--out", str(out), "--no-progress", "--no-peer",
               "--no-plots"])
    assert rc == 0
    return out


def test_quick_run_opens_with_the_share_of_non_myopic_cases(quick):
    lines = (quick / "report.md").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# The depth study, second edition")
    assert lines[2].startswith("**Share of cases with any non-myopic value**")
    assert "planner bench depth --edition 2 --quick" in lines[4]
    text = "\n".join(lines)
    for section in ("## The regime map", "## Every policy", "## Latency as a sweep", "## Model error",
                    "## Loss against budget and penalty weight", "## Where the exact optimum stops being computable"):
        assert section in text


def test_quick_run_rows_and_share_agree(quick):
    rows = read_csv(quick / "cases.csv")
    cs = Cases(rows)
    assert len(cs.cases) == 5 * Config.quick().instances
    share = np.mean([cs.nonmyopic(c, 0.01) for c in cs.cases if cs.certified(c)])
    head = (quick / "report.md").read_text(encoding="utf-8").splitlines()[2]
    assert f"**{share:.3f}**" in head
    for c in cs.cases:
        if cs.certified(c):
            assert math.isclose(cs.value(c, "bounded"), float(cs.first[c]["v_lo"]), abs_tol=1e-9)


def test_the_report_renders_again_from_its_csvs_byte_for_byte(quick):
    from studies.depth.report import rerender

    assert rerender(quick) == (quick / "report.md").read_text(encoding="utf-8")


COMMITTED = ROOT / "studies" / "results" / "depth"


def test_the_committed_report_renders_again_from_its_csvs():
    from studies.depth.report import rerender

    assert rerender(COMMITTED) == (COMMITTED / "report.md").read_text(encoding="utf-8")


def test_an_exact_evaluation_stops_at_its_caps_and_bounds_what_it_left():
    import planner
    from planner.evaluation.audit import Audit
    from planner.errors import EvaluationNodeCap
    from studies.measure import EvaluationCapped, loss_bounds, measure_exact

    d = planner.load_domain("identity_registry")
    c = planner.compile_domain(d)
    with pytest.raises(EvaluationCapped, match="searched more than 0 nodes"):
        measure_exact(c, planner.parse_policy("bounded"), audit=Audit(d.raw), work_cap=0)
    with pytest.raises(EvaluationNodeCap):
        measure_exact(c, planner.parse_policy("bounded"), audit=Audit(d.raw), max_nodes=1)
    full = measure_exact(c, planner.parse_policy("bounded"), audit=Audit(d.raw), max_nodes=10_000,
                         work_cap=10**9)
    exact = full["total_loss"]
    # the bounds of a capped walk hold the exact value, and tighten to it as the caps grow
    widths = []
    for cap in (1, 2, 3, 10_000):
        lo, up = loss_bounds(c, planner.parse_policy("bounded"), max_nodes=cap, work_cap=10**9)
        assert lo - 1e-9 <= exact <= up + 1e-9
        widths.append(up - lo)
    assert widths[-1] <= 1e-12 and widths[0] > 0 and widths == sorted(widths, reverse=True)


def test_capped_rows_report_bounds_not_a_time(monkeypatch):
    monkeypatch.setattr(edition2, "EVAL_WORK", 0)
    rows = run_job(Job("case", 0, 3))["rows"]
    capped = [r for r in rows if r["error"]]
    assert capped, "a work cap of 0 caps every policy that searches"
    for r in capped:
        assert math.isnan(r["total_loss"]) and "searched more than 0 nodes" in r["error"]
        assert r["loss_lo"] <= r["loss_up"] and r["regret_lo"] <= r["regret_up"]
        assert r["loss_up"] >= r["v_lo"] - 1e-9  # no policy beats the optimum: its upper bound cannot either


def test_a_resumed_run_takes_the_saved_jobs(tmp_path, monkeypatch):
    jobs = [Job("case", 0, 3), Job("model", 0, 3, ("scaled", 2.0, 0, None))]
    first = edition2.run_jobs(jobs, cache=tmp_path, progress=False)
    assert len(list(tmp_path.glob("*.json"))) == 2

    def fail(job):
        raise AssertionError(f"{job.key} ran again")

    monkeypatch.setattr(edition2, "run_job", fail)
    again = edition2.run_jobs(jobs, cache=tmp_path, progress=False)
    assert [r["total_loss"] for r in again["case"]] == [r["total_loss"] for r in first["case"]]
    assert [r["loss"] for r in again["model"]] == [r["loss"] for r in first["model"]]


def test_without_the_studies_package_the_command_says_how_to_get_it(tmp_path):
    """``planner bench depth`` from an install without ``studies``: one line, exit 2 (and no other command loads it)."""
    script = ("import sys, builtins\n"
              "real = builtins.__import__\n"
              "def imp(name, *a, **k):\n"
              "    if name == 'studies' or name.startswith('studies.'):\n"
              "        raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
              "    return real(name, *a, **k)\n"
              "builtins.__import__ = imp\n"
              "from planner.cli import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    r = subprocess.run([sys.executable, "-c", script, "bench", "depth", "--quick"], capture_output=True, text=True,
                       cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install ./studies" in lines[0], r.stderr
    r = subprocess.run([sys.executable, "-c", "import sys, planner.cli; print(sorted(m for m in sys.modules "
                        "if m.split('.')[0] == 'studies'))"], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.stdout.strip() == "[]", r.stderr
