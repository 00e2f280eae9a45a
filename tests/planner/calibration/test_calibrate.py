"""Calibration from logs: the estimator, the calibrated file, the simulator, scoring under a truth."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import planner
from planner.calibration.calibrate import JEFFREYS, CalibrationError, calibrate, calibrated_data, dump_domain, posterior_draws
from planner.compile import _case_probs, assemble, compile_domain
from planner.errors import DomainError, PlannerError
from planner.evaluation.evaluate import evaluate_policy, expected_loss_under
from planner.io.loader import _fmt  # the loader's own number format in messages
from planner.session.replay import replay
from planner.session.simulate import simulate_log
from planner.io.store import open_log

from tests.conftest import DOMAINS, ROOT

TRUTH = ROOT / "domains" / "truth" / "payment_release.yaml"


def _sessions(truth, n, seed, *, resolve_if=lambda y: True):
    """Payment sessions that read the message and the registry, drawn by hand from `truth`'s rows."""
    rng = np.random.default_rng(seed)
    reg = dict(truth.observation("approval_registry").likelihood.cases[0].value)["approved"]
    wrong = dict(truth.observation("approval_registry").likelihood.cases[1].value)["approved"]
    msg = dict(truth.observation("manager_message").likelihood.cases[0].value)["sounds_approved"]
    msg_p = dict(truth.observation("manager_message").likelihood.cases[1].value)["sounds_approved"]
    out = []
    for _ in range(n):
        w = "approved" if rng.random() < 0.55 else "pending"
        m = "sounds_approved" if rng.random() < (msg if w == "approved" else msg_p) else "unclear"
        y = "approved" if rng.random() < (reg if w == "approved" else wrong) else "pending"
        out.append({"acquisitions": [("manager_message", m), ("approval_registry", y)],
                    "resolution": {"approval": w} if resolve_if(y) else {}})
    return out


@pytest.fixture(scope="module")
def truth():
    return planner.load_domain(TRUTH)


# --------------------------------------------------------------------------
# arrays from rows


@pytest.mark.parametrize("path", sorted(DOMAINS.glob("*.yaml")), ids=lambda p: p.stem)
def test_assemble_gives_the_compiled_arrays_back(path):
    d = planner.load_domain(path)
    c = compile_domain(d)
    rows = [_case_probs(o.likelihood, o.outcomes) for o in d.observations]
    prior, lik = assemble(c, rows, np.array([o.failure_rate for o in d.observations]))
    assert_array_equal(prior, c.prior)
    assert_array_equal(lik, c.lik)


# --------------------------------------------------------------------------
# the estimator


def test_resolved_sessions_are_counted_exactly(payment, truth):
    log = _sessions(truth, 300, 0)
    res = calibrate(payment, log, prior_strength=4.0)
    o = res.compiled.obs_index("approval_registry")
    counts = np.zeros((2, 2))
    for s in log:
        w = ["approved", "pending"].index(s["resolution"]["approval"])
        counts[w, ["approved", "pending"].index(s["acquisitions"][1][1])] += 1
    assert_allclose(res.counts[o], counts)
    assert_allclose(res.alpha[o], 4.0 * np.array([[0.99, 0.01], [0.01, 0.99]]) + JEFFREYS + counts)
    assert_allclose(res.rows[o], res.alpha[o] / res.alpha[o].sum(axis=1, keepdims=True))
    assert not res.latent  # every world known: exact Dirichlet intervals
    lo, hi = res.interval[o][..., 0], res.interval[o][..., 1]
    assert np.all(lo <= res.rows[o]) and np.all(res.rows[o] <= hi)


def test_a_row_without_data_keeps_its_declared_mean(payment, truth):
    res = calibrate(payment, _sessions(truth, 50, 1))
    o = res.compiled.obs_index("stale_approval_pdf")
    assert res.acquired[o] == 0
    assert_allclose(res.rows[o], res.declared[o])


@pytest.mark.slow
def test_em_recovers_the_rows_that_counting_resolved_sessions_gets_wrong(payment, truth):
    """Only sessions where the registry said approved (released payments) learn the truth."""
    log = _sessions(truth, 4000, 2, resolve_if=lambda y: y == "approved")
    em = calibrate(payment, log)
    counted = calibrate(payment, log, method="resolved")
    o = em.compiled.obs_index("approval_registry")
    true_rows = np.array([[0.90, 0.10], [0.10, 0.90]])
    assert np.abs(em.rows[o] - true_rows).max() < 0.03
    # Counting only resolved sessions sees the registry say approved in every pending world it counts:
    # P(approved | pending) comes out near 1 - prior pseudo-counts, not 0.10.
    bias = counted.rows[o][1, 0] - true_rows[1, 0]
    assert bias > 0.6
    assert em.latent and not counted.latent


