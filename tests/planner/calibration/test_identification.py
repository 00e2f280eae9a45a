"""The world prior, identification (label switching, ridges) and an independent EM to check calibrate against."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

import planner
from planner.calibration.calibrate import JEFFREYS, PRIOR_STRENGTH, calibrate, calibrated_data

from tests.conftest import ROOT

TRUTH = ROOT / "domains" / "truth" / "payment_release.yaml"
VALUES = ("approved", "pending")
OUTCOMES = {"approval_registry": ("approved", "pending"), "manager_message": ("sounds_approved", "unclear")}


def _rows(domain, name) -> np.ndarray:
    o = domain.observation(name)
    return np.array([[dict(case.value)[y] for y in o.outcomes] for case in o.likelihood.cases])


def _draw(truth, n, seed, *, prior_approved=0.55, resolve=lambda rng, world, outcomes: False):
    """Sessions that read the message and the registry, drawn by hand from `truth`'s rows and the given prior."""
    rng = np.random.default_rng(seed)
    rows = {name: _rows(truth, name) for name in OUTCOMES}
    out = []
    for _ in range(n):
        w = 0 if rng.random() < prior_approved else 1
        acq = [(name, OUTCOMES[name][0 if rng.random() < rows[name][w, 0] else 1]) for name in OUTCOMES]
        out.append({"acquisitions": acq, "resolution": {"approval": VALUES[w]} if resolve(rng, w, acq) else {}})
    return out


def _flipped(domain_name="payment_release"):
    """The declared domain with every likelihood's rows swapped between the two worlds: the labels flipped."""
    data = planner.load_domain(domain_name).raw
    data = {k: v for k, v in data.items() if k != "checks"}
    for spec in data["observations"].values():
        lik = spec["likelihood"]
        spec["likelihood"] = {"approved": lik["pending"], "pending": lik["approved"]}
    return planner.Domain.from_dict(data)


@pytest.fixture(scope="module")
def truth():
    return planner.load_domain(TRUTH)


@pytest.fixture(scope="module")
def payment():
    return planner.load_domain("payment_release")


# --------------------------------------------------------------------------
# the world prior


@pytest.mark.slow
def test_a_wrong_declared_prior_no_longer_biases_the_rows(payment, truth):
    """Truth 0.80 approved, declared 0.55; a random 20% resolved: the prior is estimated, the rows come out right."""
    log = _draw(truth, 3000, 4, prior_approved=0.80, resolve=lambda rng, w, a: rng.random() < 0.2)
    est = calibrate(payment, log)
    held = calibrate(payment, log, estimate_prior=False)
    true = {name: _rows(truth, name) for name in OUTCOMES}
    err = lambda r: max(np.abs(r.rows[r.compiled.obs_index(n)] - true[n]).max() for n in OUTCOMES)  # noqa: E731
    assert abs(est.prior[0][0] - 0.80) < 0.03
    lo, hi = est.prior_interval[0][0]
    assert lo <= 0.80 <= hi
    assert err(est) < 0.03 < err(held)
    assert held.prior[0][0] == pytest.approx(0.55) and not held.prior_estimated
    data = calibrated_data(est, date="2026-12-01")
    assert data["prior"]["approval"]["approved"] == pytest.approx(est.prior[0][0])
    assert data["calibration"]["prior"]["estimated"] is True
    assert planner.Domain.from_dict(data).prior.marginals[0][1][0][1] == pytest.approx(est.prior[0][0])


def test_a_joint_prior_is_estimated_in_its_own_form():
    from planner.session.simulate import simulate

    d = planner.load_domain("wire_transfer")
    sessions = []
    for seed in range(30):
        s = planner.Session(d, "top-k:3")
        _, world = simulate(s, seed=seed)
        sessions.append({"acquisitions": [(st.acquired, st.outcome) for st in s.steps], "resolution": world})
    res = calibrate(d, sessions)
    assert len(res.prior) == 1 and res.prior[0].sum() == pytest.approx(1.0)
    data = calibrated_data(res, date="2026-12-01")
    assert [c["p"] for c in data["prior"]["joint"]] == pytest.approx(res.prior[0].tolist())
    planner.Domain.from_dict(data)


# --------------------------------------------------------------------------
# identification


@pytest.mark.slow
def test_a_flipped_declared_domain_without_resolutions_warns_and_its_intervals_cover_the_truth(truth):
    """The log alone cannot tell the labels apart: a warning, and intervals that hold both labellings."""
    flipped = _flipped()
    true = _rows(truth, "approval_registry")
    for seed in range(10):
        res = calibrate(flipped, _draw(truth, 40, seed), seed=seed)
        ident = res.identification
        assert ident.status == "weak" and ident.resolved == 0
        assert dict(ident.labels)["approval"] > 0.4
        assert any("values of approval are not identified" in w for w in ident.warnings)
        o = res.compiled.obs_index("approval_registry")
        lo, hi = res.interval[o][..., 0], res.interval[o][..., 1]
        assert np.all((lo <= true) & (true <= hi)), (seed, res.interval[o])
        assert np.all(hi - lo > 0.5)  # wide, not the narrow intervals of one labelling


