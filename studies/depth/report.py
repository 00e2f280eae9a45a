"""The second edition's report: the share with non-myopic value, the regime map, every table, the plots.

Every number in the report is computed from the rows of
:mod:`studies.depth.run`; nothing is typed in. The rules:

- **Non-myopic value** of a case is ``J(one-step) - V*``; it is *material*
  above :data:`MATERIAL` loss units (a fifth of one acquisition's calls
  penalty, 0.05). A case whose V* is only an interval counts where the
  interval decides it and is reported as undecided otherwise.
- **Regret** is ``J - V*`` on certified cases only (``V*`` within 1e-9);
  normalised regret is ``(J - V*) / (J(none) - V*)``
  (:func:`studies.stats.normalized_regret`). Every regret is exact;
  the POUCT peer's figures are Monte Carlo estimates and stay in their own
  columns, with 95% intervals.
- **Intervals** are 90% bootstrap intervals resampling cases (each case is one
  instance; the frontier resamples instances), 2,000 resamples, seed 0;
  paired tests are Wilcoxon signed-rank with Holm's correction. A case where
  a policy's exact evaluation stopped at its cap (30,000 tree nodes or 30 s of
  decisions) has no loss for that policy and is left out of that policy's
  comparisons (the tables count them).
- **Pays**: with planning priced at ``w`` loss units per ms (or per 1,000
  search nodes), a policy's net gain over one-step on a case is
  ``(J_one + w t_one) - (J_p + w t_p)``, where ``t`` is the expected planning
  time per episode (single-decision times, each decision timed once). Depth
  *pays* in a region when the mean net gain is at least :data:`MATERIAL`, its
  interval lies above 0 and more than half the region's cases gain (net gain
  above 1e-9). Otherwise the verdict names the reason: ``no gain`` (the mean
  gross gain, at ``w = 0``, is below :data:`MATERIAL`), ``uncertain`` (it is
  material but its interval reaches 0: too few or too mixed cases), ``latency``
  (the gross gain is material but the priced one is not), ``few cases`` (the
  mean is material but at most half the cases gain: a minority carries it),
  ``model error`` (on the true model depth pays; planning on the wrong model
  it does not).
"""

from __future__ import annotations

import math

import numpy as np

from planner.io.atomic import write_bytes
from planner.tolerances import VALUE_TOL
from studies.stats import cluster_bootstrap, holm, normalized_regret, wilcoxon_signed_rank

__all__ = ["MATERIAL", "PRICES", "verdict", "render", "make_plots", "summary_lines", "parse_rows", "rerender"]

#: Material gain or non-myopic value (loss units).
MATERIAL = 0.01
#: Latency prices of the sweep: loss units per ms of planning (and per 1,000 search nodes).
PRICES = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)
#: Equal within this.
ATOL = VALUE_TOL
N_BOOT = 2000
#: The POUCT configuration the cross-cutting tables quote.
PEER_MAIN = "pouct:10ms"


