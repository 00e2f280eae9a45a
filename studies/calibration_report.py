"""The calibration measurement's report (``studies/calibration.py`` writes the rows; this writes report.md).

Every number is computed from the rows; nothing is typed in. Intervals over
seeds are t intervals (90%) of the mean; a difference "pays" or "costs" only
when its whole interval is on one side of 0.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np

# Two-sided 90% t quantiles by degrees of freedom (scipy is not a dependency).
_T90 = {1: 6.314, 2: 2.920, 3: 2.353, 4: 2.132, 5: 2.015, 6: 1.943, 7: 1.895, 8: 1.860, 9: 1.833, 10: 1.812,
        11: 1.796, 12: 1.782, 13: 1.771, 14: 1.761, 15: 1.753, 16: 1.746, 17: 1.740, 18: 1.734, 19: 1.729}


def interval(values) -> tuple:
    """``(mean, lower, upper)``: the 90% t interval of the mean (the mean alone for one value)."""
    v = np.array([x for x in values if not (isinstance(x, float) and math.isnan(x))], dtype=float)
    if len(v) == 0:
        return (float("nan"),) * 3
    m = float(v.mean())
    if len(v) == 1:
        return m, m, m
    h = _T90.get(len(v) - 1, 1.645) * float(v.std(ddof=1)) / math.sqrt(len(v))
    return m, m - h, m + h


def _f(x, nd=3) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{nd}f}"


def _iv(t, nd=3) -> str:
    m, lo, hi = t
    return f"{_f(m, nd)} [{_f(lo, nd)}, {_f(hi, nd)}]"


def _verdict(t) -> str:
    m, lo, hi = t
    if math.isnan(m):
        return "n/a"
    if hi < -1e-9:
        return "pays"
    if lo > 1e-9:
        return "costs"
    return "no clear difference"


def _group(rows, *keys):
    out = defaultdict(list)
    for r in rows:
        out[tuple(r[k] for k in keys)].append(r)
    return out


def meta_default(rows) -> float:
    """The prior strength of the measurement rows (the library's default when the run was made)."""
    return next(float(r["strength"]) for r in rows if r["part"] == "measurement")


def summary(rows) -> dict:
    """The figures the README quotes (also printed at the top of the report)."""
    acc_all = [r for r in rows if r["part"] == "acceptance"]
    strengths = sorted({float(r["strength"]) for r in acc_all})
    default = float(meta_default(rows))
    acc = [r for r in acc_all if float(r["strength"]) == default]
    out = {"strengths": strengths, "default": default}
    for strength in strengths:
        for regime in ("all", "selective"):
            for method in ("em", "resolved"):
                sel = [r for r in acc_all if r["what"] == "calibration" and r["regime"] == regime
                       and r["method"] == method and float(r["strength"]) == strength]
                if sel:
                    n, k = sum(r["rows"] for r in sel), sum(r["covered"] for r in sel)
                    out[(regime, method, strength)] = (k, n, len(sel))
    loss = [r for r in acc if r["what"] == "loss" and r["regime"] == "all"]
    by = _group(loss, "method", "policy")
    out["loss"] = {k: interval([r["loss"] for r in v]) for k, v in by.items()}
    out["optimum"] = interval([r["optimum"] for r in loss])
    return out


def _by_n(loss, ns, pols, field) -> list:
    """Rows N x (model, policy): the mean of `field` over cases, its 90% interval over seeds."""
    shown = [("declared", p) for p in pols if not p.startswith("conservative")] + [("em", p) for p in pols]
    out = ["| N | " + " | ".join(f"{m} {p}" for m, p in shown) + " |", "|---|" + "---|" * len(shown)]
    for n in ns:
        cells = []
        for method, p in shown:
            g = [r for r in loss if r["n"] == n and r["method"] == method and r["policy"] == p]
            per_seed = [np.mean([r[field] for r in v]) for v in _group(g, "seed").values()]
            cells.append(_iv(interval(per_seed)))
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    return out


def write(rows, folder, meta) -> None:
    folder = Path(folder)
    L = []
    L.append("# Calibration from logs: how close it gets, and what plans on each model lose under the truth")
    L.append("")
    L.append(f"Command: `{meta['command']}` ({meta['jobs']} jobs, wall time {meta['wall_s']:.0f} s, "
             f"{meta['date']}, {meta['machine']}). Every session is simulated into a real SQLite outcome log "
             "and read back (`planner simulate-log`'s and `planner calibrate`'s code); every loss is exact "
             "(`planner.evaluation.evaluate.expected_loss_under`: the policy decides on its model, outcomes happen with "
             "the true domain's probabilities). Intervals are 90% t intervals over seeds.")
    L.append("")
    s = summary(rows)
    # ---------------------------------------------------------------- acceptance
    L.append("## 1. The payment case (acceptance)")
    L.append("")
    L.append("Truth: `domains/truth/payment_release.yaml` (registry error 10%, declared 1%; manager message "
             "0.95 / 0.05, declared 0.80 / 0.35). 1,000 sessions of a legacy `top-k:2` rule planning on the "
             "declared domain per seed. Rows with data: the registry's and the message's (4 rows).")
    L.append("")
    L.append("| prior strength | resolution | method | rows covered by the 90% interval | seeds |")
    L.append("|---:|---|---|---:|---:|")
    for strength in s["strengths"]:
        for regime, label in (("all", "every session"), ("selective", "released payments only")):
            for method in ("em", "resolved"):
                if (regime, method, strength) in s:
                    k, n, seeds = s[(regime, method, strength)]
                    mark = " (default)" if strength == s["default"] else ""
                    L.append(f"| {strength:g}{mark} | {label} | {method} | {k} / {n} ({100 * k / n:.1f}%) | {seeds} |")
    L.append("")
    L.append(f"Below: prior strength {s['default']:g} (the default).")
    L.append("")
    acc = [r for r in rows if r["part"] == "acceptance" and r["what"] == "calibration" and r["regime"] == "selective"
           and float(r["strength"]) == s["default"]]
    bias = defaultdict(lambda: defaultdict(list))
    for r in acc:
        for item in r["bias"].split(";") if r["bias"] else []:
            key, val = item.split("=")
            bias[key][r["method"]].append(float(val))
    if bias:
        L.append("Signed error of each row's first outcome (calibrated - true), released payments only resolved:")
        L.append("")
        L.append("| row | EM (every session) | counting resolved sessions only |")
        L.append("|---|---|---|")
        for key in sorted(bias):
            L.append(f"| {key} | {_iv(interval(bias[key]['em']), 4)} | {_iv(interval(bias[key]['resolved']), 4)} |")
        L.append("")
    L.append("Exact expected total loss under the truth (mean over seeds, every session resolved):")
    L.append("")
    L.append("| model | policy | loss under the truth |")
    L.append("|---|---|---|")
    for (method, policy), t in sorted(s["loss"].items()):
        L.append(f"| {method} | {policy} | {_iv(t)} |")
    L.append(f"| the true domain itself | bounded (the optimum) | {_f(s['optimum'][0])} |")
    L.append("")
    # ---------------------------------------------------------------- measurement: calibration
    meas = [r for r in rows if r["part"] == "measurement"]
    L.append("## 2. Calibration quality (measurement, every session resolved)")
    L.append("")
    L.append("Coverage: rows with data whose 90% interval holds the true row (all outcomes), summed over seeds; "
             "error: the mean over rows of the largest |calibrated - true| of the row, mean over seeds.")
    L.append("")
    cal = [r for r in meas if r["what"] == "calibration" and r["regime"] == "all"]
    ns = sorted({r["n"] for r in cal})
    L.append("| case | " + " | ".join(f"N={n} coverage | N={n} error" for n in ns) + " |")
    L.append("|---|" + "---:|---:|" * len(ns))
    by = _group(cal, "case", "n")
    for case in dict.fromkeys(r["case"] for r in cal):
        cells = []
        for n in ns:
            g = by.get((case, n), [])
            k, m = sum(r["covered"] for r in g), sum(r["rows"] for r in g)
            cells += [f"{k}/{m} ({100 * k / m:.0f}%)" if m else "n/a", _f(interval([r["mean_abs_err"] for r in g])[0])]
        L.append(f"| {case} | " + " | ".join(cells) + " |")
    tot = {n: (sum(r["covered"] for r in cal if r["n"] == n), sum(r["rows"] for r in cal if r["n"] == n)) for n in ns}
    L.append("| **all** | " + " | ".join(f"{k}/{m} ({100 * k / m:.0f}%) | " if m else "n/a | "
                                          for n, (k, m) in tot.items()).rstrip(" |") + " |")
    L.append("")
    # ---------------------------------------------------------------- measurement: loss
    loss = [r for r in meas if r["what"] == "loss" and r["regime"] == "all"]
    L.append("## 3. Regret under the truth, by depth and model")
    L.append("")
    L.append("Regret = exact expected total loss under the truth minus the true domain's optimum (bounded on the "
             "truth), mean over cases and seeds [90% interval over seeds of the case-mean]. `declared`: planned on "
             "the wrong declared likelihoods; `em`: on the calibrated posterior mean; `conservative:P`: P on the "
             "calibrated domain, acquiring only when the lower 5% quantile of the value over posterior draws beats "
             "the cost.")
    L.append("")
    pols = list(dict.fromkeys(r["policy"] for r in loss if r["method"] == "em"))
    L += _by_n(loss, ns, pols, "regret")
    L.append("")
    L.append("**Does depth amplify likelihood error?** The cost of the model error alone, by depth: the loss "
             "under the truth of a policy planning on the model minus the same policy planning on the truth "
             "(conservative rows: against their base on the truth). Mean over cases [90% interval over seeds].")
    L.append("")
    L += _by_n(loss, ns, pols, "error_cost")
    L.append("")
    L.append("Per case (mean regret over seeds; N = 1000 and N = 20):")
    L.append("")
    for n in (ns[-1], ns[0]):
        L.append(f"N = {n}:")
        L.append("")
        L.append("| case | " + " | ".join(f"declared {p}" for p in pols if not p.startswith("conservative"))
                 + " | " + " | ".join(f"em {p}" for p in pols) + " |")
        L.append("|---|" + "---:|" * (len([p for p in pols if not p.startswith("conservative")]) + len(pols)))
        for case in dict.fromkeys(r["case"] for r in loss):
            cells = []
            for method in ("declared", "em"):
                for p in pols:
                    if method == "declared" and p.startswith("conservative"):
                        continue
                    g = [r["regret"] for r in loss if r["case"] == case and r["n"] == n and r["method"] == method
                         and r["policy"] == p]
                    cells.append(_f(float(np.mean(g))) if g else "n/a")
            L.append(f"| {case} | " + " | ".join(cells) + " |")
        L.append("")
    # ---------------------------------------------------------------- conservative minus mean
    L.append("## 4. Where conservatism pays and where it costs")
    L.append("")
    L.append("Conservative model's loss under the truth minus the mean model's (same policy, same calibrated "
             "domain), per case and N, 90% interval over seeds. Negative: conservatism pays.")
    L.append("")
    L.append("| case | policy | " + " | ".join(f"N={n}" for n in ns) + " |")
    L.append("|---|---|" + "---|" * len(ns))
    verdicts = defaultdict(int)
    for case in dict.fromkeys(r["case"] for r in loss):
        for p in [p for p in pols if p.startswith("conservative")]:
            base = p.split(":", 1)[1]
            cells = []
            for n in ns:
                cons = {r["seed"]: r["loss"] for r in loss if r["case"] == case and r["n"] == n
                        and r["method"] == "em" and r["policy"] == p}
                mean = {r["seed"]: r["loss"] for r in loss if r["case"] == case and r["n"] == n
                        and r["method"] == "em" and r["policy"] == base}
                d = [cons[k] - mean[k] for k in cons if k in mean]
                t = interval(d)
                verdicts[_verdict(t)] += 1
                cells.append(f"{_iv(t)} {_verdict(t)}")
            L.append(f"| {case} | {base} | " + " | ".join(cells) + " |")
    L.append("")
    L.append("Cells: " + ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())) + ".")
    L.append("")
    # ---------------------------------------------------------------- selective resolution
    sel = [r for r in meas if r["regime"] == "selective"]
    if sel:
        L.append("## 5. Selective resolution: EM against counting resolved sessions")
        L.append("")
        L.append("Only sessions that ended with a gated action (release, approve, ...) learn the truth.")
        L.append("")
        L.append("| case | N | EM coverage | EM error | resolved-only coverage | resolved-only error | "
                 "bounded regret, EM | bounded regret, resolved-only |")
        L.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for (case, n), g in _group(sel, "case", "n").items():
            cells = []
            for method in ("em", "resolved"):
                c = [r for r in g if r["what"] == "calibration" and r["method"] == method]
                k, m = sum(r["covered"] for r in c), sum(r["rows"] for r in c)
                cells += [f"{k}/{m}" if m else "n/a", _f(interval([r["mean_abs_err"] for r in c])[0])]
            reg = [_f(interval([r["regret"] for r in g if r["what"] == "loss" and r["method"] == method
                                and r["policy"] == "bounded"])[0]) for method in ("em", "resolved")]
            L.append(f"| {case} | {n} | {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} | {reg[0]} | {reg[1]} |")
        L.append("")
    errors = [r for r in rows if r.get("error")]
    if errors:
        L.append(f"Not computed: {len(errors)} rows; first: {errors[0]['case']} N={errors[0]['n']} "
                 f"{errors[0].get('policy') or errors[0]['method']}: {errors[0]['error']}")
        L.append("")
    (folder / "report.md").write_text("\n".join(L))