def test_em_uses_lineage_and_failures(tmp_path):
    d = planner.load_domain("second_copy")
    c = compile_domain(d)
    sessions = []
    for seed in range(60):
        s = planner.Session(c, "top-k:3")
        _, world = planner.session.simulate.simulate(s, seed=seed)
        sessions.append({"acquisitions": [(st.acquired, st.outcome) for st in s.steps], "resolution": world})
    res = calibrate(d, sessions)
    assert res.used == 60 and res.inconsistent == 0
    members = [o for o in range(len(c.obs_names)) if c.lineage[o] >= 0]
    assert len(members) >= 2
    for o in members[1:]:  # one set of rows per lineage group, shared
        assert_array_equal(res.rows[o], res.rows[members[0]])
    data = calibrated_data(res, date="2026-12-01")
    assert planner.Domain.from_dict(data).calibration_id == data["calibration"]["id"]


def test_bad_arguments_and_empty_logs(payment):
    with pytest.raises(CalibrationError, match="prior strength must be a finite number above 0, got 0"):
        calibrate(payment, [{"acquisitions": [], "resolution": {}}], prior_strength=0)
    with pytest.raises(CalibrationError, match="unknown calibration method 'magic'"):
        calibrate(payment, [], method="magic")
    with pytest.raises(CalibrationError, match=r"no session in the log can calibrate payment_release \(skipped: "
                                               r"1 an acquisition \(nope=x\) the domain does not declare\)"):
        calibrate(payment, [{"acquisitions": [("nope", "x")], "resolution": {}}])


# --------------------------------------------------------------------------
# the calibrated file


@pytest.fixture(scope="module")
def calibrated(payment, truth):
    res = calibrate(payment, _sessions(truth, 200, 3))
    return calibrated_data(res, date="2026-12-01")


def test_the_calibrated_file_loads_and_names_its_calibration(calibrated, tmp_path):
    path = tmp_path / "cal.yaml"
    path.write_text(dump_domain(calibrated, "a header\nin two lines"))
    assert path.read_text().startswith("# a header\n# in two lines\n")
    d = planner.load_domain(path)
    assert d.calibration_id == calibrated["calibration"]["id"]
    row = d.calibration.of("approval_registry").rows[0]
    reg = dict(d.observation("approval_registry").likelihood.cases[0].value)
    assert_allclose([p for _, p in row.mean], [reg["approved"], reg["pending"]], atol=1e-12)
    assert reg["approved"] < 0.97  # moved from the declared 0.99 towards the true 0.90


def _edited(data, edit):
    import copy

    data = copy.deepcopy(data)
    edit(data)
    return data


def test_a_hand_edited_calibration_is_refused(calibrated):
    def lik(d):
        d["observations"]["approval_registry"]["likelihood"]["approved"] = {"approved": 0.99, "pending": 0.01}

    with pytest.raises(DomainError) as e:
        planner.Domain.from_dict(_edited(calibrated, lik))
    mean = calibrated["observations"]["approval_registry"]["likelihood"]["approved"]["approved"]
    assert str(e.value) == (
        f"observations.approval_registry.likelihood: row 1 (approval=approved) gives approved 0.99, but its "
        f"posterior mean is {_fmt(mean)} (calibration.observations.approval_registry.rows[0].alpha): "
        "calibrate again, or remove the calibration block")

    def block(d):
        d["calibration"]["prior_strength"] = 3.0

    with pytest.raises(DomainError, match=r"^calibration\.id: cal:[0-9a-f]{12} does not match the block's content "
                                          r"\(cal:[0-9a-f]{12}\): the block was edited after calibration$"):
        planner.Domain.from_dict(_edited(calibrated, block))

    def rows(d):
        d["calibration"]["observations"]["approval_registry"]["rows"].pop()
        from planner.io.loader import calibration_id

        d["calibration"]["id"] = calibration_id(d["calibration"])

    with pytest.raises(DomainError, match=r"^calibration\.observations\.approval_registry\.rows: 1 rows for a "
                                          r"likelihood of 2 cases$"):
        planner.Domain.from_dict(_edited(calibrated, rows))

    def mean(d):
        d["calibration"]["observations"]["approval_registry"]["rows"][0]["mean"]["approved"] = 0.5
        from planner.io.loader import calibration_id

        d["calibration"]["id"] = calibration_id(d["calibration"])

    with pytest.raises(DomainError, match=r"^calibration\.observations\.approval_registry\.rows\[0\]\.mean\.approved: "
                                          r"0\.5 is not alpha / sum\(alpha\) = 0\.9"):
        planner.Domain.from_dict(_edited(calibrated, mean))


