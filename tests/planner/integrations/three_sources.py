"""A domain of three one-call sources under a limit of two calls (the integrations' concurrency tests)."""

from __future__ import annotations

import planner


def domain():
    """Three informing sources of one call each, a limit of two calls, and a decision they can move."""
    lik = {"good": {"yes": 0.9, "no": 0.1}, "bad": {"yes": 0.2, "no": 0.8}}
    return planner.Domain.from_dict({
        "domain": "three_sources", "purpose": "test",
        "world": {"q": {"values": ["good", "bad"]}}, "prior": {"q": {"good": 0.5, "bad": 0.5}},
        "actions": {"go": {"loss": {"q": {"good": 0, "bad": 10}}}, "stay": {"loss": {"q": {"good": 4, "bad": 0}}}},
        "budget": {"limits": {"calls": 2}, "weights": {"calls": 0.01}},
        "observations": {n: {"role": "inform", "bears_on": "q", "likelihood": lik, "cost": {"calls": 1}}
                         for n in ("s1", "s2", "s3")}})
