"""The model-error arm's logger, its propensities in the outcome log, the coverage (ESS) and a quick run."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import planner
from planner.compile import compile_domain
from planner.errors import LogError, PolicyError
from planner.io import store
from planner.io.store import open_log
from planner.node import root_node
from planner.policies import parse_policy
from planner.policies.explore import explore_distribution, node_uniform
from planner.policies.onestep import one_step_values
from planner.policies.base import pick_best
from studies.depth3 import model_error as me

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from strategies import domain_dicts  # noqa: E402


def _sessions(log):
    return list(log.iter_sessions(receipts=False))


# --------------------------------------------------------------------------
# the logger keeps the gates and the hard budget


@settings(max_examples=30, deadline=None)
@given(raw=domain_dicts(max_observations=5), eps=st.sampled_from([0.0, 0.3, 1.0]), seed=st.integers(0, 2**20),
       entitled=st.booleans())
def test_the_exploring_logger_never_breaks_a_gate_or_the_budget(raw, eps, seed, entitled, tmp_path_factory):
    domain = planner.Domain.from_dict(raw)
    c = compile_domain(domain)
    caller = planner.Caller(entitlements=["secret.read"] if entitled else [])
    path = tmp_path_factory.mktemp("log") / "log.db"
    with open_log(path) as log:
        me.log_explore(c, c, log, sessions=6, seed=seed, eps=eps, caller=caller)
        sessions = _sessions(log)
    s0 = planner.Session(domain, caller=caller)
    admitted = s0.admission.admitted
    limits = {d: float(c.limits[i]) for i, d in enumerate(c.dims) if np.isfinite(c.limits[i])}
    assert len(sessions) == 6
    for s in sessions:
        names = [a.observation for a in s.acquisitions]
        assert len(names) == len(set(names))  # nothing twice
        for a in s.acquisitions:
            assert admitted[c.obs_index(a.observation)], f"{a.observation} is rejected for this caller"
            assert a.propensity is not None and 0.0 < a.propensity <= 1.0
        for d, cap in limits.items():
            spent = sum(a.cost.get(d, 0.0) for a in s.acquisitions)
            assert spent <= cap + 1e-9, (d, spent, cap)
        assert s.complete and s.resolution


# --------------------------------------------------------------------------
# the propensities in the log are the policy's distribution


def _replayed(c, adm, s):
    """Each logged acquisition with the exploring rule's distribution at its node, rebuilt from the log."""
    node = root_node(c, adm)
    out = []
    for a in s.acquisitions:
        o = c.obs_index(a.observation)
        greedy = pick_best(one_step_values(node) - c.penalty, c.penalty, node.eligible)
        p, _ = explore_distribution(float(s.policy.split(":")[1]), node.eligible, greedy)
        out.append((a.propensity, float(p[o])))
        node = node.child(o, c.outcome_index(o, a.outcome))
    return out


def test_logged_propensities_are_the_rule_at_each_node(tmp_path):
    d = planner.load_domain("kyc_chain")
    c = compile_domain(d)
    s0 = planner.Session(d)
    with open_log(tmp_path / "log.db") as log:
        me.log_explore(c, c, log, sessions=100, seed=3, eps=0.4)
        pairs = [pq for s in _sessions(log) for pq in _replayed(c, s0.admission, s)]
    assert len(pairs) >= 40
    for logged, want in pairs:
        assert logged == pytest.approx(want, abs=1e-15)
    assert len({round(w, 12) for _, w in pairs}) > 1  # greedy and explored choices both met


def test_first_choices_follow_the_logged_distribution(tmp_path):
    """Over many session seeds, the root choice's frequency matches its propensity (a 4-sigma band)."""
    d = planner.load_domain("payment_release")
    c = compile_domain(d)
    n = 2000
    with open_log(tmp_path / "log.db") as log:
        me.log_explore(c, c, log, sessions=n, seed=11, eps=0.5)
        first = [(s.acquisitions[0].observation, s.acquisitions[0].propensity) if s.acquisitions else (None, None)
                 for s in _sessions(log)]
    root = planner.Session(d).node
    greedy = pick_best(one_step_values(root) - c.penalty, c.penalty, root.eligible)
    p, stop = explore_distribution(0.5, root.eligible, greedy)
    for o in np.flatnonzero(p > 0):
        name = c.obs_names[o]
        share = sum(f == name for f, _ in first) / n
        assert abs(share - p[o]) <= 4 * np.sqrt(p[o] * (1 - p[o]) / n), (name, share, p[o])
        assert all(q == pytest.approx(p[o], abs=1e-15) for f, q in first if f == name)
    assert sum(f is None for f, _ in first) / n == pytest.approx(stop, abs=4 * np.sqrt(max(stop, 1e-3) / n))


def test_explore_spec_round_trips_and_bad_specs_are_one_line():
    assert parse_policy("explore:0.25:9").spec == "explore:0.25:9"
    assert parse_policy("explore:1:0") == parse_policy("explore:1.0:0")
    for bad in ("explore", "explore:0.5", "explore:2:1", "explore:x:1", "explore:0.5:-1", "explore:0.5:y"):
        with pytest.raises(PolicyError) as e:
            parse_policy(bad)
        assert "\n" not in str(e.value)


def test_a_seed_is_a_deterministic_function_of_the_node():
    a, b = np.array([-1, 0, 1, -1]), np.array([-1, 0, 1, -1])
    assert node_uniform(5, a) == node_uniform(5, b)
    assert len({node_uniform(s, a) for s in range(200)}) == 200


# --------------------------------------------------------------------------
# the store: the propensity column, old logs


