"""ACCEPTED-TOP-K: the starving list, the gates during traversal, budgets, order and ties, and its invariants."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given

from planner.gates.admission import ENTITLEMENT
from planner.model.caller import Caller
from planner.retrieval.acceptance import Losses
from planner.retrieval.calibration import CalibratorSet
from planner.retrieval.corpus import Query, SourceSpec
from planner.retrieval.errors import RetrievalError, UncalibratedScoreError
from planner.retrieval.receipt import consumer_view, settlement_receipt, validate_settlement_receipt
from planner.retrieval.synthetic import DATE, ListSource, doc, starving_list, synthetic_calibrator
from planner.retrieval.topk import (
    DELIVERED,
    REJECTED,
    QueryBudget,
    accepted_top_k,
    candidate_reasons,
    plain_top_k,
    postfiltered_top_k,
)
from retrieval_cases import CALIBRATORS, L, Q, STAFF, cases, src





def run(items, *, losses=L, limit=5, caller=STAFF, budget=None, sources=None):
    return accepted_top_k(Q, sources or (src(items),), CALIBRATORS, losses, limit=limit, caller=caller,
                          budget=budget, decision_date=DATE)


def test_postfiltering_returns_zero_where_accepted_top_k_returns_five():
    case = starving_list()
    kw = dict(caller=case.caller, decision_date=case.date)
    post = postfiltered_top_k(case.query, case.sources, case.calibrators, k=10, **kw)
    acc = accepted_top_k(case.query, case.sources, case.calibrators, case.losses, limit=5, **kw)
    assert post.delivered == ()
    assert post.examined == 10 and all(e.status == REJECTED for e in post.trace)
    assert acc.delivered == ("e01", "e02", "e03", "e04", "e05")
    assert acc.settlement.kind == "complete" and acc.cause == "limit"
    # the ten ineligible high scorers were examined, counted as withheld, and neither occupied the limit nor stopped it
    assert [e.doc.id for e in acc.trace[:10]] == [f"d{i:02d}" for i in range(1, 11)]
    assert acc.settlement.facts.withheld == 10
    assert all(e.reasons[0].gate == ENTITLEMENT for e in acc.trace[:10])


def test_the_gates_during_traversal_use_the_observation_vocabulary():
    q = Query(id="g", text="x", split="test", kinds=("policy",), languages=("en",), max_age_days=100)
    d = doc("d", label="confidential", kind="memo", language="de", date=DATE.replace(year=2020))
    texts = [r.text() for r in candidate_reasons(d, q, STAFF, DATE)]
    assert texts == ["permission denied", "stale for this decision", "precondition unmet: kind in (policy)",
                     "precondition unmet: language in (en)"]
    assert candidate_reasons(doc("ok", date=DATE), q, Caller(), DATE) == ()


def test_a_source_the_caller_may_not_query_is_never_asked():
    calls = []

    class Spy(ListSource):
        def pages(self, query):
            calls.append(self.spec.name)
            return super().pages(query)

    hr = Spy(spec=SourceSpec(name="hr_index", entitlement="hr.read"), items=[(doc("h1", source="hr_index"), 9.0)])
    t = run([(doc("p1"), 8.0)], sources=(src([(doc("p1"), 8.0)]), hr))
    assert calls == []
    assert t.sources[1].status == "rejected" and [r.text() for r in t.sources[1].reasons] == ["permission denied"]
    assert "h1" not in {e.doc.id for e in t.trace}


def test_an_index_without_a_calibrator_is_refused_before_any_work():
    only_policy = CalibratorSet.of([synthetic_calibrator("policy_index")])
    with pytest.raises(UncalibratedScoreError, match="archive_index"):
        accepted_top_k(Q, (src([(doc("p"), 9.0)]), src([(doc("a"), 9.0)], name="archive_index")), only_policy, L,
                       limit=1, decision_date=DATE)


def test_a_source_out_of_score_order_is_an_error():
    with pytest.raises(RetrievalError, match="out of order"):
        run([(doc("a"), 5.0), (doc("b"), 6.0)])


def test_sources_merge_by_calibrated_probability_ties_in_declaration_order():
    a = src([(doc("a1"), 9.0), (doc("a2"), 6.0)], name="policy_index")
    b = src([(doc("b1", source="archive_index"), 9.0), (doc("b2", source="archive_index"), 7.0)],
            name="archive_index")
    same = CalibratorSet.of([synthetic_calibrator("policy_index"), synthetic_calibrator("archive_index")])
    t = accepted_top_k(Q, (a, b), same, Losses(c_fp=1, c_fn=1), limit=4, decision_date=DATE)
    assert [e.doc.id for e in t.trace][:3] == ["a1", "b1", "b2"]  # equal p: the source declared first
    t2 = accepted_top_k(Q, (b, a), same, Losses(c_fp=1, c_fn=1), limit=4, decision_date=DATE)
    assert [e.doc.id for e in t2.trace][:2] == ["b1", "a1"]


def test_stops_below_the_threshold_without_walking_the_tail():
    items = [(doc(f"d{i}"), 9.0 - i) for i in range(9)]  # p falls from ~0.98 to ~0.02
    t = run(items, limit=20)
    assert t.cause == "below_threshold" and t.trace[-1].verdict == "exclude"
    assert t.examined < len(items)
    assert t.settlement.kind == "partial"


def test_budgets_are_hard_limits():
    items = [(doc(f"d{i}", tokens=40), 9.5 - 0.01 * i) for i in range(30)]
    t = run(items, limit=30, budget=QueryBudget(candidates=7))
    assert t.examined == 7 and t.cause == "budget" and t.dimension == "candidates"
    assert t.settlement.kind == "over_budget" and t.settlement.dimension == "candidates"
    t = run(items, limit=30, budget=QueryBudget(scoring_tokens=100))
    assert t.spent["scoring_tokens"] <= 100 and t.dimension == "scoring_tokens"
    t = run(items, limit=30, budget=QueryBudget(time_ms=25.0))
    assert t.spent["time_ms"] <= 25.0 and t.dimension == "time_ms"
    t = run(items, limit=3, budget=QueryBudget(context_tokens=100))
    assert t.spent["context_tokens"] <= 100 and len(t.delivered) == 2
    # the walk goes on past an include that does not fit (a shorter one might), finds none: relevant evidence
    # was found over the context budget
    assert t.settlement.kind == "over_budget" and t.settlement.dimension == "context_tokens"


def test_an_include_that_does_not_fit_is_counted_and_a_shorter_one_delivered():
    items = [(doc("long", tokens=300), 9.5), (doc("short", tokens=20), 9.4)]
    t = run(items, limit=1, budget=QueryBudget(context_tokens=100))
    assert [e.status for e in t.trace] == ["over_context", "delivered"] and t.delivered == ("short",)
    assert t.trace[0].reasons[0].text() == "budget exceeded: context_tokens"


# --------------------------------------------------------------------------
# invariants over random ranked lists, sources, callers, losses and budgets


def _eligible(e, case) -> bool:
    return not candidate_reasons(e.doc, case["query"], case["caller"], DATE)


@pytest.mark.slow
@given(cases())
def test_an_ineligible_candidate_is_never_accepted_nor_counted(case):
    t = accepted_top_k(case["query"], case["sources"], case["calibrators"], case["losses"], limit=case["limit"],
                       caller=case["caller"], budget=case["budget"], decision_date=DATE)
    for e in t.trace:
        if not _eligible(e, case):
            assert e.status == REJECTED and e.verdict is None and e.tokens == 0
        else:
            assert e.status != REJECTED
    assert len(t.delivered) <= case["limit"]
    assert t.settlement.facts.delivered == len(t.delivered)
    # the walk is in non-increasing calibrated relevance
    ps = [e.p.p for e in t.trace]
    assert all(a >= b - 1e-12 for a, b in zip(ps, ps[1:]))
    # hard limits hold
    for dim in ("candidates", "scoring_tokens", "time_ms", "context_tokens"):
        lim = getattr(case["budget"], dim)
        assert lim is None or t.spent[dim] <= lim + 1e-9
    validate_settlement_receipt(json.loads(json.dumps(settlement_receipt(t))))


@given(cases())
def test_removing_every_ineligible_candidate_changes_nothing_delivered(case):
    """Ineligible candidates neither occupy the limit nor move the threshold (no candidates or time budget)."""
    budget = attrs.evolve(case["budget"], candidates=None, time_ms=None)
    kw = dict(limit=case["limit"], caller=case["caller"], budget=budget, decision_date=DATE)
    t = accepted_top_k(case["query"], case["sources"], case["calibrators"], case["losses"], **kw)
    if t.settlement.kind == "unavailable":  # a failing page falls elsewhere once the list is shorter
        return
    kept = tuple(attrs.evolve(s, items=[(d, sc) for d, sc in s.items
                                        if not candidate_reasons(d, case["query"], case["caller"], DATE)],
                              fail_at_page=None)
                 for s in case["sources"])
    if any(s.fail_at_page is not None for s in case["sources"]):
        return
    t2 = accepted_top_k(case["query"], kept, case["calibrators"], case["losses"], **kw)
    assert t2.delivered == t.delivered
    # the same includes and abstentions; only the candidate that ends the walk below the threshold may differ
    # (an ineligible one there ends it where the next, eligible and no more relevant, would have)
    judged = lambda tr: [(e.doc.id, e.verdict) for e in tr.trace if e.verdict not in (None, "exclude")]  # noqa: E731
    assert judged(t2) == judged(t)
    assert t2.settlement.facts.abstained == t.settlement.facts.abstained


@given(cases())
def test_plain_and_postfiltered_top_k_deliver_only_eligible_candidates(case):
    for fn in (plain_top_k, postfiltered_top_k):
        t = fn(case["query"], case["sources"], case["calibrators"], k=case["limit"], caller=case["caller"],
               decision_date=DATE)
        assert all(_eligible(e, case) for e in t.trace if e.status == DELIVERED)
        assert len(t.delivered) <= case["limit"]
    post = postfiltered_top_k(case["query"], case["sources"], case["calibrators"], k=case["limit"],
                              caller=case["caller"], decision_date=DATE)
    assert post.examined <= case["limit"]


@pytest.mark.slow
@given(cases())
def test_a_consumer_never_sees_a_document_it_may_not_know(case):
    consumer = Caller(entitlements=sorted(case["caller"].entitlements)[:1]).entitlements
    full = accepted_top_k(case["query"], case["sources"], case["calibrators"], case["losses"], limit=case["limit"],
                          caller=case["caller"], budget=case["budget"], decision_date=DATE)
    t = accepted_top_k(case["query"], case["sources"], case["calibrators"], case["losses"], limit=case["limit"],
                       caller=case["caller"], budget=case["budget"], decision_date=DATE, audience=consumer)
    receipt = settlement_receipt(t)
    view = json.dumps(consumer_view(receipt, consumer))
    for e in full.trace + t.trace:
        src_ent = next(s.spec.entitlement for s in case["sources"] if s.spec.name == e.source)
        visible = (e.doc.entitlement is None or e.doc.entitlement in consumer) and \
            (src_ent is None or src_ent in consumer)
        if not visible:
            assert f'"{e.doc.id}"' not in view
    for s in case["sources"]:
        if s.spec.entitlement is not None and s.spec.entitlement not in consumer:
            assert s.spec.name not in view
