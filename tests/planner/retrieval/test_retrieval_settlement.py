"""Typed settlements: every kind reachable from a real traversal, distinct in receipts, and consumer views."""

from __future__ import annotations

import copy
import json

import pytest
import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

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
from planner.model.caller import Caller
from planner.retrieval.topk import QueryBudget, accepted_top_k, plain_top_k, postfiltered_top_k
from retrieval_cases import CALIBRATORS, ENTITLEMENTS, L, Q, STAFF, cases, src

HIGH, MID, LOW = 9.0, 5.0, 1.0  # calibrated relevance about 0.98, 0.5 (abstain), 0.02 (exclude)




def traverse(*sources, limit=2, budget=None, caller=STAFF, audience=None):
    return accepted_top_k(Q, sources, CALIBRATORS, L, limit=limit, caller=caller, budget=budget, decision_date=DATE,
                          audience=audience)


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
    source = src([(doc(f"s{i}", label="confidential"), HIGH - 0.1 * i) for i in range(3)] + [(doc("c"), LOW)])
    t = traverse(source)
    r = settlement_receipt(t)
    assert r["settlement"]["kind"] == "withheld" and r["settlement"]["withheld_by_label"] == {"confidential": 3}
    staff = consumer_view(settlement_receipt(traverse(source, audience=["staff"])), ["staff"])
    text = json.dumps(staff)
    assert staff["settlement"]["kind"] == "empty" and staff["settlement"]["withheld"] == 0
    assert "confidential" not in text and not any(f'"s{i}"' in text for i in range(3))
    cleared = consumer_view(settlement_receipt(traverse(source, audience=["staff", "confidential.read"])),
                            ["staff", "confidential.read"])
    assert cleared["settlement"]["kind"] == "withheld" and cleared["settlement"]["withheld_by_label"] == {
        "confidential": 3}


def _without_hidden(sources, consumer):
    """The sources as if every document and source `consumer` may not see had never existed."""
    sees = lambda thing: thing.entitlement is None or thing.entitlement in consumer  # noqa: E731
    return tuple(attrs.evolve(s, items=[(d, score) for d, score in s.items if sees(d)])
                 for s in sources if sees(s.spec))


def _consumers(case):
    held = sorted(case["caller"].entitlements)
    return (frozenset(), frozenset(["staff"]), frozenset(held[:1]), frozenset(held),
            frozenset(held) | {"confidential.read"}, frozenset(ENTITLEMENTS))


def _view(case, sources, consumer, rule):
    kw = dict(caller=case["caller"], budget=case["budget"], decision_date=DATE, audience=consumer)
    if rule == "accept":
        t = accepted_top_k(case["query"], sources, case["calibrators"], case["losses"], limit=case["limit"], **kw)
    elif rule == "plain":
        t = plain_top_k(case["query"], sources, case["calibrators"], k=case["limit"], **kw)
    else:
        t = postfiltered_top_k(case["query"], sources, case["calibrators"], k=case["limit"], **kw)
    return consumer_view(json.loads(json.dumps(settlement_receipt(t))), consumer)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(cases(), st.sampled_from(["accept", "plain", "postfilter"]))
def test_a_consumer_view_is_the_same_when_the_traversal_reruns_without_the_hidden_documents(case, rule):
    """Non-interference: the whole view (stop, rows, settlement, delivered set), budgets included."""
    for consumer in _consumers(case):
        assert _view(case, case["sources"], consumer, rule) == \
            _view(case, _without_hidden(case["sources"], consumer), consumer, rule)


def test_hidden_documents_would_change_the_view_of_a_traversal_that_walked_them():
    """Why a view needs its own traversal: the owner's walk stops at the limit on hidden documents."""
    hidden = [(doc(f"s{i}", label="confidential"), HIGH - 0.01 * i) for i in range(2)]
    shown = [(doc("a"), HIGH - 0.1), (doc("b"), HIGH - 0.2)]
    owner = traverse(src(hidden + shown), caller=Caller(entitlements=["staff", "confidential.read"]))
    assert owner.delivered == ("s0", "s1") and owner.cause == "limit"
    with pytest.raises(SettlementReceiptError, match="needs a traversal for that consumer"):
        consumer_view(settlement_receipt(owner), ["staff"])
    for_staff = accepted_top_k(Q, [src(hidden + shown)], CALIBRATORS, L, limit=2, decision_date=DATE,
                               caller=Caller(entitlements=["staff", "confidential.read"]), audience=["staff"])
    view = consumer_view(settlement_receipt(for_staff), ["staff"])
    assert view["delivered"] == ["a", "b"] and view["settlement"]["kind"] == "complete"
    # a consumer holding more than the audience may read the view; one holding less may not
    assert consumer_view(settlement_receipt(for_staff), ["staff", "hr.read"])["delivered"] == ["a", "b"]
    with pytest.raises(SettlementReceiptError, match="audience holding staff"):
        consumer_view(settlement_receipt(for_staff), [])


def test_a_source_that_cannot_filter_is_filtered_and_repaged_by_the_traversal():
    class Plain:
        def __init__(self, inner):
            self.spec, self.inner = inner.spec, inner

        def pages(self, query):
            return self.inner.pages(query)

    items = [(doc("s0", label="confidential"), HIGH), (doc("a"), HIGH - 0.1), (doc("s1", label="confidential"),
                                                                               HIGH - 0.2), (doc("b"), LOW)]
    kw = dict(limit=3, caller=STAFF, decision_date=DATE, audience=["staff"], budget=QueryBudget(time_ms=60.0))
    wrapped = accepted_top_k(Q, [Plain(src(items, page_size=1))], CALIBRATORS, L, **kw)
    native = accepted_top_k(Q, [src(items, page_size=1)], CALIBRATORS, L, **kw)
    assert consumer_view(settlement_receipt(wrapped), ["staff"]) == consumer_view(settlement_receipt(native),
                                                                                  ["staff"])


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