def test_a_version_1_log_stays_readable_and_migrates_with_null_propensities(tmp_path, monkeypatch):
    path = tmp_path / "v1.db"
    monkeypatch.setattr(store, "SCHEMA_VERSION", 1)
    monkeypatch.setattr(store, "MIGRATIONS", (store._create_v1,))
    with open_log(path) as log:
        sid = log.begin(domain="payment_release", content_hash="h", world={"approval": ["approved", "pending"]},
                        policy="bounded", context={}, calibration=None)
        log.acquisition(sid, index=0, observation="approval_registry", outcome="pending", cost={"calls": 1.0},
                        unplanned=False, note=None)
    monkeypatch.undo()
    with open_log(path, readonly=True) as log:  # read as it is, not migrated
        [s] = log.sessions()
        assert s.acquisitions[0].propensity is None
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 1
    with open_log(path) as log:  # a writer migrates it
        log.acquisition(sid, index=1, observation="manager_message", outcome="unclear", cost={"calls": 1.0},
                        unplanned=False, note=None, propensity=0.25)
        assert [a.propensity for a in log.sessions()[0].acquisitions] == [None, 0.25]
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 2


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, float("nan"), "x"])
def test_a_propensity_outside_0_1_is_refused_and_nothing_is_logged(tmp_path, bad):
    with open_log(tmp_path / "log.db") as log:
        sid = log.begin(domain="d", content_hash="h", world={"p": ["a", "b"]}, policy="x", context={},
                        calibration=None)
        with pytest.raises(LogError) as e:
            log.acquisition(sid, index=0, observation="o", outcome="a", cost={}, unplanned=False, note=None,
                            propensity=bad)
        assert "propensity" in str(e.value) and "\n" not in str(e.value)
        assert log.sessions()[0].acquisitions == ()


def test_a_deterministic_policy_logs_no_propensity(tmp_path):
    s = planner.Session(planner.load_domain("payment_release"), "one-step", log=tmp_path / "log.db")
    s.record("approval_registry", s.next() and "approved")
    s.next()
    with open_log(tmp_path / "log.db", readonly=True) as log:
        assert [a.propensity for a in log.sessions()[0].acquisitions] == [None]


def test_an_acquisition_the_caller_chose_logs_no_propensity(tmp_path):
    s = planner.Session(planner.load_domain("payment_release"), "explore:0.5:1", log=tmp_path / "log.db")
    chosen = s.next().observation
    other = "approval_registry" if chosen != "approval_registry" else "manager_message"
    s.record(other, "unclear" if other == "manager_message" else "approved")
    s.end()
    with open_log(tmp_path / "log.db", readonly=True) as log:
        assert [a.propensity for a in log.sessions()[0].acquisitions] == [None]


# --------------------------------------------------------------------------
# the ESS of each row, on a tiny hand-made log


def test_ess_of_each_row_on_a_hand_made_log(tmp_path):
    d = planner.load_domain("payment_release")
    c = compile_domain(d)
    world = {"approval": ["approved", "pending"]}
    made = [  # (acquisitions (observation, outcome, propensity), resolution)
        ([("approval_registry", "approved", 0.5)], {"approval": "approved"}),
        ([("approval_registry", "approved", 0.25), ("manager_message", "sounds_approved", 1.0)], {"approval": "approved"}),
        ([("approval_registry", "pending", None)], {"approval": "pending"}),
        ([("approval_registry", "unavailable", 0.5)], {"approval": "pending"}),  # says nothing about the row
        ([("manager_message", "sounds_approved", 0.5)], {}),  # unresolved: no row
    ]
    with open_log(tmp_path / "log.db") as log:
        for acq, res in made:
            sid = log.begin(domain=d.name, content_hash="h", world=world, policy="explore:0.5:1", context={},
                            calibration=None)
            for k, (o, y, p) in enumerate(acq):
                log.acquisition(sid, index=k, observation=o, outcome=y, cost={}, unplanned=False, note=None,
                                propensity=p)
            if res:
                log.resolve(sid, res)
    case = {v: int(me.likelihood_case(c, "approval_registry", {"approval": v})) for v in ("approved", "pending")}
    with open_log(tmp_path / "log.db", readonly=True) as log:
        cov = me.row_coverage(c, log.iter_sessions(receipts=False))
    approved = cov[("approval_registry", case["approved"])]
    assert (approved["n"], approved["sum_w"], approved["sum_w2"]) == (2, 6.0, 20.0)  # weights 2 and 4
    assert approved["ess"] == pytest.approx(36 / 20)
    pending = cov[("approval_registry", case["pending"])]
    assert (pending["n"], pending["ess"]) == (1, 1.0)  # no propensity: weight 1
    mm = cov[("manager_message", int(me.likelihood_case(c, "manager_message", {"approval": "approved"})))]
    assert (mm["n"], mm["ess"]) == (1, 1.0)
    assert sum(v["n"] for v in cov.values()) == 4


# --------------------------------------------------------------------------
# end to end


@pytest.mark.slow
def test_quick_run_end_to_end(tmp_path):
    out = tmp_path / "quick"
    ns = me.NS
    assert me.main(["--quick", "--out", str(out), "--workers", "1"]) == 0
    assert me.NS == ns  # the quick sizes do not leak into the module
    for name in ("model_error.csv", "coverage.csv", "logs.csv", "meta.json", "report.md"):
        assert (out / name).is_file(), name
    res = me.load_folder(out)
    assert {r["policy"] for r in res["rows"]} == {p for p, _ in me.POLICIES}
    assert len(res["logs"]) == len(me.FAMS) * 2  # N in (10, 40), one seed
    for r in res["logs"]:
        assert 0.0 <= r["share_empty"] <= 1.0 and r["min_ess"] <= r["median_ess"]
    text = (out / "report.md").read_text()
    assert "Quick run" in text and "## Coverage of the log per row" in text
