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
import io
import math
from collections import defaultdict

import numpy as np

from planner.atomic import write_bytes
from planner.study.families import BUDGET_LEVELS, FAMILIES
from planner.study.runner import DEPTH, POLICIES

__all__ = ["DEFAULT_LATENCY_WEIGHT", "write_csv", "read_csv", "summarise", "render_report", "make_plots"]

#: Loss units per millisecond of planning (the generated domains charge 0.001 per ms of tool latency).
DEFAULT_LATENCY_WEIGHT = 0.001
#: What the peer section says when the POUCT peer has no rows and no reason is given.
PEER_NOT_RUN = "Not run (pomdp_py is not installed, or the run was a quick one)."
#: Two expected losses closer than this are equal.
EQ = 1e-9


# --------------------------------------------------------------------------
# CSV


def _columns(rows) -> list:
    cols: dict = {}
    for r in rows:
        for k in r:
            cols.setdefault(k, None)
    return list(cols)


def write_csv(rows, path) -> None:
    r"""Write rows (dicts) to CSV, columns in order of first appearance; floats at full precision.

    The file is replaced atomically (:func:`planner.atomic.write_bytes`): a
    failure raises :class:`~planner.atomic.OutputError` and leaves the
    previous file as it was.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> write_csv([{"a": 0.1, "b": None}, {"b": "x"}], p)
    >>> p.read_text()
    'a,b\n0.1,\n,x\n'
    """
    cols = _columns(rows)
    # built in memory and written as bytes: "\n" line ends on every platform, one atomic write
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: _cell(r.get(k)) for k in cols})
    write_bytes(path, buf.getvalue().encode("utf-8"))


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
    fams = [f for f in FAMILIES if any(_case_family(c) == f for c in cases.values())]
    gains = _case_gains(cases)
    out: dict = {"families": fams, "latency_weight": latency_weight, "n_cases": len(cases), "n_rows": len(rows)}
    out |= _safety_totals(rows)
    out["table"] = _family_policy_means(rows, fams)
    out["gains"] = gains
    out["regime"] = _regime_map(gains, fams, latency_weight)
    out |= _exact_lookup_control(cases)
    out["option_value"] = _option_value(gains)
    out["by_chain"] = _gain_by_chain(gains)
    out["by_asym"] = _gain_by_asymmetry(gains)
    out["dependency"] = _dependency_vs_lookahead(gains, fams)
    out |= _depth_steps(gains, fams)
    out |= _bound_checks(rows, gains)
    out |= _monte_carlo_coverage(rows)
    return out


#: The option-value families: where looking past the next acquisition can pay.
_OPTION_VALUE_FAMILIES = ("prerequisite", "complementary", "unreliable_prereq", "heterogeneous", "large")
#: The families whose cases have prerequisite chains (the knob ``k_chain_length`` varies).
_CHAIN_FAMILIES = ("prerequisite", "unreliable_prereq", "heterogeneous", "large")
#: The policies the report sets against one-step: the depth group and the dependency rule.
_GAIN_POLICIES = DEPTH + ("dependency",)


def _case_family(c) -> str:
    """The family of a case (a dict of its rows by policy; every row of a case has the same family)."""
    return next(iter(c.values()))["family"]


def _safety_totals(rows) -> dict:
    """The safety audit over all rows: breaches, forbidden, unavailable and repeated acquisitions, the
    number of audited paths (exact leaves and Monte Carlo episodes), and the audit's largest difference
    from planner.evaluate."""
    out = {}
    out["breaches"] = int(sum(_f(r.get("breach_paths")) for r in rows))
    out["forbidden"] = int(sum(_f(r.get("forbidden")) for r in rows))
    out["unavailable"] = int(sum(_f(r.get("unavailable_acquisitions")) for r in rows))
    out["repeats"] = int(sum(_f(r.get("repeat_acquisitions")) for r in rows))
    out["paths_audited"] = int(sum(_f(r.get("leaves")) for r in rows if not math.isnan(_f(r.get("leaves"))))
                               + sum(_f(r.get("episodes")) for r in rows if not math.isnan(_f(r.get("episodes")))))
    diffs = [abs(_f(r.get("audit_diff"))) for r in rows if not math.isnan(_f(r.get("audit_diff")))]
    out["audit_max_diff"] = max(diffs) if diffs else math.nan
    return out


