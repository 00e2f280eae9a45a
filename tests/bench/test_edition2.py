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

from planner.study import edition2
from planner.study.edition2 import Config, Job, build_jobs, run_job
from planner.study.families import to_yaml
from planner.study.families2 import wide_domain
from planner.study.report import read_csv
from planner.study.report2 import Cases, verdict

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
    r = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=tmp_path,
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

    rc = main(["bench", "depth", "--quick", "--out", str(out), "--no-progress", "--no-peer", "--no-plots"])
    assert rc == 0
    return out


def test_quick_run_opens_with_the_share_of_non_myopic_cases(quick):
    lines = (quick / "report.md").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# The depth study, second edition")
    assert lines[2].startswith("**Share of cases with any non-myopic value**")
    assert "planner bench depth --quick" in lines[4]
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


def test_edition2_refuses_the_single_latency_weight(capsys):
    from planner.cli import main

    assert main(["bench", "depth", "--quick", "--latency-weight", "0.1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--latency-weight" in err[0] and "--edition 1" in err[0]


def test_the_report_renders_again_from_its_csvs_byte_for_byte(quick):
    from planner.study.report2 import rerender

    assert rerender(quick) == (quick / "report.md").read_text(encoding="utf-8")


COMMITTED = ROOT / "bench" / "results" / "depth"


@pytest.mark.skipif(not (COMMITTED / "meta.json").exists(), reason="no committed second-edition run")
def test_the_committed_report_renders_again_from_its_csvs():
    from planner.study.report2 import rerender

    assert rerender(COMMITTED) == (COMMITTED / "report.md").read_text(encoding="utf-8")


def test_an_exact_evaluation_stops_at_its_caps():
    import planner
    from planner.audit import Audit
    from planner.errors import PlannerError
    from planner.study.measure import EvaluationTimeLimit, measure_exact

    d = planner.load_domain("payment_release")
    c = planner.compile_domain(d)
    with pytest.raises(EvaluationTimeLimit, match="more than 0 s"):
        measure_exact(c, planner.parse_policy("bounded"), audit=Audit(d.raw), time_limit_s=0.0)
    with pytest.raises(PlannerError):
        measure_exact(c, planner.parse_policy("one-step"), audit=Audit(d.raw), max_nodes=1)
    full = measure_exact(c, planner.parse_policy("one-step"), audit=Audit(d.raw), max_nodes=10_000,
                         time_limit_s=600.0)
    assert_allclose(full["total_loss"], 1.1925, atol=5e-5)


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


def test_resume_belongs_to_the_second_edition(capsys):
    from planner.cli import main

    assert main(["bench", "depth", "--edition", "1", "--quick", "--resume", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--resume" in err[0] and "--edition 2" in err[0]
