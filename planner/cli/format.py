"""Text for people: traces, candidate tables, evaluation tables (the edge that renders data).

Everything here formats what the library returns (receipts, evaluations);
nothing here decides anything.
"""

from __future__ import annotations

from planner.policies import parse_policy, policy_class

__all__ = ["format_trace", "format_table", "format_evaluations", "format_harms", "value_label", "num"]


def num(x) -> str:
    """Three decimals, ``-`` for None, and never ``-0.000``.

    >>> num(1.0849999), num(-1e-15), num(None)
    ('1.085', '0.000', '-')
    """
    if x is None:
        return "-"
    if abs(x) < 5e-4:  # what rounds to 0 at three decimals prints as 0.000, never -0.000
        x = 0.0
    return f"{x:.3f}"


def belief_text(belief: dict) -> str:
    parts = []
    for prop, dist in belief.items():
        parts.append(prop + " " + " ".join(f"{v} {p:.3f}" for v, p in dist.items()))
    return "; ".join(parts)


def value_label(spec: str) -> str:
    """The heading of a policy's value column (``EVSI`` for the one-step rule).

    >>> value_label("one-step"), value_label("lookahead:2"), value_label("conservative:one-step")
    ('EVSI', 'value', 'EVSI')
    """
    try:
        return parse_policy(spec).value_label  # a wrapper's label is its base's
    except Exception:  # noqa: BLE001 - a receipt of an unknown policy still prints
        pass
    try:
        label = policy_class(spec).value_label
    except Exception:  # noqa: BLE001
        return "value"
    return label if isinstance(label, str) else "value"


def format_table(candidates: list, *, value_label: str = "EVSI", indent: str = "  ",
                 interval_label: str = "net over draws") -> str:
    """Render a candidate table (receipt rows) as aligned text.

    A row with an ``interval`` (conservative planning: the lower and upper
    quantile of its net value over posterior draws) shows it last, after
    `interval_label` (:func:`interval_label` names the quantiles).

    >>> rows = [{"observation": "registry", "status": "admitted", "value": 3.9, "penalty": 0.25, "net": 3.65,
    ...          "interval": [2.1, 3.9]}]
    >>> print(format_table(rows, interval_label="net [q05, q95]"))
      registry  EVSI  3.900  cost  0.250  net  3.650  net [q05, q95] [2.100, 3.900]
    """
    if not candidates:
        return indent + "(no candidate table: recorded without asking the policy)"
    width = max(len(c["observation"]) for c in candidates)
    lines = []
    for c in candidates:
        name = c["observation"].ljust(width)
        if c["status"] == "rejected":
            lines.append(f"{indent}{name}  rejected: {c['reason']}")
        elif c["status"] == "taken":
            lines.append(f"{indent}{name}  taken")
        elif c.get("value") is None:
            extra = f"  rank {c['rank']}" if "rank" in c else ""
            lines.append(f"{indent}{name}  admitted  cost {num(c.get('penalty'))}{extra}")
        else:
            q = f"Q_{c['depth']} {num(c['q'])}  " if "q" in c else ""
            plan = ""
            if "plan_lo" in c:  # the bounded planner: the interval of the best plan that starts here
                plan = f"  plan [{num(c['plan_lo'])}, {num(c.get('plan_up'))}]"
            if "interval" in c:  # conservative planning: the net value over posterior draws
                lo, hi = c["interval"]
                plan += f"  {interval_label} [{num(lo)}, {num(hi)}]"
            lines.append(f"{indent}{name}  {q}{value_label} {num(c['value']):>6}  cost {num(c['penalty']):>6}"
                         f"  net {num(c['net']):>6}{plan}")
    return "\n".join(lines)


_STOPPED = {
    "budget": "the node budget was spent",
    "price": "more search would cost more than it could gain",
    "memory": "the graph reached its memory cap",
}


def planning_text(info: dict) -> str | None:
    """One line on the bounded planner's search (None for policies without an interval)."""
    if "interval" not in info:
        return None
    lo, up = info["interval"]
    how = f"{info.get('search', 'best-first')} search"
    if info.get("depth_limited"):
        how += f", then depth-limited to {info['depth_limited']}"
        if info.get("plan_source") == "depth-limited":
            how += " (its plan is the better one)"
    n = info['nodes_expanded']
    work = f"{how}; {n:,} node{'' if n == 1 else 's'}, plan depth {info['plan_depth']}"
    if info["certified"]:
        return f"planning: certified optimum {num(up)} (gap {info['gap']:.1g}; {work})"
    why = _STOPPED.get(info["planning_stopped"], info["planning_stopped"])
    return f"planning: optimum in [{num(lo)}, {num(up)}], gap {num(info['gap'])}: stopped because {why} ({work})"