def _family_policy_means(rows, fams) -> dict:
    """Per ``(family, policy)`` the mean over cases of every metric the tables show (loss, regret,
    latency, spend, stop quality), and the number of cases ``n``."""
    table = {}
    pols = _policies(rows)
    for f in fams:
        fr = [r for r in rows if r["family"] == f]
        for p in pols:
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
    return table


def _case_gains(cases) -> list:
    """One dict per case that has a one-step row: the case's knobs, and per policy run on it the exact
    total loss ``J_<policy>``, the planning time per episode ``T_<policy>`` and the root estimate
    ``V_<policy>`` (the gains of depth over one-step and over the dependency rule are differences of these)."""
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
    return gains


def _regime_map(gains, fams, latency_weight) -> dict:
    """Per ``(family, budget)`` cell and per ``(base, deeper policy)``: the mean gain, the mean extra
    planning time per episode, the net benefit at `latency_weight`, the cases won and lost, and the
    break-even latency weight (see the module docstring)."""
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
    return regime


def _exact_lookup_control(cases) -> dict:
    """The negative control (``exact_*`` keys; empty without exact_lookup cases): how far any adaptive
    policy's loss strays from static top-1's, what top-3 pays extra, and each policy's median latency."""
    ex = [c for c in cases.values() if _case_family(c) == "exact_lookup"]
    if not ex:
        return {}
    out = {}
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
    return out


def _option_value(gains) -> dict:
    """Per option-value family and deeper policy: in how many cases its loss is lower than, equal to or
    higher than one-step's, and the mean reduction."""
    ov = {}
    for f in _OPTION_VALUE_FAMILIES:
        gs = [g for g in gains if g["family"] == f]
        if not gs:
            continue
        ov[f] = {}
        for p in _GAIN_POLICIES:
            d = [g["J_one-step"] - g[f"J_{p}"] for g in gs]
            ov[f][p] = {"lower": sum(x > EQ for x in d), "equal": sum(abs(x) <= EQ for x in d),
                        "higher": sum(x < -EQ for x in d), "mean": _mean(d), "n": len(d)}
    return ov


def _gain_over_one_step(gs) -> dict:
    """Each of :data:`_GAIN_POLICIES`'s mean reduction in loss from one-step's over the cases `gs`, and ``n``."""
    return {p: _mean([g["J_one-step"] - g[f"J_{p}"] for g in gs]) for p in _GAIN_POLICIES} | {"n": len(gs)}


def _gain_by_chain(gains) -> dict:
    """:func:`_gain_over_one_step` per prerequisite chain length, over the families with chains."""
    bychain = {}
    for g in gains:
        if g["family"] not in _CHAIN_FAMILIES:
            continue
        bychain.setdefault(g["chain"], []).append(g)
    return {k: _gain_over_one_step(v) for k, v in sorted(bychain.items())}


def _gain_by_asymmetry(gains) -> dict:
    """:func:`_gain_over_one_step` per bin of loss asymmetry (keys ``"lo-hi"``), over all families."""
    # the generated asymmetries reach 100 exactly: the top bin's edge lies just above it
    bins = [(1, 3), (3, 10), (10, 30), (30, 100.001)]
    byasym = {}
    for lo, hi in bins:
        v = [g for g in gains if lo <= g["asym"] < hi]
        if v:
            byasym[f"{lo}-{int(hi)}"] = _gain_over_one_step(v)
    return byasym


def _dependency_vs_lookahead(gains, fams) -> dict:
    """Per family, the dependency rule against lookahead:3 and the optimum: cases equal, worse, better,
    and the mean and largest ``J(dependency) - J(policy)``."""
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
    return dep


def _depth_steps(gains, fams) -> dict:
    """Whether deeper is better: the cases where lookahead:3 does worse than lookahead:2 (``nonmono``, also
    counted per family) or better (``la3_better``), and for every step of depth how often the deeper
    receding-horizon policy does worse or better (``depth_steps``)."""
    out = {}
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
    steps = {}
    for a, b in (("one-step", "lookahead:2"), ("lookahead:2", "lookahead:3"), ("lookahead:3", "optimal"),
                 ("lookahead:3", "lookahead:auto")):
        d = [g[f"J_{b}"] - g[f"J_{a}"] for g in gains]
        worse = [x for x in d if x > EQ]
        steps[(a, b)] = {"worse": len(worse), "better": sum(x < -EQ for x in d), "n": len(d),
                         "mean_excess": _mean(worse), "max_excess": max(worse) if worse else math.nan}
    out["depth_steps"] = steps
    return out


