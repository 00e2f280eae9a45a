"""Typed settlements: every kind reachable from a real traversal, distinct in receipts, and consumer views."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given

from planner.retrieval.errors import SettlementReceiptError
from planner.retrieval.receipt import (
    consumer_view,
    read_settlement_receipt,
    receipt_tally,
    settlement_receipt,
    validate_settlement_receipt,
)
from planner.retrieval.settlement import BUDGET, EXHAUSTED, LIMIT, SETTLEMENTS, Tally, settle
from planner.retrieval.synthetic import DATE, doc
from planner.retrieval.topk import QueryBudget, accepted_top_k
from retrieval_cases import CALIBRATORS, L, Q, STAFF, cases, src

HIGH, MID, LOW = 9.0, 5.0, 1.0  # calibrated relevance about 0.98, 0.5 (abstain), 0.02 (exclude)




def traverse(*sources, limit=2, budget=None, caller=STAFF):
    return accepted_top_k(Q, sources, CALIBRATORS, L, limit=limit, caller=caller, budget=budget, decision_date=DATE)


CASES = {
    "complete": lambda: traverse(src([(doc("a"), HIGH), (doc("b"), HIGH - 0.1), (doc("c"), LOW)])),
    "partial": lambda: traverse(src([(doc("a"), HIGH), (doc("c"), LOW)])),
    "empty": lambda: traverse(src([(doc("c"), LOW)])),
    "abstained": lambda: traverse(src([(doc("m"), MID), (doc("c"), LOW)])),
    "over_budget": lambda: traverse(src([(doc("a", tokens=500), HIGH), (doc("c"), LOW)]),
                                    budget=QueryBudget(context_tokens=100)),
    "unavailable": lambda: traverse(src([(doc("a"), HIGH)]), src([(doc("x", source="archive_index"), HIGH)],
                                                                 name="archive_index", fail_at_page=0)),
    "withheld": lambda: traverse(src([(doc("s", label="confidential"), HIGH), (doc("c"), LOW)])),
}


def test_every_settlement_kind_is_reachable_and_distinct_in_receipts():
    assert set(CASES) == set(SETTLEMENTS)
    kinds = {}
    for kind, make in CASES.items():
        r = json.loads(json.dumps(settlement_receipt(make())))
        validate_settlement_receipt(r)
        assert r["settlement"]["kind"] == kind
        assert settle(receipt_tally(r)).kind == kind  # re-derived from what the receipt records
        kinds[kind] = r["settlement"]
    assert len({json.dumps(s, sort_keys=True) for s in kinds.values()}) == len(SETTLEMENTS)
    assert kinds["over_budget"]["dimension"] == "context_tokens"
    assert kinds["unavailable"]["sources"] == ["archive_index"]
    assert kinds["withheld"]["withheld_by_label"] == {"confidential": 1}


def test_a_query_budget_settles_over_budget_with_its_dimension():
    t = traverse(src([(doc(f"d{i}"), HIGH - 0.01 * i) for i in range(10)]), limit=10,
                 budget=QueryBudget(candidates=3))
    assert (t.settlement.kind, t.settlement.dimension) == ("over_budget", "candidates")


def test_a_refusal_is_unavailable_and_says_refused():
    t = traverse(src([(doc("a"), HIGH)], fail_at_page=0, refused=True))
    assert t.settlement.kind == "unavailable" and t.settlement.refused == ("policy_index",)
    assert t.sources[0].status == "refused"


@pytest.mark.parametrize("facts, kind", [
    (Tally(cause=LIMIT, delivered=3, unavailable=[("x", False)]), "complete"),
    (Tally(cause=EXHAUSTED, delivered=1, unavailable=[("x", False)]), "unavailable"),
    (Tally(cause=BUDGET, dimension="time_ms", withheld=2), "over_budget"),
    (Tally(cause=EXHAUSTED, delivered=1, over_context=1), "over_budget"),
    (Tally(cause=EXHAUSTED, delivered=1, withheld=4, abstained=2), "partial"),
    (Tally(cause=EXHAUSTED, withheld=1, abstained=2), "withheld"),
    (Tally(cause=EXHAUSTED, abstained=2), "abstained"),
    (Tally(cause=EXHAUSTED), "empty"),
    (Tally(cause=LIMIT), "empty"),  # a consumer's view of a complete result whose documents it may not see
])
def test_the_precedence(facts, kind):
    assert settle(facts).kind == kind


def test_facts_refuse_a_dimension_that_does_not_go_with_the_cause():
    with pytest.raises(ValueError):
        Tally(cause=BUDGET)
    with pytest.raises(ValueError):
        Tally(cause=EXHAUSTED, dimension="candidates")


def test_three_confidential_matches_never_reach_a_consumer_who_may_not_know_them():
    t = traverse(src([(doc(f"s{i}", label="confidential"), HIGH - 0.1 * i) for i in range(3)] + [(doc("c"), LOW)]))
    r = settlement_receipt(t)
    assert r["settlement"]["kind"] == "withheld" and r["settlement"]["withheld_by_label"] == {"confidential": 3}
    staff = consumer_view(r, ["staff"])
    text = json.dumps(staff)
    assert staff["settlement"]["kind"] == "empty" and staff["settlement"]["withheld"] == 0
    assert "confidential" not in text and not any(f'"s{i}"' in text for i in range(3))
    cleared = consumer_view(r, ["staff", "confidential.read"])
    assert cleared["settlement"]["kind"] == "withheld" and cleared["settlement"]["withheld_by_label"] == {
        "confidential": 3}


def _strip(receipt, consumer):
    """The receipt as if every document and source the consumer may not see had never existed."""
    from planner.retrieval.corpus import LABELS

    r = copy.deepcopy(receipt)
    ent = {s["name"]: s["entitlement"] for s in r["sources"]}
    seen = lambda e: e is None or e in consumer  # noqa: E731
    r["sources"] = [s for s in r["sources"] if seen(s["entitlement"])]
    r["trace"] = [e for e in r["trace"] if seen(ent[e["source"]]) and seen(LABELS[e["label"]])]
    r["calibrators"] = [c for c in r["calibrators"] if seen(ent.get(c["index"]))]
    r["delivered"] = [e["document"] for e in r["trace"] if e["status"] == "delivered"]
    r["settlement"].update(kind=settle(receipt_tally(r)).kind)
    return r


@pytest.mark.slow
@given(cases())
def test_a_consumer_view_is_the_same_whether_or_not_the_hidden_documents_existed(case):
    t = accepted_top_k(case["query"], case["sources"], case["calibrators"], case["losses"], limit=case["limit"],
                       caller=case["caller"], budget=case["budget"], decision_date=DATE)
    receipt = json.loads(json.dumps(settlement_receipt(t)))
    for consumer in (frozenset(), frozenset(["staff"]), case["caller"].entitlements):
        assert consumer_view(receipt, consumer) == consumer_view(_strip(receipt, consumer), consumer)


def test_a_tampered_or_malformed_receipt_is_refused(tmp_path):
    r = settlement_receipt(CASES["withheld"]())
    bad = copy.deepcopy(r)
    bad["settlement"]["kind"] = "empty"
    with pytest.raises(SettlementReceiptError, match="trace settles as withheld"):
        validate_settlement_receipt(bad)
    bad = copy.deepcopy(r)
    bad["trace"][0]["p"] = 7
    with pytest.raises(SettlementReceiptError, match=r"\$\.trace\[0\]\.p"):
        validate_settlement_receipt(bad)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(r))
    assert read_settlement_receipt(path)["settlement"]["kind"] == "withheld"
    for text, match in (("{", "JSON syntax error"), ("[]", "not a settlement receipt"), ("\xff", "not UTF-8|JSON")):
        path.write_bytes(text.encode("latin-1"))
        with pytest.raises(SettlementReceiptError, match=match):
            read_settlement_receipt(path)
    with pytest.raises(SettlementReceiptError, match="no such file"):
        read_settlement_receipt(tmp_path / "missing.json")
