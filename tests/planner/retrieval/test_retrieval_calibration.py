"""Score calibration: the two fits, their identity, per-index refusal, reliability, the shipped calibrators."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.retrieval.calibration import (
    Calibrator,
    CalibratorSet,
    Judgments,
    fit_calibrator,
    isotonic_fit,
    platt_fit,
    reliability,
)
from planner.retrieval.errors import ScoreCalibrationError, UncalibratedScoreError
from planner.retrieval.pipeline import read_calibrators, shipped_calibrators


def judgments(n=300, seed=0, index="ix", slope=1.0):
    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(0, 10, n), 2)
    y = rng.random(n) < 1 / (1 + np.exp(-slope * (s - 5)))
    return Judgments.from_rows(index, [("q", f"d{i}", float(s[i]), bool(y[i]), "a" if i % 2 else "b")
                                       for i in range(n)])


def test_isotonic_is_non_decreasing_and_pools_violators():
    x, y = isotonic_fit([1, 2, 3, 4, 5], [1, 0, 0, 1, 1])
    np.testing.assert_allclose(y, [1 / 3, 1 / 3, 1 / 3, 1, 1])
    j = judgments()
    x, y = isotonic_fit(j.score, j.relevant)
    assert np.all(np.diff(x) > 0) and np.all(np.diff(y) >= 0)


def test_platt_recovers_a_known_logistic():
    j = judgments(n=5000, seed=3)
    a, b = platt_fit(j.score, j.relevant)
    np.testing.assert_allclose([a, -b / a], [1.0, 5.0], atol=0.1)


def test_the_numpy_fits_agree_with_scikit_learn():
    pytest.importorskip("sklearn")
    j = judgments(n=800, seed=5)
    for method in ("isotonic", "platt"):
        ours = fit_calibrator(j, method=method, index_id="ix:1", date="2026-06-30")
        theirs = fit_calibrator(j, method=method, backend="sklearn", index_id="ix:1", date="2026-06-30")
        grid = np.linspace(-1, 11, 500)
        np.testing.assert_allclose(ours.probabilities(grid), theirs.probabilities(grid), atol=1e-7)
        assert ours.id != theirs.id  # the backend is part of the identity


def test_the_identity_names_data_method_and_date():
    j = judgments()
    a = fit_calibrator(j, index_id="ix:1", date="2026-06-30")
    assert a.id == fit_calibrator(judgments(), index_id="ix:1", date="2026-06-30").id
    assert a.id != fit_calibrator(j, index_id="ix:1", date="2026-07-01").id
    assert a.id != fit_calibrator(j, method="platt", index_id="ix:1", date="2026-06-30").id
    assert a.id != fit_calibrator(judgments(seed=1), index_id="ix:1", date="2026-06-30").id
    ident = a.identity()
    assert {"id", "method", "backend", "data_sha256", "date", "index", "index_id", "n"} <= set(ident)
    assert ident["data_sha256"] == j.sha256()


def test_round_trip_and_a_tampered_file_is_refused():
    a = fit_calibrator(judgments(), index_id="ix:1", date="2026-06-30")
    b = Calibrator.from_json(json.loads(json.dumps(a.to_json())))
    assert b.id == a.id
    np.testing.assert_array_equal(b.probabilities([1.0, 5.0, 9.0]), a.probabilities([1.0, 5.0, 9.0]))
    data = a.to_json()
    data["params"]["y"][-1] = 0.5
    with pytest.raises(ScoreCalibrationError, match="id|non-decreasing"):
        Calibrator.from_json(data)
    data = a.to_json()
    data["date"] = "2027-01-01"
    with pytest.raises(ScoreCalibrationError, match="edited after the fit"):
        Calibrator.from_json(data)


@pytest.mark.parametrize("edit", [lambda d: d.pop("method"), lambda d: d.update(n=-1), lambda d: d.update(extra=1),
                                  lambda d: d.update(params={"x": [1, float("nan")], "y": [0, 1]}),
                                  lambda d: d.update(method="magic")])
def test_malformed_calibrators_are_one_line_errors(edit):
    data = fit_calibrator(judgments(), index_id="ix:1", date="2026-06-30").to_json()
    edit(data)
    with pytest.raises(ScoreCalibrationError) as e:
        Calibrator.from_json(data)
    assert "\n" not in str(e.value)


def test_too_few_or_one_label_judgments_are_refused():
    with pytest.raises(ScoreCalibrationError, match="at least"):
        fit_calibrator(judgments(n=10), index_id="ix:1")
    one = Judgments.from_rows("ix", [("q", f"d{i}", float(i), False, "a") for i in range(50)])
    with pytest.raises(ScoreCalibrationError, match="both labels"):
        fit_calibrator(one, index_id="ix:1")


def test_a_falling_platt_slope_is_refused():
    with pytest.raises(ScoreCalibrationError, match="falls as the score rises"):
        fit_calibrator(judgments(n=2000, slope=-1.0), method="platt", index_id="ix:1")


def test_scores_of_another_index_are_refused():
    cal = fit_calibrator(judgments(index="policy_index"), index_id="bm25:a", date="2026-06-30")
    assert 0 <= cal.calibrate(3.0, index="policy_index", index_id="bm25:a").p <= 1
    with pytest.raises(UncalibratedScoreError, match="calibrate each index separately"):
        cal.calibrate(3.0, index="archive_index")
    with pytest.raises(UncalibratedScoreError, match="content"):
        cal.calibrate(3.0, index="policy_index", index_id="bm25:other")
    cs = CalibratorSet.of([cal])
    with pytest.raises(UncalibratedScoreError, match="no calibrator for index 'archive_index'"):
        cs.calibrate("archive_index", 3.0)
    with pytest.raises(ScoreCalibrationError, match="one per index"):
        CalibratorSet.of([cal, cal])
    with pytest.raises(ScoreCalibrationError, match="finite"):
        cal.calibrate(float("nan"), index="policy_index")


def test_reliability_buckets_and_strata_cover_every_judgment():
    train, test = judgments(n=2000, seed=1), judgments(n=2000, seed=2)
    cal = fit_calibrator(train, method="platt", index_id="ix:1", date="2026-06-30")
    rel = reliability(cal, test, bins=10)
    assert sum(b["n"] for b in rel.buckets) == len(test) == rel.overall["n"]
    assert sum(g["n"] for _, g in rel.strata) == len(test) and [k for k, _ in rel.strata] == ["a", "b"]
    assert rel.overall["ece"] < 0.05  # well specified: the logistic is the truth
    assert sum(b["within"] for b in rel.buckets if b["n"]) >= 8
    # a miscalibrated map is seen as such
    bad = Calibrator(method="platt", backend="numpy", index="ix", index_id="ix:1", params=(3.0, -5.0),
                     data_sha256="0" * 64, n=1, n_relevant=1, date="2026-06-30")
    assert reliability(bad, test).overall["ece"] > 0.1
    with pytest.raises(ScoreCalibrationError, match="cannot test"):
        reliability(cal, judgments(index="other"))


@given(st.lists(st.tuples(st.floats(-5, 5), st.booleans()), min_size=20, max_size=80))
def test_calibrated_probabilities_never_fall_as_the_score_rises(rows):
    if len({r for _, r in rows}) < 2:
        return
    j = Judgments.from_rows("ix", [("q", f"d{i}", s, r, "a") for i, (s, r) in enumerate(rows)])
    for method in ("isotonic", "platt"):
        try:
            cal = fit_calibrator(j, method=method, index_id="ix:1", date="2026-06-30")
        except ScoreCalibrationError:
            continue  # a falling Platt slope: refused, which is the point
        p = cal.probabilities(np.linspace(-6, 6, 200))
        assert np.all(np.diff(p) >= -1e-15) and p.min() >= 0 and p.max() <= 1


def test_the_shipped_calibrators_read_back_and_name_their_data(tmp_path):
    cs = shipped_calibrators()
    assert [c.index for c in cs.calibrators] == ["policy_index", "archive_index", "partner_index", "hr_index"]
    for c in cs.calibrators:
        assert c.method == "isotonic" and len(c.data_sha256) == 64 and c.n >= 100
    bad = tmp_path / "c.json"
    bad.write_text("{}")
    with pytest.raises(ScoreCalibrationError, match="not a calibrator file"):
        read_calibrators(bad)
    with pytest.raises(ScoreCalibrationError, match="no such file"):
        read_calibrators(tmp_path / "missing.json")
