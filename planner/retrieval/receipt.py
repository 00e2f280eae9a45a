"""Settlement receipts, and what a consumer with fewer entitlements may see of one.

:func:`settlement_receipt` records a traversal as JSON (schema
``planner/retrieval/data/settlement.schema.json``): the query and the reader's
filters, the caller, the rule, the losses and their thresholds, the budget
and what was spent, the identity of every calibrator used (id, method,
backend, index, index identity, sha256 of the judgments, date), what became of
every source, every candidate examined with its score, calibrated relevance,
gates, verdict and status, the stop's typed cause and the settlement.
:func:`read_settlement_receipt` reads one back with bounded work, validates
it against the schema, and re-derives its settlement from its trace
(:func:`receipt_tally` then :func:`~planner.retrieval.settlement.settle`): a
receipt whose settlement does not follow from what it records is refused.

Consumer views: a traversal for the consumer, then the allow-list of session receipts
---------------------------------------------------------------------------------------
A consumer's view must not depend on what is hidden from it: where the walk
stopped, how much budget was left, how many were delivered before the limit
all count hidden documents if they were walked. So a view is made from a
traversal *for* the consumer (``accepted_top_k(..., audience=entitlements)``):
every document and source the consumer may not see is left out by the source
before paging, and the walk, its budgets, its stop and its settlement are
those of the sources without them. :func:`consumer_view` then renders that
receipt the way :func:`planner.session.redact.redact_receipt` renders a
session receipt: a new document built from an allow-list, never a copy with
things deleted, *who may see what* decided by
:func:`planner.session.redact.may_see` (a document needs its access label's
entitlement; a source, its own). It refuses, on entitlements alone, a receipt
whose audience is not contained in the consumer's entitlements (or that had
no audience): such a walk may have counted documents the consumer may not
know of. A property test re-runs the traversal on sources that never held the
hidden documents and compares the whole view.

A view holds:

- the query, its filters, the rule, the losses and thresholds, the stop's
  cause and dimension;
- calibrators of visible sources;
- visible sources: name, status, the gate reasons (not the provider's own
  words on why it failed: free text, dropped as session views drop a tool's
  note);
- visible candidates: document, source, label, kind, language, date,
  verdict, status, reasons, withheld;
- the settlement, re-derived by :func:`~planner.retrieval.settlement.settle`
  from the rows, and counts by access label.

Left out: the caller's entitlements (beyond ``redacted_for``), the limit, the
budget and what was spent, the timing, rank, position and the raw score and
calibrated relevance: the scores of an index with corpus-wide statistics
(BM25's document frequencies and average length count every document of the
index, hidden ones included) are the one channel a traversal cannot close, so
the view carries the verdicts they led to, not the numbers.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

import jsonschema

from planner.model.caller import Caller
from planner.session.redact import may_see
from planner.retrieval.corpus import LABELS
from planner.retrieval.errors import SettlementReceiptError
from planner.io.jsonfile import read_json
from planner.retrieval.settlement import BUDGET, Tally, settle
from planner.retrieval.topk import ABSTAINED_, DELIVERED, OVER_CONTEXT

__all__ = ["SCHEMA", "VIEW_SCHEMA", "SCHEMA_VERSION", "settlement_receipt", "read_settlement_receipt",
           "validate_settlement_receipt", "receipt_tally", "consumer_view", "settlement_schema",
           "MAX_RECEIPT_BYTES"]

SCHEMA, VIEW_SCHEMA, SCHEMA_VERSION = "planner.settlement", "planner.settlement.view", 1
MAX_RECEIPT_BYTES = 16 * 2**20


def _reasons(reasons) -> list:
    return [r.text() for r in reasons]


def settlement_receipt(t) -> dict:
    """The JSON receipt of a traversal (:class:`planner.retrieval.topk.Traversal`).

    >>> from planner.retrieval.synthetic import starving_list
    >>> from planner.retrieval.topk import accepted_top_k
    >>> case = starving_list()
    >>> t = accepted_top_k(case.query, case.sources, case.calibrators, case.losses, limit=5, caller=case.caller,
    ...                    decision_date=case.date)
    >>> r = settlement_receipt(t)
    >>> r["settlement"]["kind"], r["settlement"]["withheld"], r["calibrators"][0]["method"]
    ('complete', 10, 'platt')
    """
    q = t.query
    withheld_by_label = {}
    for e in t.trace:
        if e.withheld:
            withheld_by_label[e.doc.label] = withheld_by_label.get(e.doc.label, 0) + 1
    settlement = t.settlement.to_json()
    settlement["withheld_by_label"] = withheld_by_label
    th = None
    if t.losses is not None:
        from planner.retrieval.acceptance import thresholds

        th = thresholds(t.losses).to_json()
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "query": {"id": q.id, "text": q.text,
                  "kinds": list(q.kinds) if q.kinds is not None else None,
                  "languages": list(q.languages) if q.languages is not None else None,
                  "max_age_days": q.max_age_days},
        "caller": {"entitlements": sorted(t.caller.entitlements), "purpose": t.caller.purpose,
                   "decision_date": t.decision_date.isoformat()},
        "audience": None if t.audience is None else sorted(t.audience),
        "rule": t.rule,
        "limit": t.limit,
        "losses": t.losses.to_json() if t.losses is not None else None,
        "thresholds": th,
        "budget": {"limits": t.budget.to_json(), "spent": dict(t.spent)},
        "cost_model": t.cost.to_json(),
        "calibrators": [dict(c) for c in t.calibrators],
        "sources": [{"name": s.name, "status": s.status, "reasons": _reasons(s.reasons), "why": s.why,
                     "examined": s.examined, "entitlement": s.entitlement} for s in t.sources],
        "trace": [{"n": e.n, "source": e.source, "rank": e.rank, "document": e.doc.id, "label": e.doc.label,
                   "kind": e.doc.kind, "language": e.doc.language, "date": e.doc.date.isoformat(),
                   "tokens": e.doc.tokens, "score": e.score, "p": e.p.p, "calibrator": e.p.calibrator,
                   "status": e.status, "verdict": e.verdict, "reasons": _reasons(e.reasons),
                   "withheld": e.withheld, "at_ms": e.at_ms} for e in t.trace],
        "delivered": list(t.delivered),
        "for_review": list(t.for_review),
        "stop": {"cause": t.cause, "dimension": t.dimension},
        "settlement": settlement,
        "timing": {"first_accept_ms": t.first_accept_ms, "settle_ms": float(t.spent["time_ms"]),
                   "wall_ms": t.wall_ms},
    }


@functools.lru_cache(maxsize=1)
def settlement_schema() -> dict:
    """The JSON Schema of settlement receipts."""
    text = (resources.files("planner.retrieval") / "data" / "settlement.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@functools.lru_cache(maxsize=1)
def _validator():
    # checked once: jsonschema.validate would re-check the schema itself on every call
    schema = settlement_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _path(err) -> str:
    parts = [str(p) for p in err.absolute_path]
    return "$" + "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in parts)


def receipt_tally(receipt: dict) -> Tally:
    """The :class:`~planner.retrieval.settlement.Tally` a receipt's trace, stop and sources record."""
    trace = receipt["trace"]
    stop = receipt["stop"]
    return Tally(cause=stop["cause"], dimension=stop["dimension"] if stop["cause"] == BUDGET else None,
                 delivered=sum(1 for e in trace if e["status"] == DELIVERED),
                 abstained=sum(1 for e in trace if e["status"] == ABSTAINED_),
                 withheld=sum(1 for e in trace if e["withheld"]),
                 over_context=sum(1 for e in trace if e["status"] == OVER_CONTEXT),
                 unavailable=[(s["name"], s["status"] == "refused") for s in receipt["sources"]
                              if s["status"] in ("unavailable", "refused")])


