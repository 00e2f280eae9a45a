"""Builders shared by the retrieval tests: hypothesis strategies for ranked lists, sources and callers."""

from __future__ import annotations

import datetime as _dt

from hypothesis import strategies as st

from planner.model.caller import Caller
from planner.retrieval.acceptance import Losses
from planner.retrieval.calibration import CalibratorSet
from planner.retrieval.corpus import LABELS, Query, SourceSpec
from planner.retrieval.synthetic import DATE, ListSource, doc, synthetic_calibrator
from planner.retrieval.topk import QueryBudget

SOURCE_NAMES = ("policy_index", "archive_index", "hr_index")
KINDS = ("policy", "memo", "email")
ENTITLEMENTS = ("staff", "confidential.read", "legal.restricted", "hr.read")
CALIBRATORS = CalibratorSet.of([synthetic_calibrator(n, seed=i) for i, n in enumerate(SOURCE_NAMES)])
#: The hand-made cases' query, losses (C_FP 4, C_FN 3, C_R 1) and caller (staff).
Q = Query(id="t", text="four words of query", split="test")
L = Losses(c_fp=4, c_fn=3, c_r=1)
STAFF = Caller(entitlements=["staff"])


def src(items, name="policy_index", page_size=10, **kw):
    """A ranked list served as one source."""
    return ListSource(spec=SourceSpec(name=name, page_size=page_size), items=items, **kw)


@st.composite
def documents(draw, source: str, n: int, prefix: str):
    """`n` documents of one source, served in falling score order."""
    out = []
    score = draw(st.floats(8.0, 12.0))
    for i in range(n):
        score -= draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))  # ties included
        d = doc(f"{prefix}{i:03d}", source=source, label=draw(st.sampled_from(tuple(LABELS))),
                kind=draw(st.sampled_from(KINDS)), language=draw(st.sampled_from(("en", "de"))),
                date=DATE - _dt.timedelta(days=draw(st.integers(0, 4000))), tokens=draw(st.integers(5, 80)))
        out.append((d, score))
    return out


@st.composite
def cases(draw, max_docs: int = 25):
    """A query, one to three sources (maybe failing), a caller, losses, a limit and a budget."""
    n_sources = draw(st.integers(1, 3))
    sources = []
    for j in range(n_sources):
        name = SOURCE_NAMES[j]
        items = draw(documents(name, draw(st.integers(0, max_docs)), prefix=f"s{j}d"))
        ent = draw(st.sampled_from([None, None, "hr.read"]))
        fail = draw(st.sampled_from([None, None, None, 0, 1, 2]))
        sources.append(ListSource(spec=SourceSpec(name=name, entitlement=ent, page_size=draw(st.integers(1, 6)),
                                                   page_ms=draw(st.sampled_from([5.0, 20.0]))),
                                  items=items, fail_at_page=fail, refused=draw(st.booleans())))
    caller = Caller(entitlements=draw(st.sets(st.sampled_from(ENTITLEMENTS))))
    query = Query(id="prop", text="a query of five words", split="test",
                  kinds=draw(st.sampled_from([None, ("policy", "memo")])),
                  languages=draw(st.sampled_from([None, ("en",)])),
                  max_age_days=draw(st.sampled_from([None, 3000])))
    c_fp = draw(st.sampled_from([0.5, 1.0, 4.0]))
    c_fn = draw(st.sampled_from([0.5, 1.0, 3.0]))
    losses = Losses(c_fp=c_fp, c_fn=c_fn, c_r=draw(st.sampled_from([None, 0.2, 1.0])))
    budget = QueryBudget(candidates=draw(st.sampled_from([None, 5, 30])),
                         scoring_tokens=draw(st.sampled_from([None, 200, 2000])),
                         time_ms=draw(st.sampled_from([None, 60.0, 500.0])),
                         context_tokens=draw(st.sampled_from([None, 60, 400])))
    return {"query": query, "sources": tuple(sources), "calibrators": CALIBRATORS, "losses": losses,
            "limit": draw(st.integers(1, 6)), "caller": caller, "budget": budget}