def _bound_checks(rows, gains) -> dict:
    """Checks on the whole pipeline: rows whose loss is below the optimum V*, and, over the cases with
    estimates, violations of V_3 <= V_2 and of V* <= J(lookahead:d) <= V_d."""
    out = {}
    # nothing beats the optimum: J >= V* for every policy
    out["below_optimal"] = sum(_Jx(r) < _f(r.get("v_star")) - 1e-9 for r in rows)
    # V_d estimates are monotone, and bracket the realised loss: V* <= J(la:d) <= V_d
    est = [g for g in gains if not math.isnan(g.get("V_lookahead:2", math.nan))]
    out["v_monotone_violations"] = sum(g["V_lookahead:3"] > g["V_lookahead:2"] + EQ for g in est)
    out["v_bracket_violations"] = sum(
        (g[f"J_{p}"] > g[f"V_{p}"] + 1e-7) or (g[f"J_{p}"] < g["J_optimal"] - 1e-7)
        for g in est for p in ("lookahead:2", "lookahead:3"))
    out["v_cases"] = len(est)
    return out


def _monte_carlo_coverage(rows) -> dict:
    """The Monte Carlo family: its number of rows, how many of its 95% intervals (the non-degenerate
    ones) cover the exact value, and the episodes per case."""
    mc = [r for r in rows if r.get("method") == "mc" and not math.isnan(_f(r.get("exact_total_loss")))]
    cover = [(_f(r["ci_low"]) - 1e-12 <= _f(r["exact_total_loss"]) <= _f(r["ci_high"]) + 1e-12) for r in mc
             if _f(r["ci_high"]) > _f(r["ci_low"])]
    return {"mc_rows": len([r for r in rows if r.get("method") == "mc"]), "mc_cover": (sum(cover), len(cover)),
            "mc_episodes": int(max([_f(r.get("episodes")) for r in mc] or [0]))}


def _policies(rows) -> list:
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
                  latency_weight: float = DEFAULT_LATENCY_WEIGHT, peer_note: str = PEER_NOT_RUN) -> str:
    """The markdown report (the exact command first, then the finding, then the tables).

    `peer_note` says why the POUCT peer has no rows, when it has none.
    """
    s = summarise(rows, latency_weight=latency_weight)
    pols = _policies(rows)
    # a failed POUCT run is listed in the peer section and counts nowhere else
    peers_ok = [r for r in peer_rows if not r.get("error")]
    L = _intro_section(s, pols, command, meta)
    L += ["## Finding", ""] + _finding(s, peers_ok) + [""]
    L += _loss_section(s, pols)
    L += _regime_section(s)
    L += _dependency_section(s)
    L += _depth_section(s, rows)
    L += _exact_lookup_section(s)
    L += _safety_section(s)
    L += _stop_quality_section(s, rows, pols)
    L += _latency_section(s, pols)
    L += _monte_carlo_section(s)
    L += _peer_section(peer_rows, peer_note)
    L += _plots_section(plots, plot_note)
    L += _files_section(peers_ok)
    return "\n".join(L) + "\n"


# Each ``_*_section`` below returns the lines of one part of the report: its heading, a blank line, its
# body, and a closing blank line (except the last, ``## Files``), so that they simply concatenate.


def _family_policy_cell(s, f, p, metric) -> str:
    """The summary table's mean of `metric` for family `f` and policy `p`, formatted; - where not run."""
    return _n(s["table"].get((f, p), {}).get(metric, math.nan))


def _family_policy_table(s, pols, metric) -> str:
    """A family x policy table of one metric of the summary table."""
    return _table(["family"] + pols, [[f] + [_family_policy_cell(s, f, p, metric) for p in pols]
                                      for f in s["families"]])


