"""Calibration from logs, measured: how close it gets, and what each model's plans lose under the truth.

    python3 -m studies.calibration [--quick] [--out studies/results/calibration] [--workers 2]

Two parts, both through the same code as ``planner simulate-log`` and
``planner calibrate`` (sessions are written to and read back from real
SQLite outcome logs):

1. **Acceptance** (the payment case): the true ``domains/truth/payment_release.yaml``
   (registry error 10% where 1% is declared; a manager message far more
   informative than declared), 1,000 sessions of a legacy ``top-k:2`` rule
   planning on the declared domain, 20 seeds; every session resolved, and
   then only released payments resolved. Coverage of the 90% intervals of the
   rows with data, the bias of counting only resolved sessions, and the exact
   expected loss under the truth of the default policy planned on the
   declared and on the calibrated domain.
2. **Measurement**: shipped scenarios and generated families as the truth;
   the declared domain is the truth with its likelihoods deliberately wrong
   (every row's log-odds scaled: by 2 for establish/supersede sources, which
   become overconfident, and by 0.5 for the others, underconfident). N in
   {20, 50, 200, 1000} logged sessions of ``top-k:3`` on the declared domain,
   5 seeds, every session resolved; and N in {200, 1000} with resolution only
   after the gated action (EM against counting resolved sessions). Then the
   exact expected total loss under the truth of one-step, lookahead:2,
   lookahead:3 and bounded planned on the declared, the calibrated-mean and
   (for one-step and bounded) the conservative model, as regret against the
   optimum of the true domain.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import os
import platform
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

import planner  # noqa: E402
import planner.model.domain  # noqa: E402  (read_domain_file below; `import planner` imports on demand)
from planner.calibration.calibrate import PRIOR_STRENGTH, CalibrationError, calibrate, calibrated_data  # noqa: E402
from planner.model.caller import Caller  # noqa: E402
from planner.compile import compile_domain  # noqa: E402
from planner.evaluation.evaluate import expected_loss_under  # noqa: E402
from planner.session.simulate import simulate_log  # noqa: E402
from planner.io.store import open_log  # noqa: E402
from studies.distort import miscalibrated as wrong  # noqa: E402
from studies.families import STUDY_PURPOSE, SUBJECT_ENTITLEMENTS, family_domain  # noqa: E402

TRUE_PAYMENT = planner.DOMAINS / "truth" / "payment_release.yaml"  # package data of the wheel
SHIPPED = ("payment_release", "kyc_chain", "identity_registry", "refund_request", "complementary_signals")
GENERATED = (("prerequisite", 1), ("unreliable_prereq", 0), ("heterogeneous", 0), ("complementary", 1))
NS = (20, 50, 200, 1000)
SEEDS = 5
POLICIES = ("one-step", "lookahead:2", "lookahead:3", "bounded")
CONSERVATIVE = ("one-step", "bounded")
HISTORICAL = "top-k:3"


def cases(quick: bool):
    """``(name, truth data, declared data, caller kwargs)`` of the measurement."""
    out = []
    for name in SHIPPED[:2] if quick else SHIPPED:
        d = planner.load_domain(name).raw
        if name == "payment_release":
            truth = planner.model.domain.read_domain_file(TRUE_PAYMENT)
            out.append(("payment_release (true file)", truth, {k: v for k, v in d.items() if k != "checks"}, {}))
        else:
            truth = {k: v for k, v in d.items() if k != "checks"}
            out.append((name, truth, wrong(truth), {}))
    for fam, inst in GENERATED[:1] if quick else GENERATED:
        truth = family_domain(fam, inst)
        out.append((truth["domain"], truth, wrong(truth),
                    {"entitlements": list(SUBJECT_ENTITLEMENTS), "purpose": STUDY_PURPOSE}))
    return out


# --------------------------------------------------------------------------
# one calibration


def _coverage(result, truth_c) -> tuple:
    """``(rows with data, rows covered, mean |mean - truth|, max)`` over the rows that have data."""
    from planner.compile import _case_probs

    rows = covered = 0
    errs = []
    for o, spec in enumerate(truth_c.domain.observations):
        if result.acquired[o] == 0 or _copy(truth_c, o):
            continue
        true_rows = _case_probs(spec.likelihood, spec.outcomes)
        for ci in range(true_rows.shape[0]):
            if result.counts[o][ci].sum() <= 0:
                continue
            lo, hi = result.interval[o][ci, :, 0], result.interval[o][ci, :, 1]
            t = true_rows[ci]
            rows += 1
            covered += bool(np.all((t >= lo - 1e-12) & (t <= hi + 1e-12)))
            errs.append(float(np.abs(result.rows[o][ci] - t).max()))
    return rows, covered, float(np.mean(errs)) if errs else float("nan"), max(errs, default=float("nan"))


def _copy(c, o: int) -> bool:
    """A lineage member after the first: its rows are the group's, counted once."""
    v = int(c.lineage[o])
    return v >= 0 and int(np.flatnonzero(c.lineage == v)[0]) != o


def _bias(result, truth_c) -> list:
    """Signed error (calibrated - true) of the first outcome of every row with data."""
    from planner.compile import _case_probs

    out = []
    for o, spec in enumerate(truth_c.domain.observations):
        if _copy(truth_c, o):
            continue
        true_rows = _case_probs(spec.likelihood, spec.outcomes)
        for ci in range(true_rows.shape[0]):
            if result.counts[o][ci].sum() > 0:
                out.append((spec.name, ci, float(result.rows[o][ci, 0] - true_rows[ci, 0])))
    return out