def validate_settlement_receipt(receipt) -> dict:
    """Check a receipt against the schema and its settlement against its trace; returns it.

    Raises :class:`SettlementReceiptError` naming the JSON path, or saying what does not follow.
    """
    try:
        error = jsonschema.exceptions.best_match(_validator().iter_errors(receipt))
        if error is not None:
            raise error
    except jsonschema.ValidationError as e:
        raise SettlementReceiptError(f"{_path(e)}: {e.message[:160]}") from None
    except RecursionError:
        raise SettlementReceiptError("$: nested too deeply") from None
    if receipt["stop"]["cause"] == BUDGET and receipt["stop"]["dimension"] is None:
        raise SettlementReceiptError("$.stop.dimension: a budget stop names its dimension")
    try:
        facts = receipt_tally(receipt)
    except ValueError as e:
        raise SettlementReceiptError(f"$.stop: {e}") from None
    derived = settle(facts)
    s = receipt["settlement"]
    if derived.kind != s["kind"]:
        raise SettlementReceiptError(f"$.settlement.kind: {s['kind']} recorded, but the trace settles as "
                                     f"{derived.kind}")
    delivered = [e["document"] for e in receipt["trace"] if e["status"] == DELIVERED]
    if delivered != receipt["delivered"]:
        raise SettlementReceiptError("$.delivered: not the trace's delivered documents")
    return receipt