def _gain_table(label, by) -> str:
    """A table of :func:`_gain_over_one_step` results keyed by `label` (chain length, asymmetry bin)."""
    return _table([label, "cases"] + list(_GAIN_POLICIES),
                  [[k, v["n"]] + [_n(v[p]) for p in _GAIN_POLICIES] for k, v in by.items()])


def _intro_section(s, pols, command, meta) -> list:
    """The title, the exact command, the run's metadata and the size of the sweep."""
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
    return L


def _loss_section(s, pols) -> list:
    """Expected total loss and route regret against the optimum, per family and policy."""
    L = ["## Expected total loss by family (mean over cases; exact)", ""]
    L.append(_family_policy_table(s, pols, "J"))
    L.append("")
    L.append("Route regret against the optimal policy (mean of J - V*):")
    L.append("")
    L.append(_family_policy_table(s, pols, "regret"))
    L.append("")
    return L


def _regime_section(s) -> list:
    """The regime map: the verdict per family x budget cell for each deeper policy over one-step and over
    the dependency rule, the break-even latency weights, and the gain by chain length and by asymmetry."""
    fams = s["families"]
    latency_weight = s["latency_weight"]
    L = ["## Regime map", ""]
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
    L.append(_gain_table("chain length", s["by_chain"]))
    L.append("")
    L.append("Gain over one-step by loss asymmetry (all families):")
    L.append("")
    L.append(_gain_table("asymmetry", s["by_asym"]))
    L.append("")
    return L


def _dependency_section(s) -> list:
    """Per family, the dependency rule against lookahead:3 and against the optimum."""
    L = ["## Dependency rule against lookahead", ""]
    body = []
    for f in s["families"]:
        d = s["dependency"].get(f)
        if not d:
            continue
        for p in ("lookahead:3", "optimal"):
            x = d[p]
            body.append([f, p, d["n"], x["equal"], x["dep_worse"], x["dep_better"], _n(x["mean"]), _n(x["max"])])
    L.append(_table(["family", "against", "cases", "equal (1e-9)", "dependency worse", "dependency better",
                     "mean J(dep) - J", "max J(dep) - J"], body))
    L.append("")
    return L


def _depth_section(s, rows) -> list:
    """Is deeper better: the cases where lookahead:3 loses to lookahead:2, every step of depth, and the
    checks against the optimum and on the estimates V_d."""
    L = ["## Is deeper better? Receding-horizon lookahead is not monotone", ""]
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
        L += _nonmonotone_cases(rows, nm)
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
    return L


def _nonmonotone_cases(rows, nm, shown: int = 20) -> list:
    """The first `shown` cases where lookahead:3 loses to lookahead:2: J and V_d of both, the optimum's J,
    and each one's first choice; then a line counting the rest."""
    cases = _by_case(rows)
    body = []
    for k, d in nm[:shown]:
        c = cases[k]
        body.append([f"`{k}`", _n(_Jx(c["lookahead:2"]), 4), _n(_Jx(c["lookahead:3"]), 4),
                     _n(_Jx(c["optimal"]), 4), _n(_f(c["lookahead:2"].get("v_estimate")), 4),
                     _n(_f(c["lookahead:3"].get("v_estimate")), 4), c["lookahead:2"].get("first"),
                     c["lookahead:3"].get("first"), c["optimal"].get("first")])
    L = [_table(["case", "J(la2)", "J(la3)", "J(optimal)", "V_2", "V_3", "la2 first", "la3 first",
                 "optimal first"], body)]
    if len(nm) > shown:
        L.append(f"... and {len(nm) - shown} more.")
    return L


def _exact_lookup_section(s) -> list:
    """The negative control: adaptive policies against static top-1 on homogeneous exact lookup."""
    L = ["## Homogeneous exact lookup (negative control)", ""]
    if "exact_max_dev" in s:
        L.append(f"Over {s['exact_cases']} cases, the largest |J(adaptive) - J(top-k:1)| over the adaptive "
                 f"policies (confidence gate, one-step, dependency, lookahead 2/3/auto, optimal) is "
                 f"**{s['exact_max_dev']:.2e}**; static top-3 pays {_n(s['exact_top3_extra'])} more on average. "
                 "Only planning latency differs (mean of the median per decision, ms):")
        L.append("")
        L.append(_table(list(s["exact_lat"]), [[_n(v, 4) for v in s["exact_lat"].values()]]))
    L.append("")
    return L