def _simulate(truth, declared, n, seed, caller, resolve_when, policy):
    folder = tempfile.mkdtemp(prefix="calib-")
    path = Path(folder) / "log.db"
    with open_log(path) as log:
        simulate_log(truth, log, sessions=n, policy=policy, resolve=1.0, resolve_when=resolve_when, seed=seed,
                     model=declared, caller=caller)
        sessions = log.sessions()
    os.remove(path)
    return sessions


def _gated(c) -> list:
    from lookahead.layout import NO_EXPR

    return [a for i, a in enumerate(c.action_names) if c.facts.action_req[i] != NO_EXPR]


def job(args):
    """One (case, N, seed, regime): calibrate, then score every policy on every model under the truth."""
    kind, name, truth_data, decl_data, caller_kw, n, seed, regime, strength = args
    caller = Caller(**caller_kw) if caller_kw else None
    truth = planner.Domain.from_dict(truth_data)
    declared = planner.Domain.from_dict(decl_data)
    tc, dc = compile_domain(truth), compile_domain(declared)
    when = _gated(dc) if regime == "selective" else None
    historical = "top-k:2" if kind == "acceptance" else HISTORICAL
    t0 = time.perf_counter()
    sessions = _simulate(tc, dc, n, seed, caller, when, historical)
    sim_s = time.perf_counter() - t0
    rows = []
    methods = ("em", "resolved") if regime == "selective" else ("em",)
    models = {"declared": declared}
    for method in methods:
        t0 = time.perf_counter()
        try:
            res = calibrate(declared, sessions, method=method, seed=seed, prior_strength=strength)
        except CalibrationError as e:  # nothing resolved: counting has nothing to count
            rows.append(dict(part=kind, case=name, n=n, seed=seed, regime=regime, what="calibration", method=method,
                             strength=strength, rows=0, covered=0, mean_abs_err=float("nan"), max_abs_err=float("nan"), resolved=0,
                             used=0, error=str(e)))
            continue
        cal_s = time.perf_counter() - t0
        cov = _coverage(res, tc)
        models[method] = planner.Domain.from_dict(calibrated_data(res, date="2026-12-01"))
        rows.append(dict(part=kind, case=name, n=n, seed=seed, regime=regime, what="calibration", method=method,
                         strength=strength, rows=cov[0], covered=cov[1], mean_abs_err=cov[2], max_abs_err=cov[3],
                         resolved=res.resolved, used=res.used, iterations=res.iterations,
                         bias=";".join(f"{o}[{ci}]={b:+.4f}" for o, ci, b in _bias(res, tc)),
                         simulate_s=sim_s, calibrate_s=cal_s))
    optimum = expected_loss_under(truth, truth, "bounded", caller)
    none = expected_loss_under(truth, truth, "none", caller)
    policies = ("bounded",) if kind == "acceptance" else POLICIES
    # each policy planning on the truth itself: the part of its loss that is not model error
    own = {p: expected_loss_under(truth, truth, p, caller) for p in policies}
    for model_name, model in models.items():
        for pol in policies:
            specs = [pol]
            if model_name != "declared" and pol in CONSERVATIVE:
                specs.append(f"conservative:{pol}")
            for spec in specs:
                t0 = time.perf_counter()
                try:
                    j = expected_loss_under(model, truth, spec, caller)
                    err = ""
                except planner.errors.PlannerError as e:
                    j, err = float("nan"), str(e)
                rows.append(dict(part=kind, case=name, n=n, seed=seed, regime=regime, what="loss", method=model_name,
                                 strength=strength,
                                 policy=spec, loss=j, optimum=optimum, none=none, regret=j - optimum,
                                 on_truth=own[pol], error_cost=j - own[pol],
                                 eval_s=time.perf_counter() - t0, error=err))
    return rows


def jobs(quick: bool):
    out = []
    truth = planner.model.domain.read_domain_file(TRUE_PAYMENT)
    decl = {k: v for k, v in planner.load_domain("payment_release").raw.items() if k != "checks"}
    for strength in (PRIOR_STRENGTH, 10.0):
        for seed in range(5 if quick else 20):
            for regime in ("all", "selective"):
                out.append(("acceptance", "payment_release", truth, decl, {}, 1000, seed, regime, strength))
    for name, t, d, ck in cases(quick):
        for n in (20, 200) if quick else NS:
            for seed in range(2 if quick else SEEDS):
                out.append(("measurement", name, t, d, ck, n, seed, "all", PRIOR_STRENGTH))
                if n >= 200:
                    out.append(("measurement", name, t, d, ck, n, seed, "selective", PRIOR_STRENGTH))
    return out


FIELDS = ["part", "case", "n", "seed", "regime", "strength", "what", "method", "policy", "rows", "covered", "mean_abs_err",
          "max_abs_err", "resolved", "used", "iterations", "bias", "loss", "optimum", "none", "regret", "on_truth", "error_cost",
          "simulate_s", "calibrate_s", "eval_s", "error"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "studies" / "results" / "calibration"))
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    todo = jobs(args.quick)
    start = time.time()
    rows = []
    from tqdm import tqdm

    with ProcessPoolExecutor(args.workers) as pool:
        for r in tqdm(pool.map(job, todo, chunksize=1), total=len(todo), desc="calibration", unit="job"):
            rows.extend(r)
    wall = time.time() - start
    with open(out / "calibration.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})
    from studies.calibration_report import write

    cmd = "python3 -m studies.calibration" + (" --quick" if args.quick else "") + \
          (f" --workers {args.workers}" if args.workers != 2 else "")
    meta = dict(command=cmd, wall_s=wall, date=_dt.date.today().isoformat(), jobs=len(todo),
                machine=f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    write(rows, out, meta)
    print(f"{len(todo)} jobs in {wall:.0f} s; wrote {out}/calibration.csv and {out}/report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
