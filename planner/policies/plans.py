"""Plans as data and as one line: the nested plan a searching policy records, with names.

A plan is ``{"observe": name, "q": Q, "penalty": c, "outcomes": {outcome: {"p": P, "then": plan}}}``
or a stop ``{"stop": action, "expected_loss": R}`` (``{"elided": True}`` where a
large plan was cut short). :func:`named_plan` turns the kernels' index form
into names; :func:`plan_text` renders one line for traces.
"""

from __future__ import annotations

__all__ = ["named_plan", "plan_text", "PLAN_TEXT_WIDTH"]

#: plan_text longer than this is shortened by eliding the deepest follow-ups.
PLAN_TEXT_WIDTH = 240


def named_plan(c, raw: dict) -> dict:
    """The plan `raw` (indices, from :mod:`lookahead`) with the names of compiled domain `c`."""
    if raw.get("elided"):
        return {"elided": True}
    if "stop" in raw:
        return {"stop": c.action_names[raw["action"]], "expected_loss": raw["value"]}
    o = raw["observe"]
    return {
        "observe": c.obs_names[o],
        "q": raw["q"],
        "penalty": raw["penalty"],
        "outcomes": {c.outcome_names[o][x["outcome"]]: {"p": x["p"], "then": named_plan(c, x["then"])}
                     for x in raw["outcomes"]},
    }


def _render(plan: dict, levels: int) -> str:
    if plan.get("elided"):
        return "..."
    if "stop" in plan:
        return plan["stop"].upper()
    if levels <= 0:
        return plan["observe"] + " -> ..."
    subs = [(y, _render(x["then"], levels - 1)) for y, x in plan["outcomes"].items()]
    if len(subs) > 1 and len({s for _, s in subs}) == 1:
        return f"{plan['observe']} -> {{any: {subs[0][1]}}}"
    return plan["observe"] + " -> {" + ", ".join(f"{y}: {s}" for y, s in subs) + "}"


def plan_text(plan: dict, risk: float, *, label: str, horizon: str) -> str:
    """One line: the planned first observation, its follow-ups per outcome, the plan's value against stopping.

    Stops are shown as the action in capitals; follow-ups deeper than fit in
    :data:`PLAN_TEXT_WIDTH` characters are elided as ``...`` (the full plan is
    ``info["plan"]``). `label` names the plan's value (``Q_2``), `horizon` the
    plans searched (``depth-2 plan``).

    >>> plan_text({"stop": "hold", "expected_loss": 1.085}, 1.085, label="Q_2", horizon="depth-2 plan")
    'stop now: HOLD (expected loss 1.085); no depth-2 plan beats it'
    >>> p = {"observe": "a", "q": 1.0, "penalty": 0.1, "outcomes": {
    ...      "yes": {"p": 0.5, "then": {"stop": "go", "expected_loss": 0.0}},
    ...      "no": {"p": 0.5, "then": {"stop": "wait", "expected_loss": 1.8}}}}
    >>> plan_text(p, 2.0, label="Q_1", horizon="depth-1 plan")
    'a -> {yes: GO, no: WAIT}  (Q_1 1.000 vs stop 2.000)'
    """
    if "stop" in plan:
        return (f"stop now: {plan['stop'].upper()} (expected loss {plan['expected_loss']:.3f}); "
                f"no {horizon} beats it")
    tail = f"  ({label} {plan['q']:.3f} vs stop {risk:.3f})"
    for levels in range(64, 0, -1):
        text = _render(plan, levels) + tail
        if len(text) <= PLAN_TEXT_WIDTH:
            return text
    return _render(plan, 0) + tail
