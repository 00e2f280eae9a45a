"""Tables, the regime map, the findings and the plots of a depth-study sweep.

Everything here reads the rows of :func:`planner.study.runner.run_sweep`; the
report's numbers are computed, never typed in. Plots need matplotlib (the
``bench`` extra) and are skipped with a note when it is missing.

The regime map prices planning latency at a declared weight ``w`` (loss units
per millisecond of planning, :data:`DEFAULT_LATENCY_WEIGHT`): a deeper policy
*pays* in a cell when its mean reduction in expected total loss over the
shallower one exceeds ``w`` times its mean extra planning time per episode
(the sum over the episode's decisions, weighted by their probability).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict

import numpy as np

from planner.study.families import BUDGET_LEVELS, FAMILIES

__all__ = ["DEFAULT_LATENCY_WEIGHT", "write_csv", "read_csv", "summarise", "render_report", "make_plots"]

#: Loss units per millisecond of planning (the generated domains charge 0.001 per ms of tool latency).
DEFAULT_LATENCY_WEIGHT = 0.001
#: Two expected losses closer than this are equal.
EQ = 1e-9

DEPTH = ("lookahead:2", "lookahead:3", "lookahead:auto", "optimal")


# --------------------------------------------------------------------------
# CSV


def _columns(rows) -> list:
    cols: dict = {}
    for r in rows:
        for k in r:
            cols.setdefault(k, None)
    return list(cols)


def write_csv(rows, path) -> None:
    """Write rows (dicts) to CSV, columns in order of first appearance; floats at full precision."""
    cols = _columns(rows)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: _cell(r.get(k)) for k in cols})


def _cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return v


def read_csv(path) -> list:
    """Rows as dicts of strings (numbers as written)."""
    with open(path, encoding="utf-8") as f:
        return list(csv.DictReader(f))


# --------------------------------------------------------------------------
# aggregation


def _f(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _mean(xs) -> float:
    xs = [x for x in xs if not math.isnan(x)]
    return float(np.mean(xs)) if xs else math.nan


def _by_case(rows) -> dict:
    cases: dict = defaultdict(dict)
    for r in rows:
        cases[r["key"]][r["policy"]] = r
    return cases


def _J(r) -> float:
    return _f(r.get("total_loss"))


def _Jx(r) -> float:
    """The exact total loss where there is one (the MC family's rows carry it as a cross-check)."""
    x = _f(r.get("exact_total_loss"))
    return x if not math.isnan(x) else _J(r)


def summarise(rows, *, latency_weight: float = DEFAULT_LATENCY_WEIGHT) -> dict:
    """The numbers the report states (a dict of plain values; see :func:`render_report`).

    Comparisons between policies use the exact total loss wherever it exists
    (every family; for the Monte Carlo family the exact cross-check), so that
    equalities such as "equal to 1e-9" are meaningful.
    """
    cases = _by_case(rows)
    fams = [f for f in FAMILIES if any(c[next(iter(c))]["family"] == f for c in cases.values())]
    out: dict = {"families": fams, "latency_weight": latency_weight, "n_cases": len(cases), "n_rows": len(rows)}

    # safety
    out["breaches"] = int(sum(_f(r.get("breach_paths")) for r in rows))
    out["forbidden"] = int(sum(_f(r.get("forbidden")) for r in rows))
    out["unavailable"] = int(sum(_f(r.get("unavailable_acquisitions")) for r in rows))
    out["repeats"] = int(sum(_f(r.get("repeat_acquisitions")) for r in rows))
    out["paths_audited"] = int(sum(_f(r.get("leaves")) for r in rows if not math.isnan(_f(r.get("leaves"))))
                               + sum(_f(r.get("episodes")) for r in rows if not math.isnan(_f(r.get("episodes")))))
    diffs = [abs(_f(r.get("audit_diff"))) for r in rows if not math.isnan(_f(r.get("audit_diff")))]
    out["audit_max_diff"] = max(diffs) if diffs else math.nan

    # per family x policy means
    table = {}
    for f in fams:
        fr = [r for r in rows if r["family"] == f]
        for p in _policies(rows):
            pr = [r for r in fr if r["policy"] == p]
            if not pr:
                continue
            table[(f, p)] = {
                "J": _mean([_Jx(r) for r in pr]),
                "regret": _mean([_Jx(r) - _f(r.get("v_star")) for r in pr]),
                "lat_median": _mean([_f(r.get("lat_median_ms")) for r in pr]),
                "lat_p95": _mean([_f(r.get("lat_p95_ms")) for r in pr]),
                "plan_ms": _mean([_f(r.get("planning_ms_per_episode")) for r in pr]),
                "calls": _mean([_f(r.get("spent_calls")) for r in pr]),
                "penalty": _mean([_f(r.get("penalty")) for r in pr]),
                "decision_loss": _mean([_f(r.get("decision_loss")) for r in pr]),
                "harm": _mean([_f(r.get("harm")) for r in pr]),
                "fixed": _mean([_f(r.get("fixed")) for r in pr]),
                "premature": _mean([_f(r.get("p_premature_stop")) for r in pr]),
                "premature_loss": _mean([_f(r.get("premature_loss")) for r in pr]),
                "wasteful": _mean([_f(r.get("wasteful_continuations")) for r in pr]),
                "first_agrees": _mean([1.0 if str(r.get("first_agrees")) == "True" else 0.0 for r in pr]),
                "n": len(pr),
            }
    out["table"] = table

    # gains of depth over one-step and over the dependency rule, per case
    gains = []
    for key, c in cases.items():
        if "one-step" not in c:
            continue
        any_r = c["one-step"]
        g = {"key": key, "family": any_r["family"], "budget": any_r["budget"],
             "chain": int(_f(any_r.get("k_chain_length"))), "asym": _f(any_r.get("k_loss_asymmetry")),
             "reliability": _f(any_r.get("k_prereq_reliability")), "weak": int(_f(any_r.get("k_weak_signals")))}
        for p in ("one-step", "dependency") + DEPTH + ("lookahead:2",):
            if p in c:
                g[f"J_{p}"] = _Jx(c[p])
                g[f"T_{p}"] = _f(c[p].get("planning_ms_per_episode"))
                g[f"V_{p}"] = _f(c[p].get("v_estimate"))
        gains.append(g)
    out["gains"] = gains

    # regime map: family x budget
    regime = {}
    for f in fams:
        for b in BUDGET_LEVELS:
            gs = [g for g in gains if g["family"] == f and g["budget"] == b]
            if not gs:
                continue
            cell = {"n": len(gs)}
            for base in ("one-step", "dependency"):
                for p in DEPTH:
                    G = _mean([g[f"J_{base}"] - g[f"J_{p}"] for g in gs])
                    dT = _mean([g[f"T_{p}"] - g[f"T_{base}"] for g in gs])
                    cell[(base, p)] = {"gain": G, "dT": dT, "net": G - latency_weight * dT,
                                       "wins": sum(g[f"J_{base}"] - g[f"J_{p}"] > EQ for g in gs),
                                       "losses": sum(g[f"J_{p}"] - g[f"J_{base}"] > EQ for g in gs),
                                       "breakeven": G / dT if dT > 0 and G > EQ else math.nan}
            regime[(f, b)] = cell
    out["regime"] = regime

    # exact lookup control
    ex = [c for c in cases.values() if next(iter(c.values()))["family"] == "exact_lookup"]
    if ex:
        devs = []
        for c in ex:
            for p in ("confidence:0.9", "one-step", "dependency") + DEPTH:
                if p in c and "top-k:1" in c:
                    devs.append(abs(_Jx(c[p]) - _Jx(c["top-k:1"])))
        out["exact_max_dev"] = max(devs) if devs else math.nan
        out["exact_cases"] = len(ex)
        out["exact_top3_extra"] = _mean([_Jx(c["top-k:3"]) - _Jx(c["top-k:1"]) for c in ex])
        out["exact_lat"] = {p: _mean([_f(c[p].get("lat_median_ms")) for c in ex]) for p in ("top-k:1",) + (
            "confidence:0.9", "one-step", "dependency") + DEPTH}

    # option-value families: lookahead vs one-step
    ov = {}
    for f in ("prerequisite", "complementary", "unreliable_prereq", "heterogeneous", "large"):
        gs = [g for g in gains if g["family"] == f]
        if not gs:
            continue
        ov[f] = {}
        for p in DEPTH + ("dependency",):
            d = [g["J_one-step"] - g[f"J_{p}"] for g in gs]
            ov[f][p] = {"lower": sum(x > EQ for x in d), "equal": sum(abs(x) <= EQ for x in d),
                        "higher": sum(x < -EQ for x in d), "mean": _mean(d), "n": len(d)}
    out["option_value"] = ov

    # by prerequisite depth (families with chains)
    bychain = {}
    for g in gains:
        if g["family"] not in ("prerequisite", "unreliable_prereq", "heterogeneous", "large"):
            continue
        bychain.setdefault(g["chain"], []).append(g)
    out["by_chain"] = {k: {p: _mean([g["J_one-step"] - g[f"J_{p}"] for g in v]) for p in DEPTH + ("dependency",)}
                       | {"n": len(v)} for k, v in sorted(bychain.items())}

    # by loss asymmetry bins
    bins = [(1, 3), (3, 10), (10, 30), (30, 100.001)]
    byasym = {}
    for lo, hi in bins:
        v = [g for g in gains if lo <= g["asym"] < hi]
        if v:
            byasym[f"{lo}-{int(hi)}"] = {p: _mean([g["J_one-step"] - g[f"J_{p}"] for g in v])
                                         for p in DEPTH + ("dependency",)} | {"n": len(v)}
    out["by_asym"] = byasym

    # dependency rule vs lookahead
    dep = {}
    for f in fams:
        gs = [g for g in gains if g["family"] == f]
        if not gs:
            continue
        row = {"n": len(gs)}
        for p in ("lookahead:3", "optimal"):
            d = [g["J_dependency"] - g[f"J_{p}"] for g in gs]
            row[p] = {"equal": sum(abs(x) <= EQ for x in d), "dep_worse": sum(x > EQ for x in d),
                      "dep_better": sum(x < -EQ for x in d), "mean": _mean(d), "max": max(d)}
        dep[f] = row
    # pure prerequisite chains with reliable steps vs unreliable
    out["dependency"] = dep

    # non-monotone depth: la3 worse than la2
    nm = []
    for g in gains:
        d = g["J_lookahead:3"] - g["J_lookahead:2"]
        if d > EQ:
            nm.append((g["key"], d))
    out["nonmono"] = nm
    out["nonmono_by_family"] = {f: (sum(1 for k, _ in nm if k.startswith(f + "/")),
                                    sum(1 for g in gains if g["family"] == f)) for f in fams}
    better = [g["J_lookahead:2"] - g["J_lookahead:3"] for g in gains if g["J_lookahead:2"] - g["J_lookahead:3"] > EQ]
    out["la3_better"] = (len(better), _mean(better))
    # every step of depth: how often the deeper receding-horizon policy does worse
    steps = {}
    for a, b in (("one-step", "lookahead:2"), ("lookahead:2", "lookahead:3"), ("lookahead:3", "optimal"),
                 ("lookahead:3", "lookahead:auto")):
        d = [g[f"J_{b}"] - g[f"J_{a}"] for g in gains]
        worse = [x for x in d if x > EQ]
        steps[(a, b)] = {"worse": len(worse), "better": sum(x < -EQ for x in d), "n": len(d),
                         "mean_excess": _mean(worse), "max_excess": max(worse) if worse else math.nan}
    out["depth_steps"] = steps
    # nothing beats the optimum: J >= V* for every policy (a check on the whole pipeline)
    out["below_optimal"] = sum(_Jx(r) < _f(r.get("v_star")) - 1e-9 for r in rows)
    # V_d estimates are monotone, and bracket the realised loss: V* <= J(la:d) <= V_d
    est = [g for g in gains if not math.isnan(g.get("V_lookahead:2", math.nan))]
    out["v_monotone_violations"] = sum(g["V_lookahead:3"] > g["V_lookahead:2"] + EQ for g in est)
    out["v_bracket_violations"] = sum(
        (g[f"J_{p}"] > g[f"V_{p}"] + 1e-7) or (g[f"J_{p}"] < g["J_optimal"] - 1e-7)
        for g in est for p in ("lookahead:2", "lookahead:3"))
    out["v_cases"] = len(est)

    # Monte Carlo family: coverage of the exact value by the 95% interval
    mc = [r for r in rows if r.get("method") == "mc" and not math.isnan(_f(r.get("exact_total_loss")))]
    cover = [(_f(r["ci_low"]) - 1e-12 <= _f(r["exact_total_loss"]) <= _f(r["ci_high"]) + 1e-12) for r in mc
             if _f(r["ci_high"]) > _f(r["ci_low"])]
    out["mc_rows"] = len([r for r in rows if r.get("method") == "mc"])
    out["mc_cover"] = (sum(cover), len(cover))
    out["mc_episodes"] = int(max([_f(r.get("episodes")) for r in mc] or [0]))
    return out


def _policies(rows) -> list:
    from planner.study.runner import POLICIES

    present = {r["policy"] for r in rows}
    return [p for p in POLICIES if p in present]


# --------------------------------------------------------------------------
# rendering


def _n(x, nd=3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if abs(x) < 0.5 * 10 ** -nd:
        x = 0.0
    return f"{x:.{nd}f}"


def _table(header, rows) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def render_report(rows, peer_rows, *, command: str, meta: dict, plots: list, plot_note: str | None,
                  latency_weight: float = DEFAULT_LATENCY_WEIGHT) -> str:
    """The markdown report (the exact command first, then the finding, then the tables)."""
    s = summarise(rows, latency_weight=latency_weight)
    fams = s["families"]
    pols = _policies(rows)
    L = []
    L.append("# Depth-comparison study: when does option value justify planning depth and latency?")
    L.append("")
    L.append("Command (from the repository root):")
    L.append("")
    L.append("```bash")
    L.append(command)
    L.append("```")
    L.append("")
    L.append(", ".join(f"{k}: {v}" for k, v in meta.items()))
    L.append("")
    L.append(f"{s['n_cases']} cases (family x instance x budget level), {len(pols)} policies, {s['n_rows']} rows "
             f"(`depth.csv`); method and definitions in `docs/depth-study.md`.")
    L.append("")
    L.append("## Finding")
    L.append("")
    L += _finding(s, [r for r in peer_rows if not r.get("error")])
    L.append("")
    L.append("## Expected total loss by family (mean over cases; exact)")
    L.append("")
    L.append(_table(["family"] + pols, [[f] + [_n(s["table"].get((f, p), {}).get("J", math.nan)) for p in pols]
                                       for f in fams]))
    L.append("")
    L.append("Route regret against the optimal policy (mean of J - V*):")
    L.append("")
    L.append(_table(["family"] + pols, [[f] + [_n(s["table"].get((f, p), {}).get("regret", math.nan)) for p in pols]
                                       for f in fams]))
    L.append("")
    L.append("## Regime map")
    L.append("")
    L.append(f"Planning latency is priced at w = {latency_weight:g} loss units per ms (the generated domains "
             "charge 0.001 per ms of tool latency). Each cell: mean reduction in expected total loss "
             "(exact) of the deeper policy, cases where it is strictly lower / strictly higher, mean extra "
             "planning time per episode (ms), and the verdict: **pays** when the reduction exceeds w x the "
             "extra planning time, *latency only* when there is no reduction, **worse** when the deeper "
             "policy's mean expected total loss is higher.")
    L.append("")
    for base in ("one-step", "dependency"):
        L.append(f"Over {base}:")
        L.append("")
        hdr = ["family", "budget"] + [p for p in DEPTH]
        body = []
        for f in fams:
            for b in BUDGET_LEVELS:
                cell = s["regime"].get((f, b))
                if not cell:
                    continue
                body.append([f, b] + [_verdict(cell[(base, p)], latency_weight) for p in DEPTH])
        L.append(_table(hdr, body))
        L.append("")
    L.append("Break-even latency weight (loss units per ms at which lookahead:3's gain over one-step "
             "equals its extra planning time; - where there is no gain):")
    L.append("")
    body = []
    for f in fams:
        body.append([f] + [_n(s["regime"].get((f, b), {}).get(("one-step", "lookahead:3"), {}).get("breakeven",
                                                                                                   math.nan), 3)
                           for b in BUDGET_LEVELS])
    L.append(_table(["family"] + list(BUDGET_LEVELS), body))
    L.append("")
    L.append("Gain over one-step by prerequisite depth (families with chains: prerequisite, unreliable_prereq, "
             "heterogeneous, large):")
    L.append("")
    L.append(_table(["chain length", "cases"] + list(DEPTH) + ["dependency"],
                    [[k, v["n"]] + [_n(v[p]) for p in DEPTH + ("dependency",)] for k, v in s["by_chain"].items()]))
    L.append("")
    L.append("Gain over one-step by loss asymmetry (all families):")
    L.append("")
    L.append(_table(["asymmetry", "cases"] + list(DEPTH) + ["dependency"],
                    [[k, v["n"]] + [_n(v[p]) for p in DEPTH + ("dependency",)] for k, v in s["by_asym"].items()]))
    L.append("")
    L.append("## Dependency rule against lookahead")
    L.append("")
    body = []
    for f in fams:
        d = s["dependency"].get(f)
        if not d:
            continue
        for p in ("lookahead:3", "optimal"):
            x = d[p]
            body.append([f, p, d["n"], x["equal"], x["dep_worse"], x["dep_better"], _n(x["mean"]), _n(x["max"])])
    L.append(_table(["family", "against", "cases", "equal (1e-9)", "dependency worse", "dependency better",
                     "mean J(dep) - J", "max J(dep) - J"], body))
    L.append("")
    L.append("## Is deeper better? Receding-horizon lookahead is not monotone")
    L.append("")
    nm = s["nonmono"]
    n_cases = len(s["gains"])
    L.append(f"Cases where lookahead:3's exact expected total loss exceeds lookahead:2's: **{len(nm)} of {n_cases}**"
             + (f" (mean excess {_n(_mean([d for _, d in nm]), 4)}, max {_n(max(d for _, d in nm), 4)})" if nm else "")
             + f"; lookahead:3 is strictly better in {s['la3_better'][0]} (mean gain {_n(s['la3_better'][1], 4)}).")
    L.append("")
    L.append(_table(["family", "la3 worse than la2", "cases"],
                    [[f, a, b] for f, (a, b) in s["nonmono_by_family"].items()]))
    if nm:
        L.append("")
        L.append("The cases, with each policy's first choice and its root estimate V_d. The deeper estimate is "
                 "always the lower one (the best plan cut at 3 steps looks better than the best cut at 2), but "
                 "both policies re-plan after every outcome, and the acquisitions that serve the best 3-step "
                 "plan can leave worse continuations than those of the 2-step plan, whose re-planning keeps "
                 "extending it:")
        L.append("")
        cases = _by_case(rows)
        body = []
        for k, d in nm[:20]:
            c = cases[k]
            body.append([f"`{k}`", _n(_Jx(c["lookahead:2"]), 4), _n(_Jx(c["lookahead:3"]), 4),
                         _n(_Jx(c["optimal"]), 4), _n(_f(c["lookahead:2"].get("v_estimate")), 4),
                         _n(_f(c["lookahead:3"].get("v_estimate")), 4), c["lookahead:2"].get("first"),
                         c["lookahead:3"].get("first"), c["optimal"].get("first")])
        L.append(_table(["case", "J(la2)", "J(la3)", "J(optimal)", "V_2", "V_3", "la2 first", "la3 first",
                         "optimal first"], body))
        if len(nm) > 20:
            L.append(f"... and {len(nm) - 20} more.")
    L.append("")
    L.append("Every step of depth (exact expected total loss; the deeper policy strictly worse / strictly better):")
    L.append("")
    L.append(_table(["shallower", "deeper", "deeper worse", "deeper better", "cases", "mean excess when worse",
                     "max excess"],
                    [[a, b, v["worse"], v["better"], v["n"], _n(v["mean_excess"], 4), _n(v["max_excess"], 4)]
                     for (a, b), v in s["depth_steps"].items()]))
    L.append("")
    L.append(f"No policy's expected total loss is below V* (the optimum) in any case: {s['below_optimal']} "
             "violations (tolerance 1e-9).")
    L.append("")
    L.append(f"The estimates are monotone: V_3 > V_2 at the root in {s['v_monotone_violations']} of {s['v_cases']} "
             f"cases, and V* <= J(lookahead:d) <= V_d held in all but {s['v_bracket_violations']} "
             "(case, depth) pairs (tolerance 1e-7).")
    L.append("")
    L.append("## Homogeneous exact lookup (negative control)")
    L.append("")
    if "exact_max_dev" in s:
        L.append(f"Over {s['exact_cases']} cases, the largest |J(adaptive) - J(top-k:1)| over the adaptive "
                 f"policies (confidence gate, one-step, dependency, lookahead 2/3/auto, optimal) is "
                 f"**{s['exact_max_dev']:.2e}**; static top-3 pays {_n(s['exact_top3_extra'])} more on average. "
                 "Only planning latency differs (mean of the median per decision, ms):")
        L.append("")
        L.append(_table(list(s["exact_lat"]), [[_n(v, 4) for v in s["exact_lat"].values()]]))
    L.append("")
    L.append("## Safety audit (independent of the session's gates)")
    L.append("")
    L.append(f"Hard-limit breaches: **{s['breaches']}**; forbidden acquisitions (entitlement, purpose, age): "
             f"**{s['forbidden']}**; acquisitions whose precondition did not hold: {s['unavailable']}; repeated "
             f"acquisitions: {s['repeats']}; over {s['paths_audited']} audited paths (exact leaves and Monte Carlo "
             f"episodes), recomputed from each domain file's costs, limits, entitlements, purposes and ages. "
             f"Independent recomputation of the expected total loss from the policy trees: largest difference "
             f"from planner.evaluate {s['audit_max_diff']:.1e}.")
    L.append("")
    L.append("## Stop quality, harm and spend (means by family)")
    L.append("")
    for metric, label in (("premature", "P(premature stop: the optimum would continue)"),
                          ("wasteful", "expected wasteful continuations (the optimum would stop)"),
                          ("harm", "acquisition harm: P(no-retrieval decision right, final decision wrong)"),
                          ("fixed", "P(no-retrieval decision wrong, final decision right)"),
                          ("calls", "expected calls"), ("penalty", "expected penalty (loss units)"),
                          ("first_agrees", "first choice agrees with the optimal policy")):
        L.append(f"{label}:")
        L.append("")
        L.append(_table(["family"] + pols, [[f] + [_n(s["table"].get((f, p), {}).get(metric, math.nan)) for p in pols]
                                           for f in fams]))
        L.append("")
    dims = [k.removeprefix("spent_") for k in _columns(rows) if k.startswith("spent_")]
    if dims:
        L.append("Expected spend per budget dimension (mean over cases), for a few policies:")
        L.append("")
        body = []
        for f in fams:
            for p in ("top-k:3", "one-step", "dependency", "lookahead:3", "optimal"):
                pr = [r for r in rows if r["family"] == f and r["policy"] == p]
                if pr:
                    body.append([f, p] + [_n(_mean([_f(r.get(f"spent_{d}")) for r in pr]), 3) for d in dims])
        L.append(_table(["family", "policy"] + dims, body))
        L.append("")
    L.append("## Planning latency per decision (ms, JIT warmed; mean over cases of the probability-weighted median / p95)")
    L.append("")
    L.append(_table(["family"] + pols,
                    [[f] + [f"{_n(s['table'].get((f, p), {}).get('lat_median', math.nan), 3)} / "
                            f"{_n(s['table'].get((f, p), {}).get('lat_p95', math.nan), 3)}" for p in pols]
                     for f in fams]))
    L.append("")
    L.append("## Monte Carlo family")
    L.append("")
    a, b = s["mc_cover"]
    L.append(f"The `large` family (16-32 observations) is measured by replay with common random numbers "
             f"({s['mc_episodes']} episodes per case; {s['mc_rows']} rows); its 95% intervals cover the exact "
             f"value in {a} of {b} rows with a non-degenerate interval (exact evaluation was affordable here "
             "too, so the tables above use it).")
    L.append("")
    L.append("## Peer: pomdp_py POUCT at equal planning time")
    L.append("")
    errors = [r for r in peer_rows if r.get("error")]
    peer_rows = [r for r in peer_rows if not r.get("error")]
    for r in errors:
        L.append(f"- POUCT failed on `{r['key']}`: {r['error']}")
    if errors:
        L.append("")
    if peer_rows:
        body = []
        for r in peer_rows:
            body.append([r["key"], r["peer"], _n(_f(r["planning_ms"]), 3), _n(_f(r["sims_per_decision"]), 1),
                         f"{_n(_f(r['pouct_total_loss']))} ± {_n(_f(r['pouct_ci_half']))}",
                         _n(_f(r["ours_total_loss"])), _n(_f(r["optimal_total_loss"])),
                         f"{_n(_f(r['pouct_regret']))} ± {_n(_f(r['pouct_regret_ci_half']))}", _n(_f(r["ours_regret"])),
                         int(_f(r["illegal_actions"]))])
        L.append("Each POUCT configuration plans for the given wall-clock time per decision: the median "
                 "planning time of lookahead:2 and lookahead:3 on that case, and a generous fixed time; "
                 "'ours' is lookahead:2 beside the first and lookahead:3 beside the others, replayed on the "
                 "same episodes (common random numbers). J is the chosen action's expected loss under the "
                 "exact posterior plus penalties, averaged over episodes; regret is against the optimal "
                 "policy on the same episodes.")
        L.append("")
        L.append(_table(["case", "peer", "planning ms", "sims/decision", "POUCT J (MC, 95%)", "ours J (MC)",
                         "optimal J (MC)", "POUCT regret", "ours regret", "illegal"], body))
        reg = defaultdict(list)
        for r in peer_rows:
            reg[r["peer"]].append((_f(r["pouct_regret"]), _f(r["ours_regret"])))
        L.append("")
        L.append("Mean regret against the optimal policy on the same episodes: " + "; ".join(
            f"{p}: POUCT {_n(_mean([a for a, _ in v]))}, ours {_n(_mean([b for _, b in v]))}" for p, v in reg.items()))
        L.append("")
        L.append("POUCT's figures depend on the machine's speed (it plans against the clock), so this table is "
                 "not reproducible bit for bit, unlike `depth.csv`.")
    else:
        L.append(meta.get("peer_note", "Not run (pomdp_py is not installed, or the run was --quick)."))
    L.append("")
    L.append("## Plots")
    L.append("")
    if plots:
        for p in plots:
            L.append(f"![{p}]({p})")
            L.append("")
    if plot_note:
        L.append(plot_note)
        L.append("")
    L.append("## Files")
    L.append("")
    L.append("- `depth.csv`: one row per case x policy (knobs `k_*`, method, metrics, timing columns "
             "`lat_*` and `planning_ms_per_episode`).")
    if peer_rows:
        L.append("- `peer.csv`: the POUCT comparison.")
    L.append("- `cases.csv`: seconds per case.")
    return "\n".join(L) + "\n"


def _verdict(c, w) -> str:
    g, dT = c["gain"], c["dT"]
    if math.isnan(g):
        return "-"
    if g < -EQ:
        tag = "**worse**"
    elif g <= EQ:
        tag = "*latency only*" if dT > 0 else "same"
    else:
        tag = "**pays**" if g - w * dT > 0 else "not worth it"
    return f"{_n(g, 3 if abs(g) >= 0.01 else 4)} ({c['wins']}/{c['losses']}), {dT:+.2f} ms: {tag}"


def _finding(s, peer_rows=()) -> list:
    out = []
    ov = s["option_value"]
    for f in ("prerequisite", "complementary"):
        if f not in ov:
            continue
        parts = []
        for p in ("lookahead:2", "lookahead:3", "lookahead:auto", "optimal"):
            x = ov[f][p]
            parts.append(f"{p} lower in {x['lower']}/{x['n']} cases, equal in {x['equal']}, higher in {x['higher']} "
                         f"(mean reduction {_n(x['mean'])})")
        out.append(f"- **{f}**: against one-step, " + "; ".join(parts) + ".")
    for f in ("unreliable_prereq", "heterogeneous", "large"):
        if f in ov:
            x, y = ov[f]["lookahead:3"], ov[f]["optimal"]
            out.append(f"- {f}: lookahead:3 lower than one-step in {x['lower']}/{x['n']} cases (mean "
                       f"{_n(x['mean'])}), optimal in {y['lower']}/{y['n']} (mean {_n(y['mean'])}).")
    if s.get("by_chain"):
        bc = s["by_chain"]
        txt = ", ".join(f"chain {k}: la2 {_n(v['lookahead:2'])}, la3 {_n(v['lookahead:3'])}, auto "
                        f"{_n(v['lookahead:auto'])}, dependency {_n(v['dependency'])}, optimal {_n(v['optimal'])}"
                        for k, v in bc.items())
        out.append(f"- Gain over one-step by prerequisite depth: {txt}. A depth-d search sees a decisive source at "
                   "most d-1 prerequisites away; deeper chains need lookahead:auto, the dependency rule or full depth.")
    if "exact_max_dev" in s:
        out.append(f"- **exact_lookup** (negative control): every adaptive policy's exact expected total loss equals "
                   f"static top-1's within {s['exact_max_dev']:.1e} over {s['exact_cases']} cases; only planning "
                   f"latency differs (median per decision {_n(s['exact_lat']['top-k:1'], 4)} ms for top-1, "
                   f"{_n(s['exact_lat']['lookahead:3'], 4)} ms for lookahead:3, "
                   f"{_n(s['exact_lat']['optimal'], 4)} ms for the full-depth search).")
    out.append(f"- **Safety**: {s['breaches']} hard-limit breaches and {s['forbidden']} forbidden acquisitions in "
               f"{s['paths_audited']} audited paths, every policy, every family.")
    dep = s["dependency"]
    dparts = []
    for f in dep:
        x = dep[f]["lookahead:3"]
        dparts.append(f"{f} {x['equal']}/{dep[f]['n']} equal (dependency worse in {x['dep_worse']}, better in "
                      f"{x['dep_better']}, mean J(dep) - J(la3) {_n(x['mean'])})")
    if dparts:
        out.append("- **Dependency rule vs lookahead:3**: " + "; ".join(dparts) + ".")
    nm = s["nonmono"]
    st = s["depth_steps"][("one-step", "lookahead:2")]
    out.append(f"- **Deeper is not always better**: lookahead:3 has a higher exact expected total loss than "
               f"lookahead:2 in {len(nm)} of {len(s['gains'])} cases"
               + (f" (by {_n(_mean([d for _, d in nm]), 4)} on average, at most {_n(max(d for _, d in nm), 4)})"
                  if nm else "")
               + f", and a lower one in {s['la3_better'][0]}; lookahead:2 is worse than one-step (depth 1) in "
                 f"{st['worse']} cases" + (f" (at most {_n(st['max_excess'], 4)})" if st["worse"] else "")
               + f" and better in {st['better']}; the estimates V_d are monotone in every case "
                 f"({s['v_monotone_violations']} violations), and no policy beats the full-depth optimum "
                 f"({s['below_optimal']} violations).")
    pays = []
    only = []
    for (f, b), cell in s["regime"].items():
        c = cell[("one-step", "lookahead:3")]
        if c["gain"] > EQ and c["gain"] - s["latency_weight"] * c["dT"] > 0:
            pays.append(f"{f}/{b}")
        elif c["gain"] <= EQ:
            only.append(f"{f}/{b}")
    out.append(f"- **Regime map** (lookahead:3 over one-step, latency at {s['latency_weight']:g} per ms): pays in "
               + (", ".join(pays) or "no cell") + "; buys latency only in " + (", ".join(only) or "no cell") + ".")
    be = {f: [s["regime"][(f, b)][("one-step", "lookahead:3")]["breakeven"] for b in BUDGET_LEVELS
              if (f, b) in s["regime"]] for f in s["families"]}
    be = {f: [x for x in v if not math.isnan(x)] for f, v in be.items()}
    txt = ", ".join(f"{f} {min(v):.3g}-{max(v):.3g}" for f, v in be.items() if v)
    if txt:
        out.append(f"- Break-even latency price (loss units per ms of planning above which lookahead:3's gain over "
                   f"one-step no longer pays, range over budget levels): {txt}.")
    if "lookahead:auto" in s["option_value"].get("complementary", {}):
        x = s["option_value"]["complementary"]["lookahead:auto"]
        out.append(f"- lookahead:auto sets its depth from prerequisite depth only: on the complementary family it "
                   f"equals one-step in {x['equal']}/{x['n']} cases (gain {_n(x['mean'])}), while lookahead:2 "
                   f"gains {_n(s['option_value']['complementary']['lookahead:2']['mean'])}.")
    a, b = s["mc_cover"]
    if b:
        out.append(f"- Monte Carlo with common random numbers ({s['mc_episodes']} episodes per case, `large` "
                   f"family): the 95% interval covers the exact value in {a}/{b} rows ({100 * a / b:.0f}%).")
    if peer_rows:
        reg = defaultdict(list)
        for r in peer_rows:
            reg[r["peer"]].append((_f(r["pouct_regret"]), _f(r["ours_regret"]), _f(r["planning_ms"]),
                                   _f(r["sims_per_decision"])))
        parts = [f"{p} (median {np.median([v[2] for v in vs]):.3g} ms, {np.mean([v[3] for v in vs]):.0f} "
                 f"simulations per decision): regret {_n(_mean([v[0] for v in vs]))} vs ours "
                 f"{_n(_mean([v[1] for v in vs]))}" for p, vs in reg.items()]
        out.append(f"- **Peer** (pomdp_py POUCT, {len({r['key'] for r in peer_rows})} cases, same episodes): "
                   + "; ".join(parts) + ".")
    return out


# --------------------------------------------------------------------------
# plots


def make_plots(rows, out_dir, *, latency_weight: float = DEFAULT_LATENCY_WEIGHT) -> tuple[list, str | None]:
    """Write the PNG plots into `out_dir`; return ``(file names, note)``. Needs matplotlib.

    Without matplotlib, returns ``([], note)`` and prints nothing itself.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
    except ImportError:
        return [], "Plots skipped: matplotlib is not installed (pip install 'evidence-planner[bench]')."
    from pathlib import Path

    out_dir = Path(out_dir)
    s = summarise(rows, latency_weight=latency_weight)
    fams = s["families"]
    pols = _policies(rows)
    files = []
    colors = dict(zip(pols, plt.cm.tab10(np.linspace(0, 1, 10))))

    # 1. expected total loss vs planning latency, per family
    n = len(fams)
    cols = min(3, n)
    rws = int(math.ceil(n / cols))
    fig, axes = plt.subplots(rws, cols, figsize=(5 * cols, 4 * rws), squeeze=False)
    for ax, f in zip(axes.flat, fams):
        for p in pols:
            t = s["table"].get((f, p))
            if not t:
                continue
            x = max(t["lat_median"], 1e-3)
            ax.scatter([x], [t["J"]], color=colors[p], s=40, label=p)
            ax.annotate(p, (x, t["J"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: f"{x:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(f)
        ax.set_xlabel("planning latency per decision (ms, median)")
        ax.set_ylabel("expected total loss (exact, mean)")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.tight_layout()
    name = "loss_vs_latency.png"
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    files.append(name)

    # 2. gain of depth vs prerequisite depth
    fig, ax = plt.subplots(figsize=(6, 4))
    ks = list(s["by_chain"])
    for p in DEPTH + ("dependency",):
        ax.plot(ks, [s["by_chain"][k][p] for k in ks], marker="o", label=p, color=colors.get(p))
    ax.set_xlabel("prerequisite chain length")
    ax.set_ylabel("J(one-step) - J(policy), mean (exact)")
    ax.set_xticks(ks)
    ax.set_title("Gain of depth vs prerequisite depth")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    name = "gain_vs_prereq_depth.png"
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    files.append(name)

    # 3. gain of depth vs loss asymmetry
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    fcol = dict(zip(fams, plt.cm.Set1(np.linspace(0, 1, max(len(fams), 2)))))
    for ax, p in zip(axes, ("lookahead:3", "optimal")):
        for f in fams:
            gs = [g for g in s["gains"] if g["family"] == f]
            ax.scatter([g["asym"] for g in gs], [g["J_one-step"] - g[f"J_{p}"] for g in gs], s=14, color=fcol[f],
                       label=f, alpha=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("loss asymmetry L(act | bad) / L(hold | good)")
        ax.set_title(f"J(one-step) - J({p}) per case")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("gain in expected total loss (exact)")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    name = "gain_vs_asymmetry.png"
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    files.append(name)

    # 4. the regime map: net benefit at the declared weight, and the weight at which it stops paying
    budgets = list(BUDGET_LEVELS)
    M = np.full((len(fams), len(budgets)), np.nan)
    B = np.full((len(fams), len(budgets)), np.nan)
    gain = np.full((len(fams), len(budgets)), np.nan)
    for i, f in enumerate(fams):
        for j, b in enumerate(budgets):
            cell = s["regime"].get((f, b))
            if cell:
                c = cell[("one-step", "lookahead:3")]
                M[i, j], B[i, j], gain[i, j] = c["net"], c["breakeven"], c["gain"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.6 * len(fams) + 1.8))
    ax = axes[0]
    lim = np.nanmax(np.abs(M)) if np.isfinite(M).any() else 1.0
    im = ax.imshow(M, cmap="RdYlGn", vmin=-lim, vmax=lim, aspect="auto")
    for i in range(len(fams)):
        for j in range(len(budgets)):
            if np.isfinite(M[i, j]):
                label = "latency only" if gain[i, j] <= EQ else f"{M[i, j]:.3f}"
                ax.text(j, i, label, ha="center", va="center", fontsize=8)
    ax.set_title(f"lookahead:3 over one-step:\ngain - {latency_weight:g} x extra planning ms per episode", fontsize=10)
    fig.colorbar(im, ax=ax)
    ax = axes[1]
    LB = np.log10(B)
    im = ax.imshow(LB, cmap="viridis", aspect="auto")
    for i in range(len(fams)):
        for j in range(len(budgets)):
            text = f"{B[i, j]:.3g}" if np.isfinite(B[i, j]) else "never pays"
            mid = np.nanmean(LB) if np.isfinite(LB).any() else 0.0
            ax.text(j, i, text, ha="center", va="center", fontsize=8,
                    color="white" if np.isfinite(B[i, j]) and LB[i, j] < mid else "black")
    ax.set_title("break-even latency weight (loss units per ms, log colour):\nlookahead:3 pays below it", fontsize=10)
    fig.colorbar(im, ax=ax, label="log10 weight")
    for ax in axes:
        ax.set_xticks(range(len(budgets)), budgets)
        ax.set_yticks(range(len(fams)), fams)
    fig.tight_layout()
    name = "regime_map.png"
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    files.append(name)
    return files, None