def test_receipts_name_the_calibration_and_replay(calibrated, payment):
    d = planner.Domain.from_dict(calibrated)
    s = planner.Session(d)
    planner.session.simulate.simulate(s, {"approval": "approved"})
    r = s.receipt()
    assert r["domain"]["calibration"]["id"] == d.calibration_id
    assert r["domain"]["calibration"]["log_sha256"] == calibrated["calibration"]["log"]["sha256"]
    assert replay(r, d)[0]
    ok, why = replay(r, payment)
    assert not ok and why.startswith(f"domain calibration (none) differs from the receipt's {d.calibration_id}")
    plain = planner.Session(payment)
    planner.session.simulate.simulate(plain, {"approval": "approved"})
    assert "calibration" not in plain.receipt()["domain"]


@pytest.mark.slow
def test_posterior_draws_are_seeded_and_centred(calibrated):
    c = compile_domain(planner.Domain.from_dict(calibrated))
    p1, l1 = posterior_draws(c, 4000, 7)
    p2, l2 = posterior_draws(c, 4000, 7)
    assert_array_equal(l1, l2)
    assert_allclose(l1.mean(axis=0), c.lik, atol=0.02)
    o = c.obs_index("stale_approval_pdf")  # not calibrated from data: drawn from its prior
    assert l1[:, o].std(axis=0).max() > 0


# --------------------------------------------------------------------------
# scoring under a truth


@pytest.mark.parametrize("name, policy", [("payment_release", "one-step"), ("kyc_chain", "bounded"),
                                          ("identity_registry", "lookahead:2"), ("second_copy", "dependency"),
                                          ("tool_outage", "bounded")])
def test_scoring_under_the_model_itself_is_exact_evaluation(name, policy):
    d = planner.load_domain(name)
    assert_allclose(expected_loss_under(d, d, policy), evaluate_policy(d, policy).expected_total_loss, rtol=1e-12)


def test_scoring_refuses_another_structure(payment):
    with pytest.raises(PlannerError, match="differs from the model payment_release in its propositions"):
        expected_loss_under(payment, planner.load_domain("kyc_chain"), "one-step")


# --------------------------------------------------------------------------
# the simulator and the acceptance figures (a reduced version of studies/calibration.py)


def test_simulated_logs_are_seeded_and_resolve_selectively(tmp_path, payment, truth):
    runs = []
    for k in range(2):
        with open_log(tmp_path / f"{k}.db") as log:
            out = simulate_log(truth, log, sessions=40, policy="top-k:2", resolve=1.0, resolve_when=["release"],
                               seed=5, model=payment)
            runs.append(log.sessions())
    a, b = runs
    assert [(s.acquisitions, s.action, s.resolution) for s in a] == [(s.acquisitions, s.action, s.resolution)
                                                                   for s in b]
    assert all(bool(s.resolution) == (s.action == "release") for s in a)
    assert out.resolved == sum(s.action == "release" for s in a) > 0
    assert all(s.domain == "payment_release" and s.content_hash == payment.content_hash for s in a)


def test_the_simulator_refuses_what_a_session_could_not_record(tmp_path, payment):
    strict = planner.Domain.from_dict({**payment.raw, "observations": {
        **payment.raw["observations"],
        "approval_registry": {**payment.raw["observations"]["approval_registry"],
                              "likelihood": {"approved": {"approved": 1.0, "pending": 0.0},
                                             "pending": {"approved": 0.0, "pending": 1.0}}}}})
    with open_log(tmp_path / "x.db") as log, pytest.raises(
            PlannerError, match="gives approval_registry outcome 'approved' a positive probability in "
                                "approval=pending, where the model rules it out"):
        simulate_log(payment, log, sessions=1, policy="one-step", model=strict)
    with open_log(tmp_path / "x.db") as log, pytest.raises(PlannerError, match="unknown action 'pay'"):
        simulate_log(payment, log, sessions=1, policy="one-step", resolve_when=["pay"])


