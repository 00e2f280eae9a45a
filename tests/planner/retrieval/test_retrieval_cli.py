"""``planner accept ...`` as a stranger runs it: the settlement and its receipt, views, and hostile input."""

from __future__ import annotations

import json
import sys

import pytest

from planner.cli import main



def bm25s_or_skip():
    pytest.importorskip("bm25s")


def run(capsys, *argv):
    try:
        code = main(["accept", *argv])
    except SystemExit as e:  # argparse's own usage errors (one line, status 2, from planner.cli.common.Parser)
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, out, err):
    assert code == 2, (code, out, err)
    lines = [x for x in err.splitlines() if x.startswith("planner: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_query_prints_its_settlement_and_receipt(capsys, tmp_path):
    bm25s_or_skip()
    receipt = tmp_path / "r.json"
    code, out, _ = run(capsys, "query", "q041", "--entitlement", "staff", "--receipt", str(receipt))
    assert code == 0
    assert "settlement: withheld: nothing delivered; 2 the policy would include are behind an access boundary " \
           "(confidential 2)" in out
    assert "calibrator policy_index: cal-" in out and "hr_index rejected: permission denied" in out
    assert "exclude p < 0.333 <= abstain < 0.750 <= include" in out
    data = json.loads(receipt.read_text())
    assert data["settlement"]["kind"] == "withheld"
    # the owner's receipt walked documents a staff consumer may not see: no view is made from it
    code, _, err = run(capsys, "redact", str(receipt), "--entitlement", "staff")
    assert code == 2 and "needs a traversal for that consumer" in err and "Traceback" not in err
    code, out, _ = run(capsys, "query", "q041", "--entitlement", "staff", "--view", "--consumer", "staff",
                       "--receipt", str(receipt))
    assert code == 0 and "settlement: abstained" in out and "confidential" not in out
    code, out, _ = run(capsys, "redact", str(receipt), "--entitlement", "staff")
    assert code == 0 and "settlement: abstained" in out and "confidential" not in out
    code, out, _ = run(capsys, "query", "q041", "--entitlement", "staff", "--view", "--consumer", "staff",
                       "--consumer", "confidential.read", "--json")
    assert json.loads(out)["settlement"]["kind"] == "withheld"
    code, out, _ = run(capsys, "query", "q041", "--entitlement", "staff", "--json")
    assert json.loads(out)["settlement"]["kind"] == "withheld"


def test_rules_down_sources_and_ad_hoc_text(capsys):
    bm25s_or_skip()
    code, out, _ = run(capsys, "query", "q005", "--entitlement", "staff", "--down", "partner_index", "--down",
                       "policy_index")
    assert code == 0 and "settlement: unavailable: policy_index, partner_index did not serve the query" in out
    code, out, _ = run(capsys, "query", "q005", "--entitlement", "staff", "--rule", "postfilter", "--limit", "2")
    assert code == 0 and "post-filtered top-k (anti-pattern)" in out
    code, out, _ = run(capsys, "query", "--text", "laptop stolen theft", "--entitlement", "staff", "--kind", "policy")
    assert code == 0 and "query adhoc: 'laptop stolen theft'  (kinds policy)" in out
    code, out, _ = run(capsys, "query", "q005", "--view", "--entitlement", "staff", "--consumer", "staff")
    assert code == 0 and "for a consumer holding: staff" in out


@pytest.mark.parametrize("argv, message", [
    (["query", "q999"], "unknown query 'q999'"),
    (["query"], "give a query id"),
    (["query", "q001", "--text", "x"], "not both"),
    (["query", "--text", "  "], "--text"),
    (["query", "q001", "--kind", "memo"], "go with --text"),
    (["query", "q001", "--limit", "0"], "--limit 0"),
    (["query", "q001", "--limit", "x"], "invalid int value"),
    (["query", "q001", "--c-fp", "-1"], "C_FP: must be a finite number >= 0"),
    (["query", "q001", "--c-fp", "nan"], "C_FP"),
    (["query", "q001", "--c-fp", "0", "--c-fn", "0"], "C_FP + C_FN must be > 0"),
    (["query", "q001", "--max-candidates", "-3"], "candidates: must be a finite number >= 0"),
    (["query", "q001", "--down", "nowhere"], "unknown source 'nowhere'"),
    (["query", "q001", "--refuse-after", "policy_index=x"], "not a whole number of pages"),
    (["query", "q001", "--refuse-after", "policy_index"], "expected NAME=VALUE"),
    (["query", "q001", "--decision-date", "yesterday"], "not an ISO date"),
    (["query", "q001", "--corpus", "/nonexistent/c.json"], "no such file"),
    (["query", "q001", "--calibrators", "/nonexistent/c.json"], "no such file"),
    (["query", "q001", "--consumer", "staff"], "--consumer goes with --view"),
    (["query", "q001", "--limit", "1", "--limit", "2"], "given twice"),
    (["redact", "/nonexistent/r.json"], "no such file"),
    (["calibrate", "--bins", "0"], "--bins 0"),
    (["calibrate", "--date", "soon"], "not an ISO date"),
    (["postfilter", "--s", "2"], "--s 2"),
    (["postfilter", "--draws", "0"], "--draws 0"),
    (["plan", "q999"], "unknown query 'q999'"),
    (["plan", "q001", "--domain", "payment_release"], "has no observation policy_index_search"),
    (["corpus", "--out", "/nonexistent/dir/c.json"], "does not exist"),
    ([], "give an accept command"),
])
def test_hostile_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    line = one_line_error(code, out, err)
    assert message in line, line


def test_a_file_that_is_not_a_receipt(capsys, tmp_path):
    p = tmp_path / "r.json"
    p.write_text('{"schema": "planner.settlement", "schema_version": 1}')
    line = one_line_error(*run(capsys, "redact", str(p)))
    assert "$: " in line and "required" in line
    p.write_text("[1, 2")
    assert "JSON syntax error" in one_line_error(*run(capsys, "redact", str(p)))


def test_without_bm25s_one_line_names_the_extra(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "bm25s", None)  # import bm25s now raises ImportError
    line = one_line_error(*run(capsys, "query", "q001"))
    assert "needs the optional package bm25s" in line and "evidence-planner[retrieval]" in line


def test_postfilter_prints_the_binomial_and_the_starving_list(capsys):
    code, out, _ = run(capsys, "postfilter", "--draws", "300")
    assert code == 0
    assert "Binomial(20, 0.15) expects 3.000 survivors" in out and "within" in out
    assert "post-filtered top-10 delivers 0" in out and "ACCEPTED-TOP-K (limit 5) delivers 5 (complete" in out


def test_plan_escalates_on_withheld(capsys):
    bm25s_or_skip()
    code, out, _ = run(capsys, "plan", "q041")
    assert code == 0
    assert "-> acquire policy_index_search: observed withheld" in out and "stop: ESCALATE" in out
    assert "settlement: withheld" in out


def test_calibrate_writes_what_reads_back(capsys, tmp_path):
    bm25s_or_skip()
    out_file = tmp_path / "cal.json"
    code, out, _ = run(capsys, "calibrate", "--out", str(out_file), "--date", "2026-12-01")
    assert code == 0 and "policy_index on test judgments" in out and "kind policy" in out
    code, out, _ = run(capsys, "query", "q041", "--entitlement", "staff", "--calibrators", str(out_file))
    assert code == 0 and "settlement: withheld" in out
    code, out, _ = run(capsys, "calibrate", "--method", "platt", "--stratum", "label", "--json")
    rep = json.loads(out)
    assert {c["method"] for c in rep["calibrators"]} == {"platt"}
    assert set(rep["reliability"]["policy_index"]["test"]["strata"]) <= {"public", "internal", "confidential",
                                                                         "restricted"}
