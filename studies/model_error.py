"""Model error, measured: does planning depth amplify likelihood error, and where? (issue 14, item 3)

    python3 -m studies.model_error [--quick] [--out studies/results/model_error] [--workers 2]

Truths: the first edition's families (``prerequisite``, ``unreliable_prereq``,
``complementary``, ``heterogeneous``, ``exact_lookup``; budget ``medium``; the
study's caller) and a few ``wide_domain(seed, instance)`` cases whose
``bounded`` optimum evaluates within ``WIDE_MAX_S`` seconds (the others are
skipped, counted and reported).

Models the policies plan on, every loss scored exactly under the truth
(``planner.evaluation.evaluate.expected_loss_under``):

- **scaled**: every likelihood row's log-odds multiplied by lambda in
  ``LAMBDAS`` (all sources alike; lambda < 1 under-, lambda > 1 overconfident;
  lambda = 1 is the truth);
- **estimated**: N in ``NS`` sessions of a historical ``top-k:3`` rule planning
  on the truth, every session resolved, written to and read back from a real
  SQLite log (studies/calibration.py's ``_simulate``), then ``calibrate`` (EM,
  default prior strength) with the calibration benchmark's wrong declared
  domain (``wrong``: log-odds x2 for establishing sources, x0.5 for the
  others) as the prior; ``SEEDS`` seeds. Planned on the posterior mean, and
  conservatively (``conservative:one-step``, ``conservative:bounded``).

The model-error cost of a policy is its loss under the truth planning on the
model minus the same policy's loss planning on the truth (for the
conservative rule: minus its base policy's loss on the truth).
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import math
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

import planner  # noqa: E402
from studies.calibration import _simulate, wrong  # noqa: E402
from planner.calibration.calibrate import PRIOR_STRENGTH, CalibrationError, calibrate, calibrated_data  # noqa: E402
from planner.model.caller import Caller  # noqa: E402
from planner.compile import compile_domain  # noqa: E402
from planner.evaluation.evaluate import evaluate_policy, expected_loss_under  # noqa: E402
from studies.families import STUDY_PURPOSE, SUBJECT_ENTITLEMENTS, family_domain  # noqa: E402
from studies.distort import scaled  # noqa: E402
from studies.wide import wide_domain  # noqa: E402
from studies.stats import cluster_bootstrap, holm, wilcoxon_signed_rank  # noqa: E402

FAMS = ("prerequisite", "unreliable_prereq", "complementary", "heterogeneous", "exact_lookup")
LAMBDAS = (0.5, 0.75, 1.5, 2.0)
NS = (10, 20, 50, 100, 500)
SEEDS = 3
POLICIES = ("one-step", "lookahead:2", "lookahead:3", "bounded", "dependency", "blinkered:2", "decision-region")
CONSERVATIVE = ("one-step", "bounded")
HISTORICAL = "top-k:3"
WIDE_MAX_S = 2.0
N_BOOT = 2000
EQ = 1e-9  # differences below this count as ties (exact float noise)


def _caller():
    return Caller(entitlements=list(SUBJECT_ENTITLEMENTS), purpose=STUDY_PURPOSE)


def _truth(kind: str, a: int, b: int) -> tuple[str, str, dict]:
    """``(family, instance label, truth data)``: a first-edition family instance or a wide case."""
    if kind == "wide":
        d = wide_domain(a, b)
        label = f"s{a}-i{b}"
        fam = "wide"
    else:
        d = family_domain(kind, a, "medium")
        label = str(a)
        fam = kind
    return fam, label, {k: v for k, v in d.items() if k != "checks"}


def _loss(model, truth, spec, caller) -> tuple[float, str, float]:
    t0 = time.perf_counter()
    try:
        return expected_loss_under(model, truth, spec, caller), "", time.perf_counter() - t0
    except planner.errors.PlannerError as e:
        return float("nan"), str(e).splitlines()[0][:200], time.perf_counter() - t0


def screen(args):
    """One truth: time `bounded` (wide cases only), then every policy's loss planning on the truth itself."""
    kind, a, b = args
    fam, label, data = _truth(kind, a, b)
    caller = _caller()
    truth = planner.Domain.from_dict(data)
    t0 = time.perf_counter()
    try:
        evaluate_policy(truth, "bounded", caller)
        bounded_s, err = time.perf_counter() - t0, ""
    except planner.errors.PlannerError as e:
        bounded_s, err = time.perf_counter() - t0, str(e).splitlines()[0][:200]
    if err or (fam == "wide" and bounded_s > WIDE_MAX_S):
        return dict(key=args, family=fam, instance=label, skipped=True, bounded_s=bounded_s, error=err)
    own = {}
    for p in POLICIES:
        own[p] = _loss(truth, truth, p, caller)[0]
    optimum = own["bounded"]
    none = _loss(truth, truth, "none", caller)[0]
    return dict(key=args, family=fam, instance=label, skipped=False, bounded_s=bounded_s, own=own,
                optimum=optimum, none=none, n_obs=len(data["observations"]))


