"""Redaction: a receipt as a consumer with fewer entitlements may see it."""

from __future__ import annotations

import json

__all__ = ["redact_receipt"]


def redact_receipt(receipt: dict, domain, entitlements) -> dict:
    """The receipt as a consumer holding `entitlements` may see it.

    Observations that need an entitlement the consumer lacks disappear by name
    everywhere: each candidate table keeps only the visible rows plus
    ``hidden_rejections`` (counts by reason) and ``hidden_other`` (counts by
    status); a hidden acquisition is shown as ``"(hidden)"``.
    """
    ents = set(entitlements)
    hidden = {o.name for o in domain.observations if o.entitlement is not None and o.entitlement not in ents}
    out = json.loads(json.dumps(receipt))

    def table(rows):
        visible, counts, other = [], {}, {}
        for r in rows:
            if r["observation"] in hidden:
                if r["status"] == "rejected":
                    counts[r["reason"]] = counts.get(r["reason"], 0) + 1
                else:
                    other[r["status"]] = other.get(r["status"], 0) + 1
            else:
                visible.append(r)
        return visible, counts, other

    def name(x):
        return "(hidden)" if x in hidden else x

    for entry in out["steps"]:
        entry["candidates"], entry["hidden_rejections"], entry["hidden_other"] = table(entry["candidates"])
        entry["chosen"] = name(entry["chosen"]) if entry["chosen"] is not None else None
        if entry["acquired"] in hidden:
            entry["acquired"], entry["outcome"] = "(hidden)", "(hidden)"
        entry.pop("policy_info", None)
    if "final" in out:
        f = out["final"]
        f["candidates"], f["hidden_rejections"], f["hidden_other"] = table(f["candidates"])
        f["unknown_outcomes"] = [name(x) for x in f["unknown_outcomes"]]
        for c in f["contradictions"]:
            c["claims"] = {v: [name(x) for x in srcs] for v, srcs in c["claims"].items()}
        f.pop("policy_info", None)
    out["redacted_for"] = sorted(ents)
    return out
