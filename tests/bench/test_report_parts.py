"""The depth-study report's parts: the committed report is rendered again from its CSVs, byte for byte.

``render_report`` is assembled from one helper per section and ``summarise``
from one helper per topic; these tests pin the assembled text, so that a change
to a part which alters the report shows up as a diff against
``bench/results/depth-edition1/report.md``.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from planner.study import report
from planner.study.report import read_csv, render_report, summarise

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results" / "depth-edition1"

#: How the committed report was made: its command line and metadata line, and the plots it shows.
COMMAND = "planner bench depth --out bench/results/depth --workers 2"
def _committed_meta() -> dict:
    """The run's metadata line of the committed report (``wall time: 87 s, workers: 2, ...``), as render_report takes it."""
    line = next(x for x in (RESULTS / "report.md").read_text(encoding="utf-8").splitlines()
                if x.startswith("wall time: "))
    meta = {}
    for part in line.split(", "):
        k, _, v = part.partition(": ")
        meta[k] = int(v) if v.isdigit() else v
    return meta


META = _committed_meta()
PLOTS = ["loss_vs_latency.png", "gain_vs_prereq_depth.png", "gain_vs_asymmetry.png", "regime_map.png"]

#: The report's sections, in order.
HEADINGS = [
    "Finding",
    "Expected total loss by family (mean over cases; exact)",
    "Regime map",
    "Dependency rule against lookahead",
    "Is deeper better? Receding-horizon lookahead is not monotone",
    "Homogeneous exact lookup (negative control)",
    "Safety audit (independent of the session's gates)",
    "Stop quality, harm and spend (means by family)",
    "Planning latency per decision (ms, JIT warmed; mean over cases of the probability-weighted median / p95)",
    "Monte Carlo family",
    "Peer: pomdp_py POUCT at equal planning time",
    "Plots",
    "Files",
]


def _committed():
    return read_csv(RESULTS / "depth.csv"), read_csv(RESULTS / "peer.csv")


def test_committed_report_is_rendered_again_byte_for_byte():
    rows, peer_rows = _committed()
    text = render_report(rows, peer_rows, command=COMMAND, meta=META, plots=PLOTS, plot_note=None)
    assert text == (RESULTS / "report.md").read_text(encoding="utf-8")


def test_sections_come_once_each_in_order():
    rows, peer_rows = _committed()
    text = render_report(rows, peer_rows, command=COMMAND, meta=META, plots=PLOTS, plot_note=None)
    assert re.findall(r"^## (.*)$", text, flags=re.M) == HEADINGS


def test_without_exact_lookup_the_control_is_an_empty_section():
    rows, _ = _committed()
    rows = [r for r in rows if r["family"] != "exact_lookup"]
    s = summarise(rows)
    assert not any(k.startswith("exact_") for k in s)
    assert report._exact_lookup_section(s) == ["## Homogeneous exact lookup (negative control)", "", ""]


def test_asymmetry_bins_take_the_top_generated_value():
    # the generated asymmetries reach 100: it belongs to the top bin, not outside every bin
    gains = [{"asym": a, "J_one-step": 1.0} | {f"J_{p}": 0.5 for p in report._GAIN_POLICIES}
             for a in (1.0, 2.99, 3.0, 100.0)]
    by = report._gain_by_asymmetry(gains)
    assert {k: v["n"] for k, v in by.items()} == {"1-3": 2, "3-10": 1, "30-100": 1}
    assert all(math.isclose(v[p], 0.5) for v in by.values() for p in report._GAIN_POLICIES)