def job(args):
    """One (truth, model): every policy's loss under the truth planning on the model."""
    key, fam, label, own, optimum, model_kind, param, seed = args
    kind, a, b = key
    _, _, data = _truth(kind, a, b)
    caller = _caller()
    truth = planner.Domain.from_dict(data)
    base = dict(family=fam, instance=label, model=model_kind, param=param, seed=seed, optimum=optimum)
    rows = []
    t0 = time.perf_counter()
    if model_kind == "scaled":
        model = planner.Domain.from_dict(scaled(data, param))
        specs = [(p, p) for p in POLICIES]
        prep = dict()
    else:
        declared = planner.Domain.from_dict(wrong(data))
        tc = compile_domain(truth)
        sessions = _simulate(tc, tc, int(param), seed, caller, None, HISTORICAL)
        try:
            res = calibrate(declared, sessions, method="em", seed=seed, prior_strength=PRIOR_STRENGTH)
        except CalibrationError as e:
            return [dict(base, policy="", error=f"calibration: {e}")]
        model = planner.Domain.from_dict(calibrated_data(res, date="2026-12-01"))
        specs = [(p, p) for p in POLICIES] + [(f"conservative:{p}", p) for p in CONSERVATIVE]
        prep = dict(used=res.used)
    prep_s = time.perf_counter() - t0
    for spec, basep in specs:
        j, err, s = _loss(model, truth, spec, caller)
        rows.append(dict(base, policy=spec, loss=j, on_truth=own[basep], error_cost=j - own[basep],
                         regret=j - optimum, eval_s=s, prep_s=prep_s, error=err, **prep))
    return rows


def candidates(quick: bool):
    inst = range(2) if quick else range(6)
    fam = [(f, i, 0) for f in FAMS for i in inst]
    wide = [("wide", s, i) for s in (range(2) if quick else range(3)) for i in (range(2) if quick else range(4))]
    return fam + wide


FIELDS = ["family", "instance", "model", "param", "seed", "policy", "loss", "on_truth", "error_cost", "regret",
          "optimum", "used", "prep_s", "eval_s", "error"]


# --------------------------------------------------------------------------
# the report


def _f(x, nd=3):
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def _ci(vals, clusters, seed=0):
    est, lo, hi = cluster_bootstrap(np.asarray(vals, float), np.asarray(clusters), np.mean, n_boot=N_BOOT, seed=seed)
    return est, lo, hi


def _cell(est, lo, hi):
    if math.isnan(lo):
        return f"{_f(est)}"
    return f"{_f(est)} [{_f(lo)}, {_f(hi)}]"


def _rowkey(model, param):
    return f"lambda={param:g}" if model == "scaled" else f"N={int(param)}"


def _cluster_means(rows, policy):
    """{cluster: mean error cost over seeds} of `policy` (NaN rows dropped)."""
    acc = {}
    for r in rows:
        if r.get("policy") == policy and not math.isnan(r["error_cost"]):
            acc.setdefault((r["family"], r["instance"]), []).append(r["error_cost"])
    return {k: float(np.mean(v)) for k, v in acc.items()}


