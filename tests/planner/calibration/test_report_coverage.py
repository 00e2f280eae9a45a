"""The calibration report states its identification and the coverage measured for how it was made."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import payment_log

from planner.calibration.calibrate import calibrate
from planner.calibration.report import MEASURED_COVERAGE, MEASURED_COVERAGE_HELD, report_text

STUDY = Path(__file__).resolve().parents[3] / "studies" / "results" / "calibration_coverage" / "report.md"


def _study() -> dict:
    """Regime -> (lowest, highest) coverage in the committed study's table."""
    out: dict = {}
    for line in STUDY.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 8 and re.fullmatch(r"\d+", cells[1]):
            lo, hi = out.get(cells[0], (1.0, 0.0))
            x = float(cells[3])
            out[cells[0]] = (min(lo, x), max(hi, x))
    return out


def _ranges(text: str) -> list:
    return [(float(a), float(b)) for a, b in re.findall(r"(\d\.\d+)-(\d\.\d+)", text)]


def test_the_stated_coverage_is_the_committed_study_s():
    study = _study()
    stated = _ranges(MEASURED_COVERAGE)
    regimes = ["all", "random", "released", "none"]
    assert len(stated) == len(regimes)
    for regime, (lo, hi) in zip(regimes, stated):
        assert study[regime] == pytest.approx((lo, hi), abs=0.006), regime
    (lo, hi), = _ranges(MEASURED_COVERAGE_HELD)
    assert study["held prior"] == pytest.approx((lo, hi), abs=0.006)


@pytest.mark.parametrize("estimate", [True, False], ids=["estimated", "held"])
def test_the_report_states_identification_and_the_coverage_of_its_own_kind(payment, estimate):
    sessions = payment_log(40, seed=9)
    for s in sessions[::2]:
        s["resolution"] = {}
    result = calibrate(payment, sessions, seed=1, estimate_prior=estimate)
    text = report_text(result, sessions)
    ident = next(line for line in text.splitlines() if line.startswith("**Identification:**"))
    assert ident.startswith(f"**Identification:** {result.identification.status}; 20 resolved sessions")
    coverage = next(line for line in text.splitlines() if line.startswith("**Coverage:**"))
    assert coverage == f"**Coverage:** {MEASURED_COVERAGE if estimate else MEASURED_COVERAGE_HELD}."