def _quantile_names(info: dict) -> tuple:
    names = info.get("interval_label")
    if isinstance(names, list) and len(names) == 2 and all(isinstance(n, str) for n in names):
        return tuple(names)
    return ("lower", "upper")


def interval_label(info: dict) -> str:
    """The label of the interval column for a decision's `info` (``net [q05, q95]``).

    Under a bounded base the values over draws come from a depth-limited
    search, not the one-step net of the table's net column: the label says the depth.

    >>> interval_label({"interval_label": ["q05", "q95"], "base": "one-step", "value_depth": 1})
    'net [q05, q95]'
    >>> interval_label({"interval_label": ["q05", "q95"], "base": "bounded", "value_depth": 2})
    'depth-2 net [q05, q95]'
    """
    lo, hi = _quantile_names(info)
    label = f"net [{lo}, {hi}]"
    base = info.get("base")
    if isinstance(base, str) and base.startswith("bounded"):
        label = f"depth-{info.get('value_depth')} {label}"
    return label


def conservative_text(info: dict) -> str | None:
    """One line on conservative planning's rule at a decision (None for other policies).

    >>> conservative_text({"base": "one-step", "base_choice": "registry", "choice": None, "overruled": True,
    ...                    "interval_label": ["q05", "q95"], "draws": 64, "draws_used": 63, "dropped_draws": 1,
    ...                    "value_depth": 1})
    "conservative: overruled one-step's choice registry: no net's q05 over 63 posterior draws is above 0 (1 dropped, depth 1); stop"
    """
    if "base_choice" not in info or "overruled" not in info:
        return None
    base, choice, pick = info.get("base"), info["base_choice"], info.get("choice")
    q = _quantile_names(info)[0]
    over = f"over {info.get('draws_used')} posterior draws"
    valued = (f"{choice} valued by {base}'s plan, the others at depth {info.get('value_depth')}"
              if info.get("valued_by_plan") else f"depth {info.get('value_depth')}")
    how = f"({info.get('dropped_draws')} dropped, {valued})"
    if choice is None:
        return f"conservative: {base} stops, and so does the conservative rule"
    if not info["overruled"]:
        return f"conservative: kept {base}'s choice {choice}: its net's {q} {over} is above 0 {how}"
    if pick is None:
        return f"conservative: overruled {base}'s choice {choice}: no net's {q} {over} is above 0 {how}; stop"
    return (f"conservative: overruled {base}'s choice {choice}: its net's {q} {over} is not above 0, "
            f"{pick}'s is {how}")


def policy_lines(info: dict) -> list:
    """The lines under a candidate table that describe the policy's decision."""
    out = []
    if "target" in info:
        out.append(f"  working toward {info['target']}")
    if "plan_text" in info:
        out.append("  plan: " + info["plan_text"])
    if planning_text(info):
        out.append("  " + planning_text(info))
    if conservative_text(info):
        base = info.get("base_info") or {}
        if "plan_text" in base:
            out.append("  base plan: " + base["plan_text"])
        if planning_text(base):
            out.append("  base " + planning_text(base))
        out.append("  " + conservative_text(info))
    return out