def _safety_section(s) -> list:
    """The independent safety audit's totals."""
    L = ["## Safety audit (independent of the session's gates)", ""]
    L.append(f"Hard-limit breaches: **{s['breaches']}**; forbidden acquisitions (entitlement, purpose, age): "
             f"**{s['forbidden']}**; acquisitions whose precondition did not hold: {s['unavailable']}; repeated "
             f"acquisitions: {s['repeats']}; over {s['paths_audited']} audited paths (exact leaves and Monte Carlo "
             f"episodes), recomputed from each domain file's costs, limits, entitlements, purposes and ages. "
             f"Independent recomputation of the expected total loss from the policy trees: largest difference "
             f"from planner.evaluate {s['audit_max_diff']:.1e}.")
    L.append("")
    return L


def _stop_quality_section(s, rows, pols) -> list:
    """Stop quality, harm, calls, penalty and first-choice agreement per family and policy, then the spend
    per budget dimension."""
    L = ["## Stop quality, harm and spend (means by family)", ""]
    for metric, label in (("premature", "P(premature stop: the optimum would continue)"),
                          ("wasteful", "expected wasteful continuations (the optimum would stop)"),
                          ("harm", "acquisition harm: P(no-retrieval decision right, final decision wrong)"),
                          ("fixed", "P(no-retrieval decision wrong, final decision right)"),
                          ("calls", "expected calls"), ("penalty", "expected penalty (loss units)"),
                          ("first_agrees", "first choice agrees with the optimal policy")):
        L.append(f"{label}:")
        L.append("")
        L.append(_family_policy_table(s, pols, metric))
        L.append("")
    L += _spend_table(rows, s["families"])
    return L


def _spend_table(rows, fams) -> list:
    """The mean spend per budget dimension (the ``spent_*`` columns) of a few policies per family, with its
    caption; no lines when the rows carry no spend."""
    dims = [k.removeprefix("spent_") for k in _columns(rows) if k.startswith("spent_")]
    if not dims:
        return []
    L = ["Expected spend per budget dimension (mean over cases), for a few policies:", ""]
    body = []
    for f in fams:
        for p in ("top-k:3", "one-step", "dependency", "lookahead:3", "optimal"):
            pr = [r for r in rows if r["family"] == f and r["policy"] == p]
            if pr:
                body.append([f, p] + [_n(_mean([_f(r.get(f"spent_{d}")) for r in pr]), 3) for d in dims])
    L.append(_table(["family", "policy"] + dims, body))
    L.append("")
    return L


def _latency_section(s, pols) -> list:
    """Planning latency per decision (median / p95) per family and policy."""
    L = ["## Planning latency per decision (ms, JIT warmed; mean over cases of the probability-weighted "
         "median / p95)", ""]
    L.append(_table(["family"] + pols,
                    [[f] + [f"{_family_policy_cell(s, f, p, 'lat_median')} / "
                            f"{_family_policy_cell(s, f, p, 'lat_p95')}" for p in pols]
                     for f in s["families"]]))
    L.append("")
    return L


def _monte_carlo_section(s) -> list:
    """The Monte Carlo family's coverage of the exact value by its 95% intervals."""
    L = ["## Monte Carlo family", ""]
    a, b = s["mc_cover"]
    L.append(f"The `large` family (16-32 observations) is measured by replay with common random numbers "
             f"({s['mc_episodes']} episodes per case; {s['mc_rows']} rows); its 95% intervals cover the exact "
             f"value in {a} of {b} rows with a non-degenerate interval (exact evaluation was affordable here "
             "too, so the tables above use it).")
    L.append("")
    return L