def write_report(rows, screened, out: Path, meta: dict) -> dict:
    ok = [r for r in rows if r.get("policy") and not math.isnan(r.get("loss", float("nan")))]
    failed = [r for r in rows if r.get("error")]
    groups = [("scaled", lam) for lam in LAMBDAS] + [("estimated", n) for n in NS]
    all_pols = list(POLICIES) + [f"conservative:{p}" for p in CONSERVATIVE]
    kept = [s for s in screened if not s["skipped"]]
    skipped = [s for s in screened if s["skipped"]]

    # mean error cost per row x policy, cluster bootstrap over (family, instance)
    table = {}
    for g in groups:
        sub = [r for r in ok if (r["model"], r["param"]) == g]
        for p in all_pols:
            rs = [r for r in sub if r["policy"] == p]
            if rs:
                table[g, p] = _ci([r["error_cost"] for r in rs], [f"{r['family']}/{r['instance']}" for r in rs])

    # amplification: paired lookahead:3 vs one-step, instance level (seeds averaged), Wilcoxon + Holm
    amp = []
    for g in groups:
        sub = [r for r in ok if (r["model"], r["param"]) == g]
        l3, o1 = _cluster_means(sub, "lookahead:3"), _cluster_means(sub, "one-step")
        bd = _cluster_means(sub, "bounded")
        keys = sorted(set(l3) & set(o1))
        d = np.array([l3[k] - o1[k] for k in keys])
        d = np.where(np.abs(d) < EQ, 0.0, d)
        w = wilcoxon_signed_rank(d)
        est, lo, hi = _ci(d, [f"{k[0]}/{k[1]}" for k in keys]) if keys else (math.nan,) * 3
        kb = sorted(set(bd) & set(o1))
        db = np.array([bd[k] - o1[k] for k in kb])
        amp.append(dict(g=g, n=len(keys), est=est, lo=lo, hi=hi, p=w.p_value, nz=w.n, method=w.method,
                        up=int((d > 0).sum()), down=int((d < 0).sum()), bd=float(db.mean()) if kb.__len__() else math.nan,
                        diffs={k: float(v) for k, v in zip(keys, d)}))
    adj = holm([a["p"] for a in amp])
    for a, q in zip(amp, adj):
        a["p_holm"] = float(q)

    # per family: mean (lookahead:3 - one-step) error cost
    fams = sorted({k[0] for a in amp for k in a["diffs"]}, key=lambda f: (f == "wide", f))
    fam_tab = {}
    for a in amp:
        for f in fams:
            v = [x for k, x in a["diffs"].items() if k[0] == f]
            fam_tab[a["g"], f] = (float(np.mean(v)) if v else math.nan, len(v))
    best = max(((fam_tab[g, f][0], g, f) for g in groups for f in fams if not math.isnan(fam_tab[g, f][0])),
               default=(math.nan, None, None))
    fam_overall = {f: float(np.nanmean([fam_tab[g, f][0] for g in groups])) for f in fams}
    top_fam = max(fam_overall, key=lambda f: fam_overall[f]) if fam_overall else None

    sig = [a for a in amp if a["p_holm"] <= 0.05]
    sig_up = [a for a in sig if a["est"] > 0]
    sig_down = [a for a in sig if a["est"] < 0]
    worst_l = max((a for a in amp if a["g"][0] == "scaled"), key=lambda a: a["est"])
    worst_n = max((a for a in amp if a["g"][0] == "estimated"), key=lambda a: a["est"])
    o1 = {g: table.get((g, "one-step"), (math.nan,) * 3) for g in groups}
    l3 = {g: table.get((g, "lookahead:3"), (math.nan,) * 3) for g in groups}

    L = []
    L.append("# Model error: does depth amplify likelihood error? (issue 14, item 3)")
    L.append("")
    L.append(f"Command: `{meta['command']}`; wall time {meta['wall_s']:.0f} s ({meta['wall_s'] / 60:.1f} min); "
             f"{meta['jobs']} jobs; {meta['date']}; {meta['machine']}.")
    L.append("")
    L.append("## Finding")
    L.append("")
    rows_up = ", ".join(_rowkey(*a["g"]) for a in sig_up) or "none"
    rows_down = ", ".join(_rowkey(*a["g"]) for a in sig_down) or "none"
    L.append(
        f"Across {len(kept)} truths, lookahead:3's model-error cost minus one-step's is largest at "
        f"{_rowkey(*worst_l['g'])} among the scaled models ({_f(worst_l['est'])} [{_f(worst_l['lo'])}, {_f(worst_l['hi'])}]; "
        f"one-step {_f(o1[worst_l['g']][0])}, lookahead:3 {_f(l3[worst_l['g']][0])}) and at {_rowkey(*worst_n['g'])} "
        f"among the estimated ones ({_f(worst_n['est'])} [{_f(worst_n['lo'])}, {_f(worst_n['hi'])}]); "
        f"after Holm correction over the {len(amp)} rows the paired difference is significantly positive "
        f"(depth amplifies) in: {rows_up}, and significantly negative (depth is more robust) in: {rows_down}.")
    if best[1] is not None and fam_overall[top_fam] <= 0:
        L.append("No family shows amplification on average over the rows (largest family mean "
                 f"`{top_fam}` {_f(fam_overall[top_fam])}).")
    elif best[1] is not None:
        L.append(
            f"Amplification concentrates in `{top_fam}` (mean over rows {_f(fam_overall[top_fam])}); the single largest "
            f"family-row mean is `{best[2]}` at {_rowkey(*best[1])} ({_f(best[0])}).")
    pos = [a for a in amp if a["est"] > 0]
    raw = [a for a in amp if a["p"] <= 0.05]
    win = [g for g in groups if all(
        np.mean([r["regret"] for r in ok if (r["model"], r["param"]) == g and r["policy"] == "bounded"])
        <= np.mean([r["regret"] for r in ok if (r["model"], r["param"]) == g and r["policy"] == q]) + EQ
        for q in POLICIES)]
    L.append(f"The mean difference is positive in {len(pos)} of {len(amp)} rows (raw Wilcoxon p <= 0.05 in {len(raw)}: "
             + (", ".join(f"{_rowkey(*a['g'])} p={a['p']:.3g}, Holm {a['p_holm']:.3g}" for a in raw) or "none")
             + f"); planning on the same wrong model, `bounded` has the lowest mean regret against the true "
             f"optimum of the non-conservative policies in {len(win)} of {len(groups)} rows"
             + (": the amplified error does not cost depth its lead." if len(win) == len(groups) else
                " (not in: " + ", ".join(_rowkey(*g) for g in groups if g not in win) + ")."))
    est_rows = [g for g in groups if g[0] == "estimated"]
    L.append(
        f"Estimated from logs, bounded's error cost falls from {_f(table.get((est_rows[0], 'bounded'), (math.nan,))[0])} "
        f"at {_rowkey(*est_rows[0])} to {_f(table.get((est_rows[-1], 'bounded'), (math.nan,))[0])} at "
        f"{_rowkey(*est_rows[-1])} (one-step: {_f(o1[est_rows[0]][0])} to {_f(o1[est_rows[-1]][0])}); "
        f"conservative:bounded {_f(table.get((est_rows[0], 'conservative:bounded'), (math.nan,))[0])} to "
        f"{_f(table.get((est_rows[-1], 'conservative:bounded'), (math.nan,))[0])}.")
    L.append("")
    L.append("## Setup")
    L.append("")
    fam_counts = {}
    for s in kept:
        fam_counts[s["family"]] = fam_counts.get(s["family"], 0) + 1
    L.append("- Truths kept: " + ", ".join(f"`{f}` {c}" for f, c in fam_counts.items()) + f" ({len(kept)} in all; "
             f"first-edition families at budget medium with caller entitlements {list(SUBJECT_ENTITLEMENTS)}, "
             f"purpose `{STUDY_PURPOSE}`).")
    sk = ", ".join(f"{s['family']} {s['instance']} ({s['bounded_s']:.1f} s{'; ' + s['error'] if s.get('error') else ''})"
                   for s in skipped) or "none"
    L.append(f"- Skipped: {len(skipped)} of {len(screened)} candidates (wide cases whose `bounded` evaluation took "
             f"more than {WIDE_MAX_S:g} s, or failed): {sk}.")
    L.append(f"- Scaled models: lambda in {list(LAMBDAS)}, every likelihood row's log-odds x lambda, all sources alike.")
    L.append(f"- Estimated models: N in {list(NS)} sessions of `{HISTORICAL}` planning on the truth, every session "
             f"resolved, through a real SQLite log; `calibrate` (EM, prior strength {PRIOR_STRENGTH:g}) with "
             f"studies/calibration.py's `wrong` declared domain as the prior (log-odds x2 establishing, x0.5 others); "
             f"{SEEDS} seeds; planned on the posterior mean and with `conservative:one-step`/`conservative:bounded`.")
    L.append("- Error cost = exact loss under the truth of the policy planning on the model minus the same policy "
             "planning on the truth (conservative rules: minus their base policy on the truth). Positive = the "
             "model error costs that much expected loss.")
    L.append(f"- Intervals: 90% cluster bootstrap over instances (clusters = (family, instance), {N_BOOT} resamples; "
             "seeds of one instance stay together).")
    L.append(f"- Evaluations that failed (NaN, left out of every mean): {len(failed)}"
             + (": " + "; ".join(sorted({r['error'][:90] for r in failed})[:5]) if failed else "") + ".")
    L.append("")
    L.append("## Mean model-error cost by model and policy (90% cluster-bootstrap interval)")
    L.append("")
    L.append("| model | " + " | ".join(all_pols) + " |")
    L.append("|---|" + "---|" * len(all_pols))
    for g in groups:
        L.append(f"| {_rowkey(*g)} | " + " | ".join(_cell(*table[g, p]) if (g, p) in table else "" for p in all_pols) + " |")
    L.append("")
    L.append("Mean regret against the true optimum (loss on the model minus `bounded` on the truth):")
    L.append("")
    L.append("| model | " + " | ".join(all_pols) + " |")
    L.append("|---|" + "---|" * len(all_pols))
    for g in groups:
        cells = []
        for p in all_pols:
            v = [r["regret"] for r in ok if (r["model"], r["param"]) == g and r["policy"] == p]
            cells.append(_f(float(np.mean(v))) if v else "")
        L.append(f"| {_rowkey(*g)} | " + " | ".join(cells) + " |")
    own_reg = {p: float(np.mean([s["own"][p] - s["optimum"] for s in kept])) for p in POLICIES}
    L.append("| truth (lambda=1) | " + " | ".join(_f(own_reg[p]) if p in own_reg else "" for p in all_pols) + " |")
    L.append("")
    L.append("## Does depth amplify error? lookahead:3 minus one-step error cost, paired by instance")
    L.append("")
    L.append("Per instance (seeds averaged), d = error cost of lookahead:3 - error cost of one-step; Wilcoxon "
             f"signed-rank (two-sided, |d| < {EQ:g} counted as 0 and dropped), Holm across the {len(amp)} rows. "
             "The last column is the same mean for bounded.")
    L.append("")
    L.append("| model | instances | mean d [90% CI] | d > 0 / d < 0 | Wilcoxon p | Holm p | bounded - one-step |")
    L.append("|---|---|---|---|---|---|---|")
    for a in amp:
        L.append(f"| {_rowkey(*a['g'])} | {a['n']} | {_cell(a['est'], a['lo'], a['hi'])} | {a['up']} / {a['down']} | "
                 f"{a['p']:.3g} ({a['method']}) | {a['p_holm']:.3g} | {_f(a['bd'])} |")
    L.append("")
    L.append("## Where: mean d (lookahead:3 - one-step error cost) per family")
    L.append("")
    L.append("| model | " + " | ".join(f"{f} (n={max(fam_tab[g, f][1] for g in groups)})" for f in fams) + " |")
    L.append("|---|" + "---|" * len(fams))
    for g in groups:
        L.append(f"| {_rowkey(*g)} | " + " | ".join(_f(fam_tab[g, f][0]) for f in fams) + " |")
    L.append("| mean over rows | " + " | ".join(_f(fam_overall[f]) for f in fams) + " |")
    L.append("")
    L.append("Raw rows: `model_error.csv` (one row per truth x model x seed x policy).")
    (out / "report.md").write_text("\n".join(L) + "\n")
    return dict(amp=amp, table=table)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "studies" / "results" / "model_error"))
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    global NS, SEEDS
    if args.quick:
        NS, SEEDS = (10, 100), 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    rows = []
    with ProcessPoolExecutor(args.workers) as pool:
        screened = list(pool.map(screen, candidates(args.quick), chunksize=1))
        todo = []
        for s in screened:
            if s["skipped"]:
                continue
            for lam in LAMBDAS:
                todo.append((s["key"], s["family"], s["instance"], s["own"], s["optimum"], "scaled", lam, 0))
            for n in NS:
                for seed in range(SEEDS):
                    todo.append((s["key"], s["family"], s["instance"], s["own"], s["optimum"], "estimated", n, seed))
        done = 0
        for r in pool.map(job, todo, chunksize=1):
            rows.extend(r)
            done += 1
            if done % 25 == 0 or done == len(todo):
                print(f"{done}/{len(todo)} jobs, {time.time() - start:.0f} s", flush=True)
    wall = time.time() - start
    with open(out / "model_error.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})
        for s in screened:  # the truths themselves: each policy on the truth, and the skipped candidates
            base = dict(family=s["family"], instance=s["instance"], model="truth", param=1.0, seed="",
                        prep_s=s["bounded_s"])
            if s["skipped"]:
                w.writerow({k: v for k, v in dict(base, error=f"skipped: bounded took {s['bounded_s']:.2f} s "
                                                   f"{s.get('error', '')}".strip()).items() if k in FIELDS})
                continue
            for p in POLICIES:
                w.writerow({k: dict(base, policy=p, loss=s["own"][p], on_truth=s["own"][p], error_cost=0.0,
                                    regret=s["own"][p] - s["optimum"], optimum=s["optimum"]).get(k, "") for k in FIELDS})
    cmd = "python3 -m studies.model_error" + (" --quick" if args.quick else "") + f" --workers {args.workers}"
    meta = dict(command=cmd, wall_s=wall, date=_dt.date.today().isoformat(), jobs=len(todo) + len(screened),
                machine=f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    write_report(rows, screened, out, meta)
    print(f"{len(todo)} jobs in {wall:.0f} s; wrote {out}/model_error.csv and {out}/report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