def format_trace(receipt: dict) -> str:
    """The readable trace of a receipt (what ``planner run`` prints)."""
    spec = receipt["policy"]["spec"]
    label = value_label(spec)
    out = [f"domain {receipt['domain']['name']} ({receipt['domain']['content_hash'][:19]})  "
           f"purpose {receipt['purpose']}  policy {spec}"]
    if receipt.get("entitlements"):
        out.append("entitlements: " + ", ".join(receipt["entitlements"]))
    if "world" in receipt:
        seed = f"  (seed {receipt['seed']})" if "seed" in receipt else ""
        out.append("hidden world: " + ", ".join(f"{k}={v}" for k, v in receipt["world"].items()) + seed)
    for entry in receipt["steps"]:
        b = entry["before"]
        out.append("")
        out.append(f"step {entry['step']}  belief: {belief_text(b['belief'])}")
        out.append(f"  current decision: {b['action'].upper()}  expected loss {num(b['expected_loss'])}")
        info = entry.get("policy_info") or {}
        out.append(format_table(entry["candidates"], value_label=label, indent="    ",
                                interval_label=interval_label(info)))
        out.extend(policy_lines(info))
        note = "" if entry["chosen"] in (None, entry["acquired"]) else f" (policy chose {entry['chosen']})"
        out.append(f"  -> acquire {entry['acquired']}{note}: observed {entry['outcome']}")
        a = entry["after"]
        est = a["facts"]["established"]
        out.append(f"  belief: {belief_text(a['belief'])}"
                   + (f"; established {', '.join(f'{k}={v}' for k, v in est.items())}" if est else ""))
    final = receipt.get("final")
    if final is not None:
        out.append("")
        out.append(f"stop: {final['action'].upper()}  expected loss {num(final['expected_loss'])}"
                   f"  reason {final['stop_reason']}"
                   + (f" ({final['budget_dimension']})" if final.get("budget_dimension") else ""))
        info = final.get("policy_info") or {}
        out.append(format_table(final["candidates"], value_label=label, indent="    ",
                                interval_label=interval_label(info)))
        out.extend(line for line in policy_lines(info) if not line.startswith("  working toward"))
        for c in final["contradictions"]:
            claims = "; ".join(f"{v} by {', '.join(s)}" for v, s in c["claims"].items())
            out.append(f"  contradiction: {c['proposition']}: {claims}")
        if final["unknown_outcomes"]:
            out.append("  unknown (tool unavailable): " + ", ".join(final["unknown_outcomes"]))
        if final["unresolved"]:
            out.append("  unresolved: " + belief_text(final["unresolved"]))
        spent = final["budget"]["spent"]
        out.append("  spent: " + ", ".join(f"{d} {v:g}" for d, v in spent.items()))
    return "\n".join(out)


def _dist(pairs, fmt=str) -> str:
    return ", ".join(f"{fmt(k)} {p:.3f}" for k, p in pairs if p > 0)


def format_evaluations(evals) -> str:
    """A comparison table of :class:`~planner.evaluation.evaluate.PolicyEvaluation` results, then their distributions.

    >>> import planner
    >>> from planner.evaluation.evaluate import evaluate_policy
    >>> d = planner.load_domain("identity_registry")
    >>> print(format_evaluations([evaluate_policy(d, "one-step")]))  # doctest: +NORMALIZE_WHITESPACE
    domain identity_registry
    policy    total loss  decision loss  penalty  leaves  first
    one-step       4.850          4.850    0.000       1  (stop)
      one-step: stop reasons no_positive_value 1.000; actions hold 1.000; calls spent 0 1.000
    """
    evals = list(evals)
    if not evals:
        return ""
    header = ("policy", "total loss", "decision loss", "penalty", "leaves", "first")
    rows = [(e.policy, num(e.expected_total_loss), num(e.expected_decision_loss), num(e.expected_penalty),
             str(e.n_leaves), e.first or "(stop)") for e in evals]
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) for i in range(len(header))]

    def line(r):
        cells = [r[0].ljust(widths[0])] + [r[i].rjust(widths[i]) for i in range(1, 5)] + [r[5]]
        return "  ".join(cells).rstrip()

    out = [f"domain {evals[0].domain}", line(header)] + [line(r) for r in rows]
    for e in evals:
        out.append(f"  {e.policy}: stop reasons {_dist(e.stop_reasons)}; actions {_dist(e.actions)}; "
                   f"calls spent {_dist(e.calls, lambda k: f'{k:g}')}")
    return "\n".join(out)


def format_harms(harms) -> str:
    """One line per policy, as ``planner evaluate`` prints them under its table.

    >>> import planner
    >>> from planner.evaluation.harm import acquisition_harm
    >>> d = planner.load_domain("payment_release")
    >>> print(format_harms([acquisition_harm(d, "one-step")]))  # doctest: +NORMALIZE_WHITESPACE
      one-step: acquisition harm 0.0045 (right on the prior -> wrong), fixed 0.5445 (wrong -> right);
      prior's action hold
    """
    return "\n".join(f"  {h.policy}: acquisition harm {h.harm:.4f} (right on the prior -> wrong), "
                     f"fixed {h.fixed:.4f} (wrong -> right); prior's action {h.no_retrieval_action}"
                     for h in harms)