def test_resolutions_anchor_the_labels_even_from_a_flipped_declared_domain(truth):
    res = calibrate(_flipped(), _draw(truth, 200, 1, resolve=lambda rng, w, a: rng.random() < 0.5))
    o = res.compiled.obs_index("approval_registry")
    assert np.abs(res.rows[o] - _rows(truth, "approval_registry")).max() < 0.08
    assert dict(res.identification.labels)["approval"] < 0.01
    assert not any("values of approval" in w for w in res.identification.warnings)


def test_a_fully_resolved_log_is_identified(payment, truth):
    res = calibrate(payment, _draw(truth, 100, 2, resolve=lambda rng, w, a: True))
    assert res.identification.status == "identified" and res.identification.warnings == ()
    assert not res.latent


@pytest.mark.slow
def test_two_sources_and_no_resolution_leave_a_ridge_that_is_reported(payment, truth):
    res = calibrate(payment, _draw(truth, 150, 3))
    assert res.identification.ridge > 0.05
    assert any("ridge" in w for w in res.identification.warnings)


# --------------------------------------------------------------------------
# an independent EM


def _independent_em(sessions, declared_rows, declared_prior, strength, iterations=4000):
    """A Dawid-Skene EM over one binary world, written from the formulas with plain loops.

    MAP estimates under Dirichlet priors ``strength x declared + 1/2`` on the
    rows of the two observations and on the world prior; the first E-step
    sees the resolutions only.
    """
    names = list(OUTCOMES)
    a_rows = {n: strength * declared_rows[n] + 0.5 for n in names}
    a_prior = strength * declared_prior + 0.5
    post = []
    for s in sessions:
        r = s["resolution"].get("approval")
        post.append([1.0, 0.0] if r == "approved" else [0.0, 1.0] if r == "pending" else list(declared_prior))
    for _ in range(iterations):
        counts = {n: np.zeros((2, 2)) for n in names}
        wc = np.zeros(2)
        for s, p in zip(sessions, post):
            for w in range(2):
                wc[w] += p[w]
                for name, y in s["acquisitions"]:
                    counts[name][w, OUTCOMES[name].index(y)] += p[w]
        rows = {n: (a_rows[n] + counts[n]) / (a_rows[n] + counts[n]).sum(axis=1, keepdims=True) for n in names}
        prior = (a_prior + wc) / (a_prior + wc).sum()
        new = []
        for s in sessions:
            r = s["resolution"].get("approval")
            like = []
            for w in range(2):
                x = prior[w]
                for name, y in s["acquisitions"]:
                    x *= rows[name][w, OUTCOMES[name].index(y)]
                if r is not None and VALUES[w] != r:
                    x = 0.0
                like.append(x)
            new.append([like[0] / sum(like), like[1] / sum(like)])
        moved = max(abs(a - b) for p, q in zip(post, new) for a, b in zip(p, q))
        post = new
        if moved < 1e-13:
            break
    return rows, prior


def test_calibrate_agrees_with_an_independent_em(payment, truth):
    log = _draw(truth, 120, 5, prior_approved=0.7, resolve=lambda rng, w, a: a[1][1] == "approved")
    assert JEFFREYS == 0.5
    rows, prior = _independent_em(log, {n: _rows(payment, n) for n in OUTCOMES}, np.array([0.55, 0.45]),
                                  PRIOR_STRENGTH)
    res = calibrate(payment, log)
    for name in OUTCOMES:
        assert_allclose(res.rows[res.compiled.obs_index(name)], rows[name], atol=1e-7)
    assert_allclose(res.prior[0], prior, atol=1e-7)


@pytest.mark.slow
def test_cli_warns_in_one_line_each_when_the_log_cannot_identify_the_rows(tmp_path):
    from tests.planner.calibration.test_calibrate import _planner

    log = tmp_path / "o.db"
    r = _planner("simulate-log", str(TRUTH), "--plan-on", "payment_release", "--log", str(log), "--sessions", "40",
                 "--policy", "top-k:2", "--resolve", "0", "--seed", "3", "--no-progress")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "cal.yaml"
    r = _planner("calibrate", "payment_release", str(log), "--out", str(out), "--date", "2026-12-01")
    assert r.returncode == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if line.startswith("planner: warning: ")]
    assert any("values of approval are not identified by the log" in w for w in warnings), r.stderr
    assert "Traceback" not in r.stderr
    assert "**Identification:** weak" in r.stdout and "**Coverage:**" in r.stdout
    block = planner.load_domain(out).raw["calibration"]
    assert block["identification"]["status"] == "weak" and block["prior"]["estimated"] is True
    r = _planner("calibrate", "payment_release", str(log), "--hold-prior", "--date", "2026-12-01")
    assert r.returncode == 0 and "world prior held" in r.stdout
