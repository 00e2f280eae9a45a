"""The loader checks a calibrated file's world prior against its calibration block, as it checks the rows."""

from __future__ import annotations

import copy

import pytest
from conftest import payment_log

import planner
from planner.calibration.calibrate import calibrate, calibrated_data, dump_domain
from planner.errors import DomainError


@pytest.fixture(scope="module")
def estimated(payment):
    return calibrated_data(calibrate(payment, payment_log(80, seed=4), seed=1), date="2026-12-01")


@pytest.fixture(scope="module")
def held(payment):
    return calibrated_data(calibrate(payment, payment_log(80, seed=4), seed=1, estimate_prior=False),
                           date="2026-12-01")


def _load(data, tmp_path):
    path = tmp_path / "cal.yaml"
    path.write_text(dump_domain(data, "calibrated"))
    return planner.load_domain(path), path


def test_an_untouched_calibrated_prior_loads(estimated, held, tmp_path):
    d, _ = _load(estimated, tmp_path)
    block = estimated["calibration"]["prior"]
    assert block["estimated"] is True
    alpha = block["parameters"][0]["alpha"]
    assert dict(dict(d.prior.marginals)["approval"]) == pytest.approx(
        {v: a / sum(alpha.values()) for v, a in alpha.items()}, abs=1e-12)
    assert _load(held, tmp_path)[0].prior == planner.load_domain("payment_release").prior


@pytest.mark.parametrize("which", ["estimated", "held"])
def test_a_hand_edited_prior_is_one_line_with_the_path(request, tmp_path, capsys, which):
    from planner.cli import main

    data = copy.deepcopy(request.getfixturevalue(which))
    data["prior"]["approval"] = {"approved": 0.7, "pending": 0.3}  # the calibration block's id does not cover it
    with pytest.raises(DomainError) as e:
        _load(data, tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("prior.approval: ")
    want = "the declared prior it held" if which == "held" else "its posterior mean"
    assert f"gives approved 0.7, but {want} is" in msg
    assert "calibration.prior.parameters[0]" in msg
    assert main(["validate", str(tmp_path / "cal.yaml")]) == 2
    out, err = capsys.readouterr()
    err = out + err
    assert len(err.splitlines()) == 1 and str(tmp_path / "cal.yaml") in err and "prior.approval" in err


def test_a_prior_block_of_another_proposition_is_refused(estimated, tmp_path):
    data = copy.deepcopy(estimated)
    data["calibration"]["prior"]["parameters"][0]["of"] = "approvals"
    from planner.io.loader import calibration_id

    block = data["calibration"]
    block["id"] = calibration_id(block)
    with pytest.raises(DomainError, match=r"calibration\.prior\.parameters\[0\]\.of: 'approvals' is not a parameter"):
        _load(data, tmp_path)


def test_a_joint_prior_is_checked_too(tmp_path):
    d = planner.load_domain("wire_transfer")
    assert d.prior.joint is not None
    from planner.compile import compile_domain
    from planner.session.simulate import simulate

    c = compile_domain(d)
    sessions = []
    for seed in range(40):
        s = planner.Session(c, "one-step")
        _, world = simulate(s, seed=seed)
        sessions.append({"acquisitions": [(st.acquired, st.outcome) for st in s.steps], "resolution": world})
    data = calibrated_data(calibrate(d, sessions, seed=2), date="2026-12-01")
    _load(data, tmp_path)  # as written it loads
    data = copy.deepcopy(data)
    rows = data["prior"]["joint"]
    rows[0]["p"], rows[1]["p"] = rows[1]["p"], rows[0]["p"]  # still sums to 1
    if abs(rows[0]["p"] - rows[1]["p"]) < 1e-6:
        pytest.skip("the two first states have the same posterior mean")
    with pytest.raises(DomainError, match=r"prior\.joint: gives .* but its posterior mean is"):
        _load(data, tmp_path)