def _f(x, nd=3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{x:.{nd}f}"


def _g(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:g}"


def _ci(values, clusters=None, stat=np.mean):
    """Estimate and 90% interval; NaN values (a policy's evaluation stopped at a cap) are left out."""
    v = np.asarray(values, float)
    cl = np.arange(v.size) if clusters is None else np.asarray(clusters)
    keep = ~np.isnan(v)
    v, cl = v[keep], cl[keep]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    if clusters is None:
        cl = np.arange(v.size)
    return cluster_bootstrap(v, cl, stat, n_boot=N_BOOT, level=0.90, seed=0)


def _cell(est, lo, hi, nd=3) -> str:
    if isinstance(lo, float) and math.isnan(lo):
        return _f(est, nd)
    return f"{_f(est, nd)} [{_f(lo, nd)}, {_f(hi, nd)}]"


def verdict(gross, net) -> tuple[str, float, float, float, float]:
    """``(verdict, mean net gain, lo, hi, share of cases gaining)`` of paired per-case gains (see the module rules).

    >>> verdict([0.0, 0.0, 0.0], [0.0, 0.0, 0.0])[0]
    'no gain'
    >>> verdict([0.0, 0.0, 0.0, 0.9], [0.0, 0.0, 0.0, 0.9])[0]   # material on average, but the interval reaches 0
    'uncertain'
    >>> verdict([0.5, 0.4, 0.6, 0.5], [-0.1, -0.2, -0.1, -0.3])[0]
    'latency'
    >>> verdict([0.5, 0.4, 0.6, 0.5], [0.5, 0.4, 0.6, 0.5])[0]
    'pays'
    >>> verdict([2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0], [2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0])[0]
    'few cases'
    """
    gross = np.asarray(gross, float)
    net = np.asarray(net, float)
    keep = ~(np.isnan(gross) | np.isnan(net))
    gross, net = gross[keep], net[keep]
    if gross.size == 0:
        return "n/a", math.nan, math.nan, math.nan, math.nan
    g, glo, _ = _ci(gross)
    m, lo, hi = _ci(net)
    share = float(np.mean(net > ATOL))
    if g < MATERIAL:
        return "no gain", m, lo, hi, share
    if not (math.isnan(glo) or glo > 0):
        return "uncertain", m, lo, hi, share
    net_ok = m >= MATERIAL and (math.isnan(lo) or lo > 0)
    if not net_ok:
        return "latency", m, lo, hi, share
    if share <= 0.5:
        return "few cases", m, lo, hi, share
    return "pays", m, lo, hi, share


# --------------------------------------------------------------------------
# the case table


def _parse(v):
    """A CSV cell back to its value: booleans, numbers (NaN included), or the string itself."""
    if not isinstance(v, str):
        return v
    if v == "":
        return None
    if v in ("True", "False"):
        return v == "True"
    try:
        f = float(v)
    except ValueError:
        return v
    return int(f) if v.lstrip("-").isdigit() else f


class Cases:
    """The case rows indexed by (case, policy), with the per-case optimum."""

    def __init__(self, rows):
        rows = parse_rows(rows)  # rows read back from CSV are strings
        self.rows = rows
        self.by = {(r["case"], r["policy"]): r for r in rows}
        self.cases = sorted({r["case"] for r in rows})
        self.first = {}
        for r in rows:
            self.first.setdefault(r["case"], r)
        self.policies = []
        for r in rows:
            if r["policy"] not in self.policies:
                self.policies.append(r["policy"])

    def value(self, case, policy, col="total_loss") -> float:
        r = self.by.get((case, policy))
        v = math.nan if r is None else r.get(col, math.nan)
        return math.nan if v is None or v == "" else float(v)

    def vec(self, policy, col="total_loss", cases=None) -> np.ndarray:
        return np.array([self.value(c, policy, col) for c in (cases or self.cases)], float)

    def knob(self, case, name):
        return self.first[case].get(name)

    def certified(self, case) -> bool:
        return bool(self.first[case]["certified"])

    def nonmyopic(self, case, thr) -> float:
        """1, 0, or nan (an interval that does not decide it)."""
        f = self.first[case]
        j1 = self.value(case, "one-step")
        lo_gap, up_gap = j1 - float(f["v_up"]), j1 - float(f["v_lo"])
        if lo_gap > thr:
            return 1.0
        if up_gap <= thr:
            return 0.0
        return math.nan


def _share(cs: Cases, cases, thr):
    v = np.array([cs.nonmyopic(c, thr) for c in cases], float)
    decided = ~np.isnan(v)
    if decided.sum() == 0:
        return math.nan, math.nan, math.nan, 0, len(v)
    est, lo, hi = _ci(v[decided])
    return est, lo, hi, int(decided.sum()), len(v)


# --------------------------------------------------------------------------
# regions of the knobs


def _bin(lo, hi):
    return lambda v: v is not None and lo <= float(v) <= hi


REGIONS = (
    ("all cases", "all", lambda cs, c: True),
    ("chain length", "0", lambda cs, c: cs.knob(c, "k_chain_length") == 0),
    ("chain length", "1-2", lambda cs, c: 1 <= cs.knob(c, "k_chain_length") <= 2),
    ("chain length", "3-6", lambda cs, c: cs.knob(c, "k_chain_length") >= 3),
    ("prerequisites", "informative", lambda cs, c: cs.knob(c, "k_chain_length") > 0
     and bool(cs.knob(c, "k_informative_prereq"))),
    ("prerequisites", "uninformative", lambda cs, c: cs.knob(c, "k_chain_length") > 0
     and not bool(cs.knob(c, "k_informative_prereq"))),
    ("complementarity (weak signals)", "0-2", lambda cs, c: cs.knob(c, "k_weak_signals") <= 2),
    ("complementarity (weak signals)", "3-6", lambda cs, c: cs.knob(c, "k_weak_signals") >= 3),
    ("loss asymmetry", "1-10", lambda cs, c: float(cs.knob(c, "k_loss_asymmetry")) < 10),
    ("loss asymmetry", "10-100", lambda cs, c: float(cs.knob(c, "k_loss_asymmetry")) >= 10),
    ("heterogeneity (misleading sources)", "none", lambda cs, c: cs.knob(c, "k_misleading") == 0),
    ("heterogeneity (misleading sources)", "1-2", lambda cs, c: cs.knob(c, "k_misleading") >= 1),
    ("heterogeneity (alternative sources)", "0-1", lambda cs, c: cs.knob(c, "k_alt_sources") <= 1),
    ("heterogeneity (alternative sources)", "2-4", lambda cs, c: cs.knob(c, "k_alt_sources") >= 2),
    ("size (admitted)", "4-8", lambda cs, c: cs.knob(c, "admitted") <= 8),
    ("size (admitted)", "9-16", lambda cs, c: 9 <= cs.knob(c, "admitted") <= 16),
    ("size (admitted)", "17-40", lambda cs, c: cs.knob(c, "admitted") >= 17),
    ("budget", "tight", lambda cs, c: cs.knob(c, "k_budget") == "tight"),
    ("budget", "medium", lambda cs, c: cs.knob(c, "k_budget") == "medium"),
    ("budget", "loose", lambda cs, c: cs.knob(c, "k_budget") == "loose"),
    ("budget", "none", lambda cs, c: cs.knob(c, "k_budget") == "none"),
)


def _time(cs, case, policy, unit):
    if unit == "ms":
        return cs.value(case, policy, "planning_ms_per_episode")
    return cs.value(case, policy, "search_nodes_per_episode") / 1000.0


def _gains(cs, cases, policy, base="one-step", price=0.0, unit="ms"):
    out = []
    for c in cases:
        g = cs.value(c, base) - cs.value(c, policy)
        if price:
            g += price * (_time(cs, c, base, unit) - _time(cs, c, policy, unit))
        out.append(g)
    return np.array(out, float)


def _best_cheap(cs, cases, cheap):
    means = {p: float(np.nanmean(cs.vec(p, cases=cases))) for p in cheap if p in cs.policies}
    return min(means, key=lambda p: (means[p], cheap.index(p)))


def _peer_cell(peer_rows, cases, label=PEER_MAIN, col="diff_vs_ours") -> str:
    rs = [r for r in peer_rows if r["peer"] == label and r["case"] in set(cases)]
    if not rs:
        return "n/a (0)"
    v = np.array([r[col] for r in rs], float)
    return f"{_f(float(v.mean()))} ({len(rs)})"


def regime_rows(cs: Cases, peer_rows, model_rows, *, depth="bounded", cheap=None):
    """One dict per region: counts, shares, gains, verdicts per price, cheap capture."""
    CHEAP = _specs("CHEAP")

    cheap = tuple(cheap or CHEAP)
    out = []
    for dim, label, pred in REGIONS:
        cases = [c for c in cs.cases if pred(cs, c)]
        if not cases:
            continue
        share = _share(cs, cases, max(MATERIAL, ATOL))
        gross = _gains(cs, cases, depth)
        verdicts = {0.0: verdict(gross, gross)}
        for w in PRICES:
            verdicts[w] = verdict(gross, _gains(cs, cases, depth, price=w))
        best = _best_cheap(cs, cases, cheap)
        cheap_gain = _gains(cs, cases, best)
        both = ~(np.isnan(gross) | np.isnan(cheap_gain))  # the cases where both losses are exact
        captured = float(gross[both].mean()) if both.any() else math.nan
        cap_share = float(cheap_gain[both].mean()) / captured if captured > ATOL else math.nan
        over_best = _ci(cs.vec(best, cases=cases) - cs.vec(depth, cases=cases))
        out.append({"dimension": dim, "region": label, "cases": len(cases), "share": share,
                    "gain": _ci(gross), "verdicts": verdicts, "best_cheap": best, "captured": cap_share,
                    "over_best": over_best,
                    "blinkered": _ci(cs.vec("blinkered:2", cases=cases) - cs.vec(depth, cases=cases)),
                    "region_dr": _ci(cs.vec("decision-region", cases=cases) - cs.vec(depth, cases=cases)),
                    "region_peer": _peer_cell(peer_rows, cases)})
    # model error: gains under the truth, planning on a wrong model
    for kind, param in sorted({(r["model"], r["param"]) for r in model_rows}):
        rs = [r for r in model_rows if r["model"] == kind and r["param"] == param]
        by = {(r["case"], r["policy"]): r["loss"] for r in rs}
        cases = sorted({r["case"] for r in rs if (r["case"], depth) in by and (r["case"], "one-step") in by})
        gross = np.array([by[(c, "one-step")] - by[(c, depth)] for c in cases], float)
        on_truth = np.array([cs.value(c, "one-step") - cs.value(c, depth) for c in cases], float)
        v_truth = verdict(on_truth, on_truth)
        v_model = verdict(gross, gross)
        if v_truth[0] == "pays" and v_model[0] != "pays":
            v_model = (f"model error ({v_model[0]})",) + v_model[1:]
        label = f"lambda={param:g}" if kind == "scaled" else f"N={int(param)}"
        out.append({"dimension": "model error", "region": label, "cases": len(cases), "share": None,
                    "gain": _ci(gross), "verdicts": {0.0: v_model}, "truth_gain": _ci(on_truth),
                    "truth_verdict": v_truth[0], "best_cheap": None, "captured": math.nan, "over_best": None,
                    "blinkered": _ci(np.array([by.get((c, "blinkered:2"), math.nan) - by[(c, depth)]
                                               for c in cases], float)),
                    "region_dr": _ci(np.array([by.get((c, "decision-region"), math.nan) - by[(c, depth)]
                                               for c in cases], float)),
                    "region_peer": _model_peer_cell(model_rows, kind, param)})
    return out


def _model_peer_cell(model_rows, kind, param) -> str:
    rs = [r for r in model_rows if r["model"] == kind and r["param"] == param and r["policy"] == PEER_MAIN
          and not math.isnan(r.get("loss", math.nan))]
    if not rs:
        return "n/a (0)"
    return f"{_f(float(np.mean([r['error_cost'] for r in rs])))} error cost ({len(rs)})"


# --------------------------------------------------------------------------
# the report


def summary_lines(cs: Cases) -> list:
    """The report's opening: the share of cases with any non-myopic value."""
    e, lo, hi, d, n = _share(cs, cs.cases, max(MATERIAL, ATOL))
    ea, loa, hia, da, _ = _share(cs, cs.cases, ATOL)
    return [
        f"**Share of cases with any non-myopic value** (J(one-step) - V* > {MATERIAL} loss units): "
        f"**{_f(e)}** (90% interval [{_f(lo)}, {_f(hi)}]) over the {d} of {n} cases whose optimum is certified or "
        f"whose interval decides it. Above 1e-9 with no materiality threshold: {_f(ea)} [{_f(loa)}, {_f(hia)}] "
        f"({da} decided).",
    ]


def _policy_table(cs: Cases, peer_rows) -> list:
    cert = [c for c in cs.cases if cs.certified(c)]
    jb = cs.vec("bounded", cases=cert)
    pols = cs.policies
    ps, diffs = [], {}
    for p in pols:
        d = cs.vec(p, cases=cert) - jb
        diffs[p] = d
        ok = ~np.isnan(d)
        ps.append(wilcoxon_signed_rank(d[ok]).p_value if ok.sum() and p != "bounded" else math.nan)
    pv = np.array(ps, float)
    adj = np.full(pv.shape, math.nan)
    m = ~np.isnan(pv)
    if m.any():
        adj[m] = holm(pv[m])
    L = ["| policy | mean J | regret [90% CI] | normalised regret median / mean | optimal cases | vs bounded: "
         "worse / better, Holm p | p95 decision ms | planning ms / episode | search nodes / episode | "
         "premature stops | wasteful continuations | harm | errors |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    jn = cs.vec("none", cases=cert)
    vs = np.array([float(cs.first[c]["v_lo"]) for c in cert], float)
    for i, p in enumerate(pols):
        J = cs.vec(p, cases=cert)
        reg = J - vs
        okr = ~np.isnan(reg)
        nr = np.array([float(normalized_regret(J[k], vs[k], jn[k], atol=1e-7)) if okr[k] else math.nan
                       for k in range(len(cert))])
        nrv = nr[~np.isnan(nr)]
        d = diffs[p]
        worse, better = int(np.sum(d > ATOL)), int(np.sum(d < -ATOL))
        allJ = cs.vec(p)
        p95 = cs.vec(p, "lat_p95_ms")
        errs = sum(1 for c in cs.cases if (cs.by.get((c, p)) or {}).get("error"))
        L.append(f"| {p} | {_f(float(np.nanmean(allJ)))} | {_cell(*_ci(reg[okr]))} | "
                 f"{_f(float(np.median(nrv)) if nrv.size else math.nan)} / "
                 f"{_f(float(np.mean(nrv)) if nrv.size else math.nan)} | {int(np.sum(np.abs(reg[okr]) <= 1e-7))}"
                 f"/{int(okr.sum())} | {worse} / {better}, {_g(float(f'{adj[i]:.3g}')) if not math.isnan(adj[i]) else '-'}"
                 f" | {_f(float(np.nanquantile(p95, 0.95)) if np.isfinite(p95).any() else math.nan, 2)} | "
                 f"{_f(float(np.nanmean(cs.vec(p, 'planning_ms_per_episode'))), 2)} | "
                 f"{_f(float(np.nanmean(cs.vec(p, 'search_nodes_per_episode'))), 0)} | "
                 f"{_f(float(np.nanmean(cs.vec(p, 'p_premature_stop'))))} | "
                 f"{_f(float(np.nanmean(cs.vec(p, 'wasteful_continuations'))))} | "
                 f"{_f(float(np.nanmean(cs.vec(p, 'harm'))))} | {errs} |")
    for label in sorted({r["peer"] for r in peer_rows}):
        rs = [r for r in peer_rows if r["peer"] == label]
        d = np.array([r["diff_vs_ours"] for r in rs], float)
        L.append(f"| {label} (MC, {len(rs)} cases, vs {rs[0]['against']}) | "
                 f"{_f(float(np.mean([r['pouct_total_loss'] for r in rs])))} | MC: {_cell(*_ci(d))} over "
                 f"{rs[0]['against']} | - | - | - | "
                 f"{_f(float(np.quantile([r['decision_ms_p95'] for r in rs], 0.95)), 2)} | - | "
                 f"{_f(float(np.mean([r['sims_per_decision'] for r in rs])), 0)} sims / decision | - | - | - | "
                 f"{sum(int(r['illegal_actions']) for r in rs)} illegal |")
    return L


def _metrics_table(cs: Cases, peer_labels=()) -> list:
    cols = [("sufficiency", "evidence sufficiency"), ("p_act_unsupported", "acts without establishing evidence"),
            ("p_escalate", "escalates"), ("p_correct_escalation", "correct escalation"),
            ("p_unneeded_escalation", "unneeded escalation"), ("p_missed_escalation", "missed escalation"),
            ("p_premature_stop", "premature stop"), ("premature_loss", "loss of premature stops"),
            ("wasteful_continuations", "wasteful continuations"), ("breach_paths", "budget breaches"),
            ("forbidden", "forbidden acquisitions")]
    have = [(k, t) for k, t in cols if any(k in r for r in cs.rows)]
    L = ["| policy | " + " | ".join(t for _, t in have) + " |", "|---" * (len(have) + 1) + "|"]
    for p in cs.policies:
        cells = []
        for k, _ in have:
            v = cs.vec(p, k)
            cells.append(_f(float(np.nanmean(v))) if np.isfinite(v).any() else "n/a")
        L.append(f"| {p} | " + " | ".join(cells) + " |")
    for label in peer_labels:
        L.append(f"| {label} | " + " | ".join("n/a (Monte Carlo peer: paths not enumerated)" if i == 0 else ""
                                              for i in range(len(have))) + " |")
    return L


def _latency_table(cs: Cases, peer_rows, unit="ms") -> list:
    DEPTH = _specs("DEPTH")

    head = "| policy | " + " | ".join(f"w = {_g(w)}" for w in (0.0,) + PRICES) + " |"
    L = [head, "|---" * (len(PRICES) + 2) + "|"]
    for p in DEPTH + ("blinkered:2", "decision-region"):
        gross = _gains(cs, cs.cases, p)
        cells = []
        for w in (0.0,) + PRICES:
            v, m, lo, hi, share = verdict(gross, _gains(cs, cs.cases, p, price=w, unit=unit))
            cells.append(f"{v}: {_cell(m, lo, hi)}, {share:.0%} gain")
        L.append(f"| {p} | " + " | ".join(cells) + " |")
    for label in sorted({r["peer"] for r in peer_rows}):
        rs = [r for r in peer_rows if r["peer"] == label]
        cells = []
        for w in (0.0,) + PRICES:
            # POUCT's gain over one-step is a Monte Carlo estimate; its cost is its measured time (or simulations)
            g = []
            for r in rs:
                if unit == "ms":
                    mine = r["decision_ms_median"] * r["decisions_per_episode"]
                else:
                    mine = r["sims_per_decision"] * r["decisions_per_episode"] / 1000.0
                g.append(-r["diff_vs_onestep"] - w * mine + w * _time(cs, r["case"], "one-step", unit))
            cells.append(f"MC {_cell(*_ci(g))}")
        L.append(f"| {label} ({len(rs)} cases) | " + " | ".join(cells) + " |")
    return L


def _regime_table(reg) -> list:
    prices = (0.0,) + PRICES
    L = ["| knob | region | cases | non-myopic share [90% CI] | bounded - one-step gain [90% CI] | "
         + " | ".join(f"w = {_g(w)} / ms" for w in prices)
         + " | best cheap policy (share of the gain it captures) | bounded over it [90% CI] | "
           "blinkered:2 - bounded | decision-region - bounded | POUCT@10ms - bounded (MC, cases) |",
         "|---" * (len(prices) + 10) + "|"]
    for r in reg:
        sh = r["share"]
        share = "-" if sh is None else f"{_cell(sh[0], sh[1], sh[2])} ({sh[3]})"
        cells = []
        for w in prices:
            v = r["verdicts"].get(w)
            cells.append("-" if v is None else f"**{v[0]}** {_cell(v[1], v[2], v[3])}")
        if r["dimension"] == "model error":
            best = f"on the truth: {_cell(*r['truth_gain'])}, {r['truth_verdict']}"
            over = "-"
        else:
            best = f"{r['best_cheap']} ({_f(r['captured'])})"
            over = _cell(*r["over_best"])
        L.append(f"| {r['dimension']} | {r['region']} | {r['cases']} | {share} | {_cell(*r['gain'])} | "
                 + " | ".join(cells) + f" | {best} | {over} | {_cell(*r['blinkered'])} | {_cell(*r['region_dr'])} | "
                 f"{r['region_peer']} |")
    return L


def _model_table(cs: Cases, model_rows, peer_on: bool) -> list:
    CONSERVATIVE = _specs("CONSERVATIVE")
    MODEL_POLICIES = _specs("MODEL_POLICIES")

    pols = list(MODEL_POLICIES) + [f"conservative:{p}" for p in CONSERVATIVE]
    if peer_on:
        pols.append(PEER_MAIN)
    keys = sorted({(r["model"], r["param"]) for r in model_rows})
    L = ["Error cost = the policy's exact loss under the truth planning on the model minus the same policy "
         "planning on the truth (conservative rules: minus their base on the truth; POUCT: Monte Carlo, common "
         "random numbers). Mean over truths [90% CI].\n",
         "| model | truths | " + " | ".join(pols) + " |", "|---" * (len(pols) + 2) + "|"]
    for kind, param in keys:
        rs = [r for r in model_rows if r["model"] == kind and r["param"] == param]
        cells = []
        for p in pols:
            v = [r["error_cost"] for r in rs if r["policy"] == p and not math.isnan(r.get("error_cost", math.nan))]
            cells.append(_cell(*_ci(v)) if v else "n/a")
        label = f"lambda={param:g}" if kind == "scaled" else f"N={int(param)}"
        L.append(f"| {label} | {len({r['case'] for r in rs})} | " + " | ".join(cells) + " |")
    # does depth amplify error? lookahead:3 minus one-step error cost, Holm across models
    L += ["", "Depth and error: d = error cost of lookahead:3 (and bounded) minus one-step's, paired by truth; "
          "Wilcoxon signed-rank, Holm across the models.\n",
          "| model | mean d lookahead:3 [90% CI] | Holm p | mean d bounded [90% CI] | Holm p |", "|---|---|---|---|---|"]
    rows, pvals = [], []
    for kind, param in keys:
        rs = [r for r in model_rows if r["model"] == kind and r["param"] == param]
        by = {(r["case"], r["policy"]): r.get("error_cost", math.nan) for r in rs}
        cases = sorted({r["case"] for r in rs})
        ds = []
        for p in ("lookahead:3", "bounded"):
            d = np.array([by.get((c, p), math.nan) - by.get((c, "one-step"), math.nan) for c in cases], float)
            d = d[~np.isnan(d)]
            ds.append(d)
            pvals.append(wilcoxon_signed_rank(d).p_value if d.size else math.nan)
        rows.append(((kind, param), ds))
    pv = np.array(pvals, float)
    adj = np.full(pv.shape, math.nan)
    ok = ~np.isnan(pv)
    if ok.any():
        adj[ok] = holm(pv[ok])
    for i, ((kind, param), ds) in enumerate(rows):
        label = f"lambda={param:g}" if kind == "scaled" else f"N={int(param)}"
        L.append(f"| {label} | {_cell(*_ci(ds[0]))} | {_g(float(f'{adj[2 * i]:.3g}'))} | {_cell(*_ci(ds[1]))} | "
                 f"{_g(float(f'{adj[2 * i + 1]:.3g}'))} |")
    return L


def _frontier_table(frontier_rows) -> list:
    FRONTIER_POLICIES = _specs("FRONTIER_POLICIES")

    levels = []
    for r in frontier_rows:
        if r["calls_limit"] not in levels:
            levels.append(r["calls_limit"])
    L = []
    for wm in sorted({r["weight_multiplier"] for r in frontier_rows}):
        L += [f"Penalty weights x {wm:g}: mean exact loss over {len({r['case'] for r in frontier_rows})} "
              "instances by calls limit (V*: certified mean, or the interval's bounds).\n",
              "| policy | " + " | ".join(f"calls {lv}" for lv in levels) + " |", "|---" * (len(levels) + 1) + "|"]
        extra = tuple(sorted({r["policy"] for r in frontier_rows if r["policy"].startswith("pouct")}))
        for p in FRONTIER_POLICIES + extra + ("V*",):
            cells = []
            for lv in levels:
                rs = [r for r in frontier_rows if r["weight_multiplier"] == wm and r["calls_limit"] == lv
                      and r["policy"] == (p if p != "V*" else "none")]
                if p == "V*":
                    lo = np.mean([r["v_lo"] for r in rs])
                    up = np.mean([r["v_up"] for r in rs])
                    cells.append(_f(lo) if all(r["certified"] for r in rs) else f"[{_f(lo)}, {_f(up)}]")
                else:
                    cells.append(_f(float(np.nanmean([r["total_loss"] for r in rs]))) if rs else "n/a")
            L.append(f"| {p}{' (MC)' if p in extra else ''} | " + " | ".join(cells) + " |")
        L.append("")
    return L


def _computability_table(cs: Cases) -> list:
    bins = ((4, 8), (9, 16), (17, 28), (29, 40))
    L = ["| admitted | cases | V* certified by bounded at the root | by its exhaustive rerun | interval only | "
         "time to V* median / p95 / max (s) | stop quality computable (full-depth table fits) |",
         "|---|---|---|---|---|---|---|"]
    for lo, hi in bins:
        cases = [c for c in cs.cases if lo <= cs.knob(c, "admitted") <= hi]
        if not cases:
            continue
        src = [cs.first[c]["vstar_source"] for c in cases]
        t = np.array([float(cs.first[c]["t_vstar_s"]) for c in cases])
        sq = sum(bool(cs.first[c]["stop_quality_known"]) for c in cases)
        L.append(f"| {lo}-{hi} | {len(cases)} | {src.count('bounded')} | {src.count('exhaustive')} | "
                 f"{src.count('interval')} | {np.median(t):.2f} / {np.quantile(t, 0.95):.2f} / {t.max():.2f} | "
                 f"{sq} |")
    return L


def _peer_table(peer_rows, tuning) -> list:
    L = []
    if tuning:
        L.append(f"Exploration constant tuned on {tuning.get('cases', '?')} instances outside the study "
                 f"(generator seed 99), {tuning.get('episodes')} episodes each at {tuning.get('sims')} simulations "
                 f"per decision with one-step rollouts: multiplier of each case's loss range "
                 f"{_g(tuning.get('best'))}; mean total loss per multiplier: "
                 + ", ".join(f"{_g(k)}: {_f(v)}" for k, v in tuning.get("table", {}).items()) + ".\n")
    L += ["| configuration | cases | episodes | POUCT - ours (MC) [95% half-width mean] | against | "
          "POUCT - one-step (MC) | sims / decision | decision ms median / p95 | illegal |",
          "|---|---|---|---|---|---|---|---|---|"]
    for label in sorted({r["peer"] for r in peer_rows}):
        rs = [r for r in peer_rows if r["peer"] == label]
        d = np.array([r["diff_vs_ours"] for r in rs], float)
        d1 = np.array([r["diff_vs_onestep"] for r in rs], float)
        L.append(f"| {label} | {len(rs)} | {rs[0]['episodes']} | {_cell(*_ci(d))} "
                 f"[{_f(float(np.mean([r['diff_vs_ours_ci_half'] for r in rs])))}] | {rs[0]['against']} | "
                 f"{_cell(*_ci(d1))} | {_f(float(np.mean([r['sims_per_decision'] for r in rs])), 0)} | "
                 f"{_f(float(np.median([r['decision_ms_median'] for r in rs])), 2)} / "
                 f"{_f(float(np.quantile([r['decision_ms_p95'] for r in rs], 0.95)), 2)} | "
                 f"{sum(int(r['illegal_actions']) for r in rs)} |")
    return L


def add_error_costs(cs: Cases, model_rows, peer_truth=None) -> None:
    """Fill ``error_cost`` (loss on the model minus the same policy on the truth) and ``regret`` in place."""
    for r in model_rows:
        p = r["policy"]
        if p.startswith("pouct"):
            continue  # the peer's error cost is computed in its job, on common random numbers
        base = p.split(":", 1)[1] if p.startswith("conservative:") else p
        on_truth = cs.value(r["case"], base)
        r["on_truth"] = on_truth
        r["error_cost"] = r["loss"] - on_truth
        f = cs.first.get(r["case"])
        r["regret"] = r["loss"] - float(f["v_lo"]) if f is not None and f["certified"] else math.nan


def parse_rows(rows) -> list:
    """Rows read back from CSV (strings) as values: booleans, numbers, None for empty cells."""
    return [{k: _parse(v) for k, v in r.items()} for r in rows]


def render(case_rows, peer_rows, model_rows, frontier_rows, *, command, meta, peer_note, tuning=None,
           plots=(), plot_note=None, errors=None) -> str:
    """The report (markdown); rows as the jobs return them or as read back from the CSVs."""
    case_rows, peer_rows, model_rows, frontier_rows = (parse_rows(x) for x in (case_rows, peer_rows, model_rows,
                                                                                frontier_rows))
    cs = Cases(case_rows)
    add_error_costs(cs, model_rows)
    reg = regime_rows(cs, peer_rows, model_rows)
    L = ["# The depth study, second edition: when does option value justify planning depth?", ""]
    L += summary_lines(cs)
    L += ["", f"Command: `{command}`; " + "; ".join(f"{k} {v}" for k, v in meta.items()) + ".", ""]
    failed = [f"`{k}` ({e})" for k, e in sorted((errors or {}).items())]
    errs = sum(1 for r in cs.rows if r.get("error"))
    L += [f"Jobs that failed: {', '.join(failed) if failed else 'none'}; policy evaluations that failed: {errs}.",
          ""]
    L += _answer(cs, reg, peer_rows)
    L += ["", "## The regime map", "",
          "Depth = the default planner `bounded` against the one-step rule. Verdict per latency price w (loss "
          "units per ms of expected planning time per episode) with the mean net gain: **pays** (mean >= "
          f"{MATERIAL}, 90% interval above 0, more than half the cases gain), **no gain**, **latency**, "
          "**few cases**, **uncertain**, **model error** (rules at the end). Model-error rows: gains under the truth planning on "
          "the wrong model, at w = 0.", ""]
    L += _regime_table(reg)
    L += ["", "## Every policy", "", f"Exact, over the {sum(cs.certified(c) for c in cs.cases)} of {len(cs.cases)} "
          "cases with a certified V* (regret columns); mean J over all cases. POUCT rows are Monte Carlo on the "
          "peer cases.", ""]
    L += _policy_table(cs, peer_rows)
    L += ["", "## Evidence, escalation and stop quality", "", "Means over cases (probabilities over outcome paths "
          "and true states; stop quality against V* where the full-depth table fits).", ""]
    L += _metrics_table(cs, sorted({r["peer"] for r in peer_rows}))
    L += ["", "## Latency as a sweep", "", "Net gain over one-step at each price of planning time per ms "
          "(single-decision times), with the verdict and the share of cases that gain.", ""]
    L += _latency_table(cs, peer_rows)
    L += ["", "The same, priced per 1,000 search nodes (nodes the policy's searches expanded per episode):", ""]
    L += _latency_table(cs, peer_rows, unit="nodes")
    L += ["", "## Model error", ""]
    L += _model_table(cs, model_rows, any(r["policy"] == PEER_MAIN for r in model_rows)) if model_rows else ["None run."]
    L += ["", "## Loss against budget and penalty weight", ""]
    L += _frontier_table(frontier_rows) if frontier_rows else ["None run."]
    L += ["## Where the exact optimum stops being computable", ""]
    L += _computability_table(cs)
    L += ["", "## The sampling peer (POUCT)", ""]
    L += _peer_table(peer_rows, tuning) if peer_rows else [peer_note]
    unc = [c for c in cs.cases if not cs.certified(c)]
    L += ["", "## Cases without a certified optimum", ""]
    if not unc:
        L.append("None: every V* is certified (gap <= 1e-9).")
    else:
        L += ["| case | admitted | V* interval | J(one-step) |", "|---|---|---|---|"]
        for c in unc:
            f = cs.first[c]
            L.append(f"| {c} | {f['admitted']} | [{_f(float(f['v_lo']), 4)}, {_f(float(f['v_up']), 4)}] | "
                     f"{_f(cs.value(c, 'one-step'), 4)} |")
    L += ["", "## Plots", ""]
    L += [f"![{p}]({p})" for p in plots] if plots else [plot_note or "None."]
    L += ["", "## Rules", "", __doc__.split("The rules:", 1)[1].strip()]
    return "\n".join(L) + "\n"


def _answer(cs: Cases, reg, peer_rows) -> list:
    """The answer in a few sentences, from the regime rows."""
    allr = reg[0]
    v0 = allr["verdicts"][0.0]
    pays_at = [w for w in PRICES if allr["verdicts"][w][0] == "pays"]
    fails = [(r["dimension"], r["region"], r["verdicts"][0.0][0]) for r in reg if r["verdicts"][0.0][0] != "pays"]
    lat = [w for w in PRICES if allr["verdicts"][w][0] == "latency"]
    L = ["## The answer", ""]
    L.append(f"- Over all cases `bounded` gains {_cell(*allr['gain'])} over one-step at w = 0: **{v0[0]}** "
             f"({v0[4]:.0%} of cases gain)." if not math.isnan(v0[4]) else "- No cases.")
    if pays_at:
        L.append(f"- Priced per ms of planning it still pays up to w = {_g(max(pays_at))} loss units per ms.")
    else:
        L.append(f"- Priced per ms of planning it pays at none of the prices swept (from {_g(PRICES[0])} per ms: "
                 f"{allr['verdicts'][PRICES[0]][0]}).")
    if lat:
        L.append(f"- From w = {_g(min(lat))} per ms on, its gain no longer pays for its planning time (latency).")
    best = allr["best_cheap"]
    L.append(f"- The best cheap policy over all cases is `{best}`; it captures {_f(allr['captured'])} of bounded's "
             f"gain, and bounded is better than it by {_cell(*allr['over_best'])}.")
    if fails:
        L.append("- Regions where depth does not pay at w = 0: "
                 + "; ".join(f"{d} {r} ({v})" for d, r, v in fails) + ".")
    return L


# --------------------------------------------------------------------------
# plots


_COLOURS = {"pays": "#1a9850", "few cases": "#a6d96a", "latency": "#fdae61", "uncertain": "#fee08b",
            "no gain": "#d9d9d9",
            "model error": "#d73027", "n/a": "#ffffff"}


def _save(fig, path) -> None:
    """Render `fig` to PNG in memory and write the file whole (:func:`planner.io.atomic.write_bytes`)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=130)
    write_bytes(path, buf.getvalue())


def make_plots(case_rows, peer_rows, model_rows, frontier_rows, out_dir) -> tuple[list, str | None]:
    """Write the PNGs; ``(file names, note)``; without matplotlib ``([], note)``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        return [], "Plots skipped: matplotlib is not installed (pip install matplotlib)."
    from pathlib import Path

    DEPTH = _specs("DEPTH")
    FRONTIER_POLICIES = _specs("FRONTIER_POLICIES")

    out_dir = Path(out_dir)
    case_rows, peer_rows, model_rows, frontier_rows = (parse_rows(x) for x in (case_rows, peer_rows, model_rows,
                                                                                frontier_rows))
    cs = Cases(case_rows)
    add_error_costs(cs, model_rows)
    reg = regime_rows(cs, peer_rows, model_rows)
    files = []
    # 1. the regime map
    prices = (0.0,) + PRICES
    fig, ax = plt.subplots(figsize=(11, 0.32 * len(reg) + 1.6))
    for i, r in enumerate(reg):
        for j, w in enumerate(prices):
            v = r["verdicts"].get(w)
            if v is None:
                continue
            ax.add_patch(plt.Rectangle((j, i), 1, 1, color=_COLOURS.get(v[0].split(" (")[0], "#ffffff"),
                                       ec="white"))
            ax.text(j + 0.5, i + 0.5, _f(v[1], 2), ha="center", va="center", fontsize=7)
    ax.set_xlim(0, len(prices))
    ax.set_ylim(len(reg), 0)
    ax.set_xticks(np.arange(len(prices)) + 0.5, [_g(w) for w in prices])
    ax.set_yticks(np.arange(len(reg)) + 0.5, [f"{r['dimension']}: {r['region']} ({r['cases']})" for r in reg],
                  fontsize=7)
    ax.set_xlabel("latency price w (loss units per ms of planning)")
    ax.set_title("Does depth (bounded) pay over one-step? mean net gain per case", fontsize=10)
    ax.legend(handles=[Patch(color=c, label=k) for k, c in _COLOURS.items() if k != "n/a"], fontsize=7,
              loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    _save(fig, out_dir / "regime_map.png")
    plt.close(fig)
    files.append("regime_map.png")
    # 2. the latency sweep
    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs = np.array(PRICES)
    for p in DEPTH + ("blinkered:2", "decision-region"):
        ys, lo, hi = [], [], []
        for w in PRICES:
            m, a, b = _ci(_gains(cs, cs.cases, p, price=w))
            ys.append(m), lo.append(a), hi.append(b)
        ax.plot(xs, ys, marker="o", ms=3, label=p)
        ax.fill_between(xs, lo, hi, alpha=0.12)
    ax.axhline(MATERIAL, color="grey", lw=0.8, ls="--")
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=0.01)
    ax.set_xlabel("latency price w (loss units per ms)")
    ax.set_ylabel("mean net gain over one-step (90% CI)")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Net gain of each policy over one-step as planning time is priced", fontsize=10)
    fig.tight_layout()
    _save(fig, out_dir / "latency_sweep.png")
    plt.close(fig)
    files.append("latency_sweep.png")
    # 3. the frontier
    if frontier_rows:
        wms = sorted({r["weight_multiplier"] for r in frontier_rows})
        levels = []
        for r in frontier_rows:
            if r["calls_limit"] not in levels:
                levels.append(r["calls_limit"])
        fig, axes = plt.subplots(1, len(wms), figsize=(4.2 * len(wms), 4), sharey=False, squeeze=False)
        extra = tuple(sorted({r["policy"] for r in frontier_rows if r["policy"].startswith("pouct")}))
        for ax, wm in zip(axes[0], wms):
            for p in FRONTIER_POLICIES + extra:
                ys = [np.nanmean([r["total_loss"] for r in frontier_rows if r["weight_multiplier"] == wm
                                  and r["calls_limit"] == lv and r["policy"] == p]) for lv in levels]
                ax.plot(range(len(levels)), ys, marker="o", ms=3, label=p)
            ax.set_xticks(range(len(levels)), [str(lv) for lv in levels])
            ax.set_xlabel("calls limit")
            ax.set_title(f"penalty weights x {wm:g}", fontsize=9)
        axes[0][0].set_ylabel("mean exact expected total loss")
        axes[0][-1].legend(fontsize=6)
        fig.tight_layout()
        _save(fig, out_dir / "frontier.png")
        plt.close(fig)
        files.append("frontier.png")
    # 4. computability
    fig, ax = plt.subplots(figsize=(6, 4))
    for src, mk in (("bounded", "o"), ("exhaustive", "s"), ("interval", "x")):
        cases = [c for c in cs.cases if cs.first[c]["vstar_source"] == src]
        if cases:
            ax.scatter([cs.knob(c, "admitted") for c in cases], [float(cs.first[c]["t_vstar_s"]) for c in cases],
                       marker=mk, s=14, label=f"V* by {src} ({len(cases)})")
    ax.set_yscale("log")
    ax.set_xlabel("admitted observations")
    ax.set_ylabel("seconds to V* (or to give up)")
    ax.legend(fontsize=8)
    ax.set_title("Where the exact optimum stops being computable", fontsize=10)
    fig.tight_layout()
    _save(fig, out_dir / "computability.png")
    plt.close(fig)
    files.append("computability.png")
    return files, None


def _load(folder):
    """``(rows by CSV name, meta)`` of a run folder (a missing CSV: no rows)."""
    import json
    from pathlib import Path

    from studies.tables import read_csv

    folder = Path(folder)
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    names = ("cases.csv", "peer.csv", "model_error.csv", "frontier.csv")
    return [read_csv(folder / n) if (folder / n).exists() else [] for n in names], meta


#: The policy lists of the run being rendered, as ``meta.json`` recorded them (``study_specs``): a committed
#: run renders with the lists it was run with, whatever the registry declares today.
_RECORDED: dict = {}


def _specs(name: str) -> tuple:
    """The design's policy list `name` (``CHEAP``, ``DEPTH``, ...): the run's recorded one, else today's."""
    if name in _RECORDED:
        return tuple(_RECORDED[name])
    import studies.depth.design as design

    return tuple(getattr(design, name))


def recorded_specs() -> dict:
    """Today's policy lists, for a run's ``meta.json`` (``study_specs``)."""
    import studies.depth.design as design

    return {name: list(getattr(design, name)) for name in ("CHEAP", "DEPTH", "CONSERVATIVE", "MODEL_POLICIES",
                                                            "FRONTIER_POLICIES")}


def rerender(folder) -> str:
    """The report of a run folder rendered again from its CSVs and ``meta.json`` (it must equal ``report.md``)."""
    rows, meta = _load(folder)
    _RECORDED.clear()
    _RECORDED.update(meta.get("study_specs") or {})
    try:
        return _rerender(rows, meta)
    finally:
        _RECORDED.clear()


def _rerender(rows, meta) -> str:
    tuning = meta.get("tuning")
    if tuning:
        tuning = dict(tuning, table={float(k): v for k, v in tuning["table"].items()})
    return render(*rows, command=meta["command"], meta=meta["meta"], peer_note=meta["peer_note"], tuning=tuning,
                  plots=meta["plots"], plot_note=meta["plot_note"], errors=meta.get("errors"))


def render_folder(folder) -> list:
    """Write ``report.md`` and the plots of a run folder again from its CSVs and ``meta.json``; the files written.

    For a report whose rendering code changed after its run: the numbers come
    from the same rows. ``python -m studies.depth.report FOLDER``.
    """
    from pathlib import Path

    from planner.io.atomic import write_text

    folder = Path(folder)
    rows, meta = _load(folder)
    files = make_plots(*rows, folder)[0] if meta["plots"] else []
    write_text(folder / "report.md", rerender(folder))
    return files + ["report.md"]


if __name__ == "__main__":  # pragma: no cover - a maintenance entry point
    import sys

    print(", ".join(render_folder(sys.argv[1])))