def _peer_section(peer_rows, peer_note: str) -> list:
    """The POUCT comparison: its failures, then per case and configuration POUCT beside ours and the mean
    regrets; or, without peer rows, `peer_note` on why it was not run."""
    L = ["## Peer: pomdp_py POUCT at equal planning time", ""]
    errors = [r for r in peer_rows if r.get("error")]
    peer_rows = [r for r in peer_rows if not r.get("error")]
    for r in errors:
        L.append(f"- POUCT failed on `{r['key']}`: {r['error']}")
    if errors:
        L.append("")
    if peer_rows:
        L.append("Each POUCT configuration plans for the given wall-clock time per decision: the median "
                 "planning time of lookahead:2 and lookahead:3 on that case, and a generous fixed time; "
                 "'ours' is lookahead:2 beside the first and lookahead:3 beside the others, replayed on the "
                 "same episodes (common random numbers). J is the chosen action's expected loss under the "
                 "exact posterior plus penalties, averaged over episodes; regret is against the optimal "
                 "policy on the same episodes.")
        L.append("")
        L.append(_peer_table(peer_rows))
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
        L.append(peer_note)
    L.append("")
    return L


def _peer_table(peer_rows) -> str:
    """One row per successful POUCT run: planning time, simulations, J and regret of POUCT (with 95%
    half-widths), ours and the optimum, and POUCT's illegal actions."""
    body = []
    for r in peer_rows:
        body.append([r["key"], r["peer"], _n(_f(r["planning_ms"]), 3), _n(_f(r["sims_per_decision"]), 1),
                     f"{_n(_f(r['pouct_total_loss']))} ± {_n(_f(r['pouct_ci_half']))}",
                     _n(_f(r["ours_total_loss"])), _n(_f(r["optimal_total_loss"])),
                     f"{_n(_f(r['pouct_regret']))} ± {_n(_f(r['pouct_regret_ci_half']))}", _n(_f(r["ours_regret"])),
                     int(_f(r["illegal_actions"]))])
    return _table(["case", "peer", "planning ms", "sims/decision", "POUCT J (MC, 95%)", "ours J (MC)",
                   "optimal J (MC)", "POUCT regret", "ours regret", "illegal"], body)


def _plots_section(plots, plot_note) -> list:
    """The plots as images, and the note (why some are missing) where there is one."""
    L = ["## Plots", ""]
    if plots:
        for p in plots:
            L.append(f"![{p}]({p})")
            L.append("")
    if plot_note:
        L.append(plot_note)
        L.append("")
    return L


def _files_section(peers_ok) -> list:
    """The files written beside the report (``peer.csv`` only when some POUCT run finished)."""
    L = ["## Files", ""]
    L.append("- `depth.csv`: one row per case x policy (knobs `k_*`, method, metrics, timing columns "
             "`lat_*` and `planning_ms_per_episode`).")
    if peers_ok:
        L.append("- `peer.csv`: the POUCT comparison.")
    L.append("- `cases.csv`: seconds per case.")
    return L


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


def _save(fig, path) -> None:
    """Render `fig` as PNG in memory, then write it atomically (a failed write leaves the previous plot)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    write_bytes(path, buf.getvalue())


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
    cmap = plt.cm.tab10 if len(pols) <= 10 else plt.cm.tab20  # one colour per policy, however many are registered
    colors = dict(zip(pols, cmap(np.linspace(0, 1, max(len(pols), 2)))))

    # 1. expected total loss vs planning latency, per family
    n = len(fams)
    cols = min(3, n)
    rws = int(math.ceil(n / cols))
    # one legend for the figure instead of a label at every point: policies with the same loss and
    # latency sit on one another, and their labels did too; colour and marker tell them apart
    markers = dict(zip(pols, "osD^vPX*<>hp8H" * 2))
    handles = {}
    fig, axes = plt.subplots(rws, cols, figsize=(5 * cols, 4 * rws + 0.8), squeeze=False)
    for ax, f in zip(axes.flat, fams):
        for p in pols:
            t = s["table"].get((f, p))
            if not t:
                continue
            x = max(t["lat_median"], 1e-3)
            handles[p] = ax.scatter([x], [t["J"]], color=colors[p], marker=markers[p], s=46, alpha=0.85,
                                    edgecolors="black", linewidths=0.4, label=p)
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
    fig.legend([handles[p] for p in pols if p in handles], [p for p in pols if p in handles], loc="lower center",
               ncol=min(len(handles), 6), fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.8 / (4 * rws + 0.8) + 0.02, 1, 1))
    name = "loss_vs_latency.png"
    _save(fig, out_dir / name)
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
    _save(fig, out_dir / name)
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
    _save(fig, out_dir / name)
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
    _save(fig, out_dir / name)
    plt.close(fig)
    files.append(name)
    return files, None