@pytest.mark.slow
def test_calibration_covers_the_truth_and_lowers_the_loss_under_it(tmp_path, payment, truth):
    covered = rows = 0
    for seed in range(3):
        with open_log(tmp_path / f"{seed}.db") as log:
            simulate_log(truth, log, sessions=1000, policy="top-k:2", resolve=1.0, seed=seed, model=payment)
            res = calibrate(payment, log.sessions(), seed=seed)
        for name in ("approval_registry", "manager_message"):
            o = res.compiled.obs_index(name)
            t = _case_probs(truth.observation(name).likelihood, truth.observation(name).outcomes)
            lo, hi = res.interval[o][..., 0], res.interval[o][..., 1]
            covered += int(np.all((lo <= t) & (t <= hi), axis=1).sum())
            rows += 2
        cal = planner.Domain.from_dict(calibrated_data(res))
        assert expected_loss_under(cal, truth, "bounded") < expected_loss_under(payment, truth, "bounded") - 1.0
    assert covered >= 10 and rows == 12  # 20 seeds x 1,000 sessions in studies/results/calibration/report.md


# --------------------------------------------------------------------------
# the command line


def _planner(*args, cwd=None):
    # This checkout's planner, whatever the current folder (and whatever else is installed).
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "planner.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env)


@pytest.mark.slow
def test_cli_simulate_calibrate_evaluate(tmp_path):
    log = tmp_path / "o.db"
    r = _planner("simulate-log", str(TRUTH), "--plan-on", "payment_release", "--log", str(log), "--sessions", "60",
                 "--policy", "top-k:2", "--resolve", "1", "--resolve-when", "release", "--seed", "1", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"logged 60 sessions of payment_release (sessions 1-60) in {log}: actions ")
    out = tmp_path / "cal.yaml"
    r = _planner("calibrate", "payment_release", str(log), "--out", str(out), "--date", "2026-12-01")
    assert r.returncode == 0, r.stderr
    d = planner.load_domain(out)
    assert r.stdout.startswith(f"calibration {d.calibration_id}: 60 of 60 sessions of payment_release (")
    assert "**Moved most:**" in r.stdout
    r = _planner("calibrate", "payment_release", str(log), "--date", "2026-12-01")  # to stdout: the same file
    assert r.returncode == 0 and r.stdout == out.read_text()
    r = _planner("evaluate", str(out), "--truth", str(TRUTH), "--policy", "bounded")
    assert r.returncode == 0, r.stderr
    assert f"calibration {d.calibration_id}) scored under the truth" in r.stdout.splitlines()[0]


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (("calibrate", "payment_release", "NOLOG.db"), "NOLOG.db"),
    (("simulate-log", "payment_release", "--log", "x.db", "--sessions", "1", "--resolve", "2"),
     "planner: error: --resolve 2: a rate in [0, 1]"),
    (("simulate-log", "payment_release", "--log", "x.db", "--sessions", "1", "--plan-on", "kyc_chain"),
     "planner: error: the true domain payment_release differs from the model kyc_chain in its propositions, "
     "not only in its likelihoods"),
    (("run", "payment_release", "--policy", "conservative", "--world", "approval=pending"), "calibrat"),
    (("simulate-log", "payment_release", "--log", "x.db", "--sessions", "2", "--policy", "conservative"),
     "planner: error: payment_release: conservative planning needs a calibrated domain"),
])
def test_cli_bad_input_is_one_line_exit_2(tmp_path, args, message):
    r = _planner(*args, cwd=tmp_path)
    assert r.returncode == 2, r.stdout
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("planner: error: ") and message in lines[0]
    assert not (tmp_path / "x.db").exists()  # a refused simulation leaves no log behind


@pytest.mark.slow
def test_two_simulate_log_processes_share_one_log(tmp_path):
    """Two `planner simulate-log` processes, 500 sessions each, into one file at once: 1,000 sessions, none lost."""
    shared = tmp_path / "shared.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def start(seed, path):
        return subprocess.Popen([sys.executable, "-m", "planner.cli", "simulate-log", str(TRUTH), "--plan-on",
                                 "payment_release", "--log", str(path), "--sessions", "500", "--policy", "top-k:2",
                                 "--resolve", "0.5", "--seed", str(seed), "--no-progress"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    procs = [start(seed, shared) for seed in (1, 2)]
    for p in procs:
        out, err = p.communicate()
        assert p.returncode == 0, err
    with open_log(shared) as log:
        rows = log.sessions()
    assert len(rows) == 1000 and len({r.id for r in rows}) == 1000 and all(r.complete for r in rows)
    # Each process's sessions, in its own order, are exactly what it logs alone.
    for seed in (1, 2):
        alone = tmp_path / f"alone{seed}.db"
        p = start(seed, alone)
        p.communicate()
        with open_log(alone) as log:
            want = [(tuple((a.observation, a.outcome) for a in s.acquisitions), s.action, s.resolution)
                    for s in log.sessions()]
        got = [(tuple((a.observation, a.outcome) for a in s.acquisitions), s.action, s.resolution)
               for s in rows if s.context.get("simulated", {}).get("seed") == seed]
        assert got == want