def read_settlement_receipt(path) -> dict:
    """A settlement receipt file, read with bounded work and validated (one-line error otherwise)."""
    data = read_json(path, limit=MAX_RECEIPT_BYTES, error=SettlementReceiptError, what="settlement receipt")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SettlementReceiptError(f"{path}: not a settlement receipt (schema {SCHEMA})")
    try:
        return validate_settlement_receipt(data)
    except SettlementReceiptError as e:
        raise SettlementReceiptError(f"{path}: {e}") from None


class _Needs:
    """Duck-typed for :func:`planner.session.redact.may_see`: something that needs one entitlement (or none)."""

    def __init__(self, entitlement):
        self.entitlement = entitlement


def consumer_view(receipt: dict, entitlements) -> dict:
    """What a consumer holding `entitlements` may see of a settlement receipt (see the module docstring).

    >>> from planner.retrieval.synthetic import starving_list
    >>> from planner.retrieval.topk import accepted_top_k
    >>> case = starving_list()
    >>> def receipt_for(audience):
    ...     return settlement_receipt(accepted_top_k(case.query, case.sources, case.calibrators, case.losses,
    ...                                              limit=5, caller=case.caller, decision_date=case.date,
    ...                                              audience=audience))
    >>> v = consumer_view(receipt_for(["staff"]), ["staff"])
    >>> v["settlement"]["kind"], v["settlement"]["withheld"], "confidential" in json.dumps(v)
    ('complete', 0, False)
    >>> consumer_view(receipt_for(["staff", "confidential.read"]), ["staff", "confidential.read"])["settlement"]["withheld_by_label"]
    {'confidential': 10}
    """
    validate_settlement_receipt(receipt)
    held = Caller(entitlements=entitlements).entitlements
    audience = receipt.get("audience")
    # decided on entitlements alone, never on what the receipt holds (a refusal that depended on hidden rows
    # would itself tell of them)
    if audience is None or not set(audience) <= held:
        who = "no audience (every document walked)" if audience is None else \
            f"an audience holding {', '.join(audience) or 'nothing'}"
        raise SettlementReceiptError(
            f"the receipt's traversal ran for {who}: a view for a consumer holding {', '.join(sorted(held)) or 'nothing'} "
            "needs a traversal for that consumer (run the query with that audience)")
    src_ent = {s["name"]: s.get("entitlement") for s in receipt["sources"]}

    def source_visible(name) -> bool:
        return may_see(_Needs(src_ent.get(name)), held)

    def row_visible(e) -> bool:
        return source_visible(e["source"]) and may_see(_Needs(LABELS.get(e["label"], e["label"])), held)

    rows = [e for e in receipt["trace"] if row_visible(e)]
    sources = [s for s in receipt["sources"] if source_visible(s["name"])]
    view_receipt = {"trace": rows, "sources": sources, "stop": receipt["stop"]}
    settlement = settle(receipt_tally(view_receipt)).to_json()
    by_label = {}
    for e in rows:
        if e["withheld"]:
            by_label[e["label"]] = by_label.get(e["label"], 0) + 1
    settlement["withheld_by_label"] = by_label
    q = receipt["query"]
    return {
        "schema": VIEW_SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "redacted_for": sorted(held),
        "query": {"id": q["id"], "text": q["text"], "kinds": q["kinds"], "languages": q["languages"],
                  "max_age_days": q["max_age_days"]},
        "rule": receipt["rule"],
        "losses": receipt["losses"],
        "thresholds": receipt["thresholds"],
        "calibrators": [dict(c) for c in receipt["calibrators"] if source_visible(c["index"])],
        "sources": [{"name": s["name"], "status": s["status"], "reasons": list(s["reasons"])} for s in sources],
        "documents": [{"document": e["document"], "source": e["source"], "label": e["label"], "kind": e["kind"],
                       "language": e["language"], "date": e["date"], "verdict": e["verdict"],
                       "status": e["status"], "reasons": list(e["reasons"]), "withheld": e["withheld"]}
                      for e in rows],
        "delivered": [e["document"] for e in rows if e["status"] == DELIVERED],
        "for_review": [e["document"] for e in rows if e["status"] == ABSTAINED_],
        "stop": {"cause": receipt["stop"]["cause"], "dimension": receipt["stop"]["dimension"]},
        "settlement": settlement,
    }
