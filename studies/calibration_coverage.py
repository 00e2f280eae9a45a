"""Coverage of `planner calibrate`'s 90% intervals, measured at N = 10 to 200 with resolved and latent worlds.

    python3 -m studies.calibration_coverage [--quick] [--reps 30] [--out studies/results/calibration_coverage]

The truth is ``domains/truth/payment_release.yaml`` with its prior moved to
approved 0.75 / pending 0.25; sessions run a legacy ``top-k:2`` rule planning
on the declared ``payment_release`` (prior 0.55 / 0.45, registry error 1%
where the truth's is 10%, a message less informative than the truth's), are
written to and read back from a real SQLite outcome log
(``planner.session.simulate.simulate_log``), and are calibrated with the
shipped defaults. Four resolution regimes:

- ``all``: every session later learns the truth (worlds known);
- ``random``: a random 30% do (most worlds latent, resolution independent of them);
- ``released``: only released payments do (resolution follows the action);
- ``none``: no session does (every world latent: not identified, see below).

For every replicate (a seed) and every estimated quantity with data (the two
rows of ``approval_registry`` and of ``manager_message``, one cell each since
the rows are binary, and the world prior's ``approved``), the interval
*covers* when it holds the true value. The report gives the share covered per
regime and N, with its 95% Wilson interval, the mean interval width and the
share of calibrations that warned of weak identification. ``held prior``
repeats ``random`` with the prior held at the declared 0.55 (what
``planner calibrate`` did before it estimated the prior): the rows' bias that
a wrong prior causes when worlds are latent.
"""

from __future__ import annotations

import argparse
import csv
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

import planner  # noqa: E402
import planner.model.domain  # noqa: E402  (read_domain_file below; `import planner` imports on demand)
from planner.calibration.calibrate import INTERVAL, calibrate  # noqa: E402
from planner.io.store import open_log  # noqa: E402
from planner.session.simulate import simulate_log  # noqa: E402

TRUE_PAYMENT = planner.DOMAINS / "truth" / "payment_release.yaml"
TRUE_PRIOR = {"approved": 0.75, "pending": 0.25}
NS = (10, 20, 50, 100, 200)
REGIMES = {"all": (1.0, None), "random": (0.3, None), "released": (1.0, ["release"]), "none": (0.0, None),
           "held prior": (0.3, None)}
CELLS = (("approval_registry", 0, 0), ("approval_registry", 1, 0), ("manager_message", 0, 0),
         ("manager_message", 1, 0))


def _truth():
    data = planner.model.domain.read_domain_file(TRUE_PAYMENT)
    data["prior"] = {"approval": dict(TRUE_PRIOR)}
    return planner.Domain.from_dict(data)


def job(args):
    """One (regime, seed): one log of max(NS) sessions, calibrated on each prefix of N sessions."""
    regime, seed, ns = args
    truth, declared = _truth(), planner.load_domain("payment_release")
    rate, when = REGIMES[regime]
    folder = tempfile.mkdtemp(prefix="coverage-")
    path = Path(folder) / "log.db"
    with open_log(path) as log:
        simulate_log(truth, log, sessions=max(ns), policy="top-k:2", resolve=rate, resolve_when=when,
                     seed=10_000 + seed, model=declared)
        sessions = log.sessions()
    os.remove(path)
    os.rmdir(folder)
    out = []
    for n in ns:
        res = calibrate(declared, sessions[:n], seed=seed, estimate_prior=regime != "held prior")
        c = res.compiled
        for name, case, k in CELLS:
            o = c.obs_index(name)
            true = dict(truth.observation(name).likelihood.cases[case].value)[c.outcome_names[o][k]]
            lo, hi = res.interval[o][case, k]
            out.append(dict(regime=regime, n=n, seed=seed, what=f"{name}[{case}]", true=true,
                            mean=float(res.rows[o][case, k]), lo=float(lo), hi=float(hi),
                            covered=int(lo <= true <= hi), resolved=res.resolved,
                            weak=int(res.identification.status == "weak")))
        if regime != "held prior":
            lo, hi = res.prior_interval[0][0]
            out.append(dict(regime=regime, n=n, seed=seed, what="prior[approved]", true=TRUE_PRIOR["approved"],
                            mean=float(res.prior[0][0]), lo=float(lo), hi=float(hi),
                            covered=int(lo <= TRUE_PRIOR["approved"] <= hi), resolved=res.resolved,
                            weak=int(res.identification.status == "weak")))
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple:
    """The 95% Wilson interval of a share k / n."""
    if n == 0:
        return (float("nan"), float("nan"))
    p = k / n
    d = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / d
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (mid - half, mid + half)


def summarise(rows) -> list:
    out = []
    for regime in REGIMES:
        for n in NS:
            sel = [r for r in rows if r["regime"] == regime and r["n"] == n]
            if not sel:
                continue
            k = sum(r["covered"] for r in sel)
            lo, hi = wilson(k, len(sel))
            rowsel = [r for r in sel if r["what"] != "prior[approved]"]
            bias = float(np.mean([abs(r["mean"] - r["true"]) for r in rowsel]))
            out.append(dict(regime=regime, n=n, cells=len(sel), coverage=k / len(sel), lo=lo, hi=hi,
                            width=float(np.mean([r["hi"] - r["lo"] for r in sel])), row_abs_err=bias,
                            weak=float(np.mean([r["weak"] for r in sel]))))
    return out


def report(summary, reps: int) -> str:
    lines = ["# Coverage of the calibration intervals", "",
             f"Command: `python3 -m studies.calibration_coverage --reps {reps}` (nominal {INTERVAL:.2f}; "
             "see the module docstring for the setup). Per regime and N: the share of true values inside the "
             "90% interval over every replicate and quantity (its 95% Wilson interval), the mean width, the "
             "rows' mean absolute error and the share of calibrations that warned of weak identification.", "",
             "| regime | N | quantities | coverage | 95% interval | mean width | row abs. error | warned |",
             "|---|---:|---:|---:|---|---:|---:|---:|"]
    for s in summary:
        lines.append(f"| {s['regime']} | {s['n']} | {s['cells']} | {s['coverage']:.3f} | "
                     f"[{s['lo']:.3f}, {s['hi']:.3f}] | {s['width']:.3f} | {s['row_abs_err']:.3f} | {s['weak']:.2f} |")
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="3 replicates")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "studies" / "results" / "calibration_coverage"))
    args = ap.parse_args(argv)
    reps = 3 if args.quick else args.reps
    jobs = [(regime, seed, NS) for regime in REGIMES for seed in range(reps)]
    rows = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for out in pool.map(job, jobs):
            rows.extend(out)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "coverage.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    summary = summarise(rows)
    (out / "report.md").write_text(report(summary, reps))
    print(report(summary, reps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
