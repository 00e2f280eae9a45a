"""A real retriever in the loop (bm25s): index, calibrators refitted, queries end to end, the domain's likelihoods."""

from __future__ import annotations

import json

import pytest
import yaml

pytest.importorskip("bm25s")

import planner  # noqa: E402
from planner.retrieval.bm25 import BM25Index  # noqa: E402
from planner.retrieval.pipeline import Retrieval, evaluate, shipped_calibrators  # noqa: E402
from planner.retrieval.receipt import settlement_receipt, validate_settlement_receipt  # noqa: E402
from planner.retrieval.tool import DOMAIN_CALLER, OUTCOMES, SettlementTool, measure_likelihoods  # noqa: E402
from planner.retrieval.acceptance import Losses  # noqa: E402
from planner.model.caller import Caller  # noqa: E402


@pytest.fixture(scope="module")
def retrieval():
    return Retrieval()


@pytest.fixture(scope="module")
def cals():
    return shipped_calibrators()


def test_bm25_ranks_the_matching_documents_first(retrieval):
    ix = retrieval.indexes["policy_index"]
    ranked = ix.ranked("travel per-diem daily allowance")
    scores = [s for _, s in ranked]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    assert "per-diem" in ranked[0][0].text
    assert BM25Index("policy_index", retrieval.corpus.in_source("policy_index")).index_id == ix.index_id


def test_refitting_reproduces_the_shipped_calibrators(retrieval, cals):
    refit = retrieval.fit(date=cals.calibrators[0].date)
    assert [c.id for c in refit.calibrators] == [c.id for c in cals.calibrators]
    for c in cals.calibrators:
        assert c.index_id == retrieval.indexes[c.index].index_id


def test_a_query_end_to_end(retrieval, cals):
    q = retrieval.corpus.query("q041")
    t = retrieval.run(q, calibrators=cals, losses=Losses(c_fp=4, c_fn=3, c_r=1), limit=3, caller=DOMAIN_CALLER)
    assert t.settlement.kind == "withheld"
    r = validate_settlement_receipt(json.loads(json.dumps(settlement_receipt(t))))
    assert {c["id"] for c in r["calibrators"]} <= {c.id for c in cals.calibrators}
    assert all(e["calibrator"] in {c["id"] for c in r["calibrators"]} for e in r["trace"])
    out = evaluate(t, q.relevant, retrieval.relevant_eligible(q, DOMAIN_CALLER))
    assert out.delivered == 0 and out.false_inclusions == 0
    # with the entitlement, the same query delivers what was withheld
    t2 = retrieval.run(q, calibrators=cals, losses=Losses(c_fp=4, c_fn=3, c_r=1), limit=3,
                       caller=Caller(entitlements=["staff", "confidential.read"]))
    assert t2.delivered and set(t2.delivered) <= {e.doc.id for e in t.trace if e.withheld} | set(t2.delivered)


def test_the_domain_declares_the_measured_likelihoods(retrieval, cals):
    m = measure_likelihoods(retrieval, cals)
    planner.load_domain("policy_search")  # it loads: the rows sum to 1 as measured and rounded
    raw = yaml.safe_load((planner.DOMAINS / "policy_search.yaml").read_text())
    obs = raw["observations"]["policy_index_search"]
    assert tuple(obs["likelihood"]["available"]) == OUTCOMES
    assert obs["failure_rate"] == pytest.approx(m.failure_rate)
    for world, row in m.rows.items():
        assert obs["likelihood"][world] == pytest.approx(row), world
    total = sum(m.queries.values())
    assert raw["prior"]["policy_answer"] == pytest.approx({w: n / total for w, n in m.queries.items()})
    assert obs["cost"]["tokens"] == round(m.mean_scoring_tokens)
    assert obs["cost"]["latency_ms"] == round(m.mean_time_ms)


def test_the_planner_searches_and_escalates_on_withheld(retrieval, cals):
    tool = SettlementTool(retrieval=retrieval, query=retrieval.corpus.query("q041"), calibrators=cals)
    s = planner.Session(planner.load_domain("policy_search"), caller=Caller(entitlements=["staff"]))
    stop = s.run({"policy_index_search": tool})
    assert [st.outcome for st in s.steps] == ["withheld"]
    assert (stop.action, stop.reason) == ("escalate", "escalated")
    assert tool.receipts[0]["settlement"]["kind"] == "withheld"
    tool = SettlementTool(retrieval=retrieval, query=retrieval.corpus.query("q005"), calibrators=cals)
    s = planner.Session(planner.load_domain("policy_search"), caller=Caller(entitlements=["staff"]))
    assert s.run({"policy_index_search": tool}).action == "answer"
    tool = SettlementTool(retrieval=retrieval, query=retrieval.corpus.query("q005"), calibrators=cals,
                          down=("policy_index", "archive_index", "partner_index"))
    s = planner.Session(planner.load_domain("policy_search"), caller=Caller(entitlements=["staff"]))
    stop = s.run({"policy_index_search": tool})
    assert [st.outcome for st in s.steps] == ["unavailable"] and stop.action == "escalate"


@pytest.mark.slow
def test_the_committed_frontier_is_what_the_sweep_computes(retrieval, cals):
    import csv

    from studies.frontier import sweep

    root = planner.DOMAINS.resolve().parent.parent / "studies" / "results" / "frontier"
    meta = json.loads((root / "meta.json").read_text())
    assert meta["command"].startswith("planner accept frontier") or meta["command"].startswith("python3 bench/")
    assert meta["calibrators"] == [c.id for c in cals.calibrators]
    assert (root / "frontier.png").stat().st_size > 10_000
    committed = {(r["method"], float(r["ratio"]), int(r["limit"])): r
                 for r in csv.DictReader((root / "frontier.csv").open())}
    for row in sweep(retrieval, cals, ratios=(1.0,), ks=(5,), seed=meta["seed"]):
        c = committed[(row["method"], row["ratio"], row["limit"])]
        for key in ("total_cost", "precision", "coverage", "scoring_tokens", "settle_ms"):
            assert float(c[key]) == pytest.approx(row[key], rel=1e-5), (row["method"], key)
        assert int(c["n_withheld"]) == row["n_withheld"] and int(c["n_unavailable"]) == row["n_unavailable"]
