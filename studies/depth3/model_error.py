"""The depth study's model-error arm with controlled log coverage (issue 24, points 3 and 5).

    nice -n 10 python3 -m studies.depth3.model_error --pilot     # the pilot the power calculation reads
    nice -n 10 python3 -m studies.depth3.model_error             # the arm, sized by the pilot
    python3 -m studies.depth3.model_error --quick --out DIR      # a minute: the test's end-to-end run
    python3 -m studies.depth3.model_error --render DIR           # the report again, from DIR's CSVs

**Why.** The second edition's arm (:mod:`studies.model_error`) logged with
``top-k:3``, which acquires the same three sources every time: the other
sources (prerequisite chains, the registry behind them) were never logged,
so calibration could not correct them and the model error it measured was
partly a coverage artefact. Here the log is written by an *exploring*
policy, ``explore:EPS:SEED`` (:mod:`planner.policies.explore`: epsilon-greedy
over one-step on the declared model, every eligible source with probability
at least ``EPS / |E|`` at every step, the same hard gates and budget as every
policy), each session with its own seed, and each acquisition's propensity
is stored in the outcome log (``docs/outcome-log.md``, schema version 2).

**Design.** Truths: generated family instances (:func:`studies.families.family_domain`,
budget ``medium``, the study's caller). The declared domain is the truth
with its likelihoods wrong (:func:`studies.distort.miscalibrated`:
establishing sources' log-odds x2, the others x0.5). For each truth, log
size N in :data:`NS` and seed: N sessions of ``explore:EPS:<seed * 10**6 + k>``
planning on the declared domain, outcomes and worlds drawn from the truth,
every session resolved, into a real SQLite log; the log is then read twice,
streamed (:meth:`planner.io.store.OutcomeLog.iter_sessions`, one chunk at a
time, never listed whole): once for each row's coverage (:func:`row_coverage`),
once by ``calibrate`` (EM, default prior strength). Each policy of
:data:`POLICIES` plans on the posterior mean (the conservative ones on the
calibrated domain) and is scored exactly under the truth
(:func:`planner.evaluation.evaluate.expected_loss_under`). A policy's
**error cost** is its loss under the truth planning on the model minus the
same policy's loss planning on the truth (the conservative rule: minus its
base policy's).

**Coverage.** A *row* is one case of one observation's likelihood (the
outcome distribution given its parents' values; a lineage member's rows are
its group's, counted on the first member). A row's **n** is the number of
resolved sessions that acquired the observation (a declared outcome, not
``unavailable``) in a world of that case; its **ESS** is Kish's effective
sample size of the same acquisitions weighted by inverse propensity,
``(sum w)^2 / sum w^2`` with ``w = 1 / propensity`` (``w = 1`` where the log
has no propensity: a deterministic logger, for which ESS = n). A log's
coverage summary is the least ESS over the truth's rows with positive prior
probability (``min_ess``) and the share of those rows with no data.

**The planned tests** (:data:`CONTRASTS` x :data:`NS`, Holm over all of
them at 0.05, :func:`studies.stats.holm`): per truth (seeds averaged),
``d = error cost of the deep policy - error cost of one-step``; two-sided
sign-flip permutation test of mean d = 0 (:func:`studies.stats.sign_flip_test`).
Error cost against ESS is descriptive (ESS is an outcome of the log, not a
design factor): bins of ``min_ess``, truth-clustered means with BCa intervals.

**Power first** (:func:`power_table`, written to the report). From the
pilot (:data:`PILOT`: a few truths per family, 2 seeds), per test: the mean
truth-level difference delta, the between-truth variance ``s_b^2`` and the
within-truth (seed) variance ``s_w^2`` (from the seed pairs). With S seeds a
truth's mean difference has variance ``s_b^2 + s_w^2 / S``; the one-sample
test at the Bonferroni level ``alpha / m`` (Holm's first step: a lower
bound on Holm's power for every test) reaches power 0.8 with
``n = ((z_{1 - alpha / 2m} + z_{0.8}) sqrt(s_b^2 + s_w^2 / S) / |delta|)^2``
truths (normal approximation of the sign-flip test of the mean). The arm's
truths and seeds are then the cheapest (n, S) that powers the tests whose
pilot effect is largest within the CPU budget (:data:`CPU_BUDGET_S` of one
core, from the pilot's measured seconds per job); the tests the budget
cannot power are labelled so in the report.

The committed run: the pilot (``studies/results/depth3-model-error/pilot``,
20 truths x 2 seeds) gave delta from 0.08 (N=500, ``lookahead:2``) to 0.69
(N=20, ``lookahead:3`` and ``bounded``), so at the Bonferroni level
0.05/9 (z-sum 3.615) the hardest test, N=500 ``lookahead:2`` (s_w 0.43,
s_b about 0), needs 185 truths with 2 seeds (369 with 1, 123 with 3);
at the pilot's 0.7 / 1.0 / 1.9 CPU seconds per log of N = 20 / 100 / 500
that is 37 instances per family x 2 seeds, 22.6 min of one core, which
powers all nine tests (by the pilot's estimates; a resampling check of the
pilot gives 0.98 to 1.00).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

__all__ = ["row_coverage", "likelihood_case", "reachable_rows", "load_folder", "write_report", "coverage_summary", "log_explore", "job", "power_table", "choose_size", "main",
           "NS", "EPS", "POLICIES", "CONTRASTS", "FAMS"]

#: Families the truths come from (the first edition's; budget medium).
FAMS = ("prerequisite", "unreliable_prereq", "complementary", "heterogeneous", "exact_lookup")
#: Log sizes (sessions per log).
NS = (20, 100, 500)
#: The logging policy's exploration rate.
EPS = 0.5
#: What plans on each calibrated model: (spec, its base policy on the truth).
POLICIES = (("one-step", "one-step"), ("lookahead:2", "lookahead:2"), ("lookahead:3", "lookahead:3"),
            ("bounded", "bounded"), ("conservative:one-step", "one-step"), ("conservative:bounded", "bounded"))
#: The second edition's logger, whose coverage the report shows beside the exploring one's (on some truths).
CONTROL = "top-k:3"
#: Instances per family of the control coverage (at the largest N, seed 0).
CONTROL_INSTANCES = 4
#: The planned tests' contrasts: deep policy minus one-step error cost (x every N).
CONTRASTS = ("lookahead:2", "lookahead:3", "bounded")
ALPHA = 0.05
POWER = 0.8
#: The pilot: instances PILOT_OFFSET .. PILOT_OFFSET + PILOT - 1 of every family (none of them a truth of the
#: arm, which uses instances 0, 1, ...), 2 seeds, every N.
PILOT = 4
PILOT_OFFSET = 1000
PILOT_SEEDS = 2
#: One core's seconds the full arm may use (30 min), and the most truths per family the generator is asked for.
CPU_BUDGET_S = 30 * 60
MAX_INSTANCES = 40
#: ESS bins of a log's least-covered row (lower edges).
ESS_BINS = (0.0, 1.0, 5.0, 20.0, 100.0)
LEVEL = 0.90
N_BOOT = 2000
EQ = 1e-9
SEED_STRIDE = 10**6  # session k of log seed s explores with seed s * SEED_STRIDE + k (N < SEED_STRIDE)


def _caller():
    from planner.model.caller import Caller
    from studies.families import STUDY_PURPOSE, SUBJECT_ENTITLEMENTS

    return Caller(entitlements=list(SUBJECT_ENTITLEMENTS), purpose=STUDY_PURPOSE)


# --------------------------------------------------------------------------
# the log and its coverage


def log_explore(truth_c, model_c, log, *, sessions: int, seed: int, eps: float = EPS, caller=None) -> int:
    """Append `sessions` sessions of ``explore:eps:<seed * 10**6 + k>`` on `model_c`, worlds and outcomes from `truth_c`.

    Every session is resolved (its world's true values). Returns the number
    of acquisitions logged. The logged propensities are the exploring rule's
    (:func:`planner.policies.explore.explore_distribution`).

    >>> import planner, tempfile, pathlib
    >>> from planner.io.store import open_log
    >>> c = planner.compile_domain(planner.load_domain("payment_release"))
    >>> with open_log(pathlib.Path(tempfile.mkdtemp()) / "log.db") as log:
    ...     n = log_explore(c, c, log, sessions=5, seed=1)
    ...     ps = [a.propensity for s in log.iter_sessions(receipts=False) for a in s.acquisitions]
    >>> n == len(ps) and all(0.0 < p <= 1.0 for p in ps)
    True
    """
    from planner.session.session import Session
    from planner.session.simulate import inverse_cdf

    if sessions >= SEED_STRIDE:
        raise ValueError(f"at most {SEED_STRIDE - 1} sessions per log seed")
    t, m = truth_c, model_c
    rng = np.random.default_rng(seed)
    acquired = 0
    for k in range(sessions):
        s = int(rng.choice(t.n_states, p=t.prior))
        session = Session(m, f"explore:{eps!r}:{seed * SEED_STRIDE + k}", caller=caller, log=log,
                          context={"simulated": {"seed": seed, "session": k}})
        tools = {name: (lambda o=o: t.outcome_names[o][inverse_cdf(t.lik[o], int(t.n_outcomes[o]), s, rng.random())])
                 for o, name in enumerate(t.obs_names)}
        session.run(tools)
        acquired += len(session.steps)
        log.resolve(session.log_id, {t.prop_names[p]: t.prop_values[p][t.states[s, p]] for p in range(len(t.prop_names))})
    return acquired


def row_coverage(compiled, sessions) -> dict:
    """Per row ``(observation, case)``: resolved acquisitions ``n``, inverse-propensity weight sums, Kish's ESS.

    `sessions` is read once (a stream: :meth:`~planner.io.store.OutcomeLog.iter_sessions`);
    only the per-row sums are kept. A session counts for a row when it is
    resolved far enough to fix the row's case and acquired the observation
    with a declared outcome (``unavailable`` says nothing about the row). A
    lineage member's acquisitions count for its group's first member. The
    weight is ``1 / propensity`` (1 where none is logged).

    Returns ``{(name, case): {"n", "sum_w", "sum_w2", "ess"}}`` for every row
    of the domain (rows without data: zeros).

    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("payment_release"))
    >>> A = lambda o, y, p: {"observation": o, "outcome": y, "propensity": p}
    >>> log = [{"acquisitions": [A("approval_registry", "approved", 0.5)], "resolution": {"approval": "approved"}},
    ...        {"acquisitions": [A("approval_registry", "approved", 0.25)], "resolution": {"approval": "approved"}},
    ...        {"acquisitions": [A("approval_registry", "pending", 0.5)], "resolution": {}}]
    >>> r = row_coverage(c, log)[("approval_registry", 0)]
    >>> r["n"], r["sum_w"], r["sum_w2"], round(r["ess"], 4)     # weights 2 and 4: ESS = 36 / 20
    (2, 6.0, 20.0, 1.8)
    """
    from planner.compile import _case_probs, likelihood_layout
    from planner.model.parts import UNAVAILABLE

    c = compiled
    lay = likelihood_layout(c)
    first = {v: f for v, f in lay.groups}
    owner = [first.get(int(v), o) if v >= 0 else o for o, v in enumerate(lay.latent)]
    pos = {n: i for i, n in enumerate(c.obs_names)}
    acc = {}
    for o, spec in enumerate(c.domain.observations):
        if owner[o] == o:
            for ci in range(_case_probs(spec.likelihood, spec.outcomes).shape[0]):
                acc[(c.obs_names[o], ci)] = [0, 0.0, 0.0]
    for s in sessions:
        res = dict(_get(s, "resolution") or {})
        if not res:
            continue
        mask = np.ones(c.n_states, dtype=bool)
        for p, v in res.items():
            pi = c.prop_names.index(p)
            mask &= c.states[:, pi] == c.prop_values[pi].index(v)
        for a in _get(s, "acquisitions", ()):
            name, outcome, prop = _get(a, "observation"), _get(a, "outcome"), _get(a, "propensity")
            if outcome == UNAVAILABLE or name not in pos:
                continue
            f = owner[pos[name]]
            cases = np.unique(lay.case_of[f][mask])
            if len(cases) != 1:
                continue  # the resolution leaves the row open
            w = 1.0 if prop is None else 1.0 / float(prop)
            cell = acc[(c.obs_names[f], int(cases[0]))]
            cell[0] += 1
            cell[1] += w
            cell[2] += w * w
    return {k: {"n": n, "sum_w": sw, "sum_w2": sw2, "ess": (sw * sw / sw2) if sw2 > 0 else 0.0}
            for k, (n, sw, sw2) in acc.items()}


def likelihood_case(compiled, observation: str, world: dict) -> int:
    """The case (row) of `observation`'s likelihood that holds in `world` (every proposition given).

    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("payment_release"))
    >>> likelihood_case(c, "approval_registry", {"approval": "pending"})
    1
    """
    from planner.compile import likelihood_layout

    c = compiled
    mask = np.ones(c.n_states, dtype=bool)
    for p, v in world.items():
        pi = c.prop_names.index(p)
        mask &= c.states[:, pi] == c.prop_values[pi].index(v)
    return int(likelihood_layout(c).case_of[c.obs_index(observation)][int(np.flatnonzero(mask)[0])])


def _get(x, name, default=None):
    return x.get(name, default) if isinstance(x, dict) else getattr(x, name, default)


def reachable_rows(compiled, admitted=None) -> set:
    """The rows a logger can reach: ``(observation, case)`` of an admitted observation, in a case of positive prior.

    A rejected observation (the caller may not read it) is never logged by
    any policy: its rows are not the logger's to cover. `admitted` is the
    admission mask (default: every observation).
    """
    from planner.compile import likelihood_layout

    c = compiled
    lay = likelihood_layout(c)
    first = {v: f for v, f in lay.groups}
    live = np.asarray(c.prior) > 0
    out = set()
    for o in range(len(c.obs_names)):
        v = int(lay.latent[o])
        if (v >= 0 and first.get(v, o) != o) or (admitted is not None and not admitted[o]):
            continue
        out |= {(c.obs_names[o], int(ci)) for ci in np.unique(lay.case_of[o][live])}
    return out


def coverage_summary(cov: dict, rows) -> dict:
    """A log's coverage: least and median ESS over `rows`, the share of them with no data, total n.

    >>> coverage_summary({("a", 0): {"n": 3, "ess": 2.5}, ("a", 1): {"n": 0, "ess": 0.0}}, [("a", 0), ("a", 1)])
    {'min_ess': 0.0, 'median_ess': 1.25, 'share_empty': 0.5, 'rows': 2, 'n_total': 3}
    """
    ess = np.array([cov[r]["ess"] for r in rows], dtype=float)
    n = np.array([cov[r]["n"] for r in rows], dtype=float)
    if ess.size == 0:
        return {"min_ess": math.nan, "median_ess": math.nan, "share_empty": math.nan, "rows": 0, "n_total": 0}
    return {"min_ess": float(ess.min()), "median_ess": float(np.median(ess)), "share_empty": float((n == 0).mean()),
            "rows": int(ess.size), "n_total": int(n.sum())}


# --------------------------------------------------------------------------
# one job: a truth, a log size, a seed


def _truth(family: str, instance: int) -> dict:
    from studies.families import family_domain

    return {k: v for k, v in family_domain(family, instance, "medium").items() if k != "checks"}


def truth_losses(family: str, instance: int) -> dict:
    """Each base policy's exact loss under the truth planning on the truth (the part that is not model error)."""
    import planner
    from planner.evaluation.evaluate import expected_loss_under

    truth = planner.Domain.from_dict(_truth(family, instance))
    caller = _caller()
    bases = sorted({b for _, b in POLICIES})
    return {b: expected_loss_under(truth, truth, b, caller) for b in bases}


def job(args) -> dict:
    """One log: simulate it, read its coverage and calibrate (both streamed), score every policy under the truth.

    `args` is ``(family, instance, n, seed, own)`` with `own` from
    :func:`truth_losses`. Returns ``{"rows": [...], "coverage": [...], "summary": {...}}``.
    """
    import planner
    from planner.calibration.calibrate import PRIOR_STRENGTH, CalibrationError, calibrate, calibrated_data
    from planner.compile import compile_domain
    from planner.evaluation.evaluate import expected_loss_under
    from planner.io.store import open_log
    from studies.distort import miscalibrated

    family, instance, n, seed, own = args
    t0 = time.process_time()
    data = _truth(family, instance)
    caller = _caller()
    truth = planner.Domain.from_dict(data)
    declared = planner.Domain.from_dict(miscalibrated(data))
    tc, dc = compile_domain(truth), compile_domain(declared)
    base = {"family": family, "instance": instance, "n": n, "seed": seed}
    folder = tempfile.mkdtemp(prefix="me3-")
    try:
        path = Path(folder) / "log.db"
        with open_log(path) as log:
            acquired = log_explore(tc, dc, log, sessions=n, seed=seed, caller=caller)
        with open_log(path, readonly=True) as log:
            cov = row_coverage(dc, log.iter_sessions(receipts=False))
            try:
                res = calibrate(declared, log.iter_sessions(receipts=False), method="em", seed=seed,
                                prior_strength=PRIOR_STRENGTH)
            except CalibrationError as e:
                res, err = None, str(e).splitlines()[0][:200]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    from planner.gates.admission import admit

    loggable = reachable_rows(tc, admit(tc, caller).admitted)
    summary = dict(base, acquisitions=acquired, all_rows=len(cov), **coverage_summary(cov, sorted(loggable)))
    coverage = [dict(base, observation=o, case=ci, loggable=(o, ci) in loggable, row_n=v["n"], ess=v["ess"])
                for (o, ci), v in sorted(cov.items())]
    rows = []
    if res is None:
        rows.append(dict(base, policy="", error=f"calibration: {err}"))
        return {"rows": rows, "coverage": coverage, "summary": dict(summary, cpu_s=time.process_time() - t0)}
    model = planner.Domain.from_dict(calibrated_data(res, date="2026-12-03"))
    for spec, b in POLICIES:
        try:
            j, e = expected_loss_under(model, truth, spec, caller), ""
        except planner.errors.PlannerError as ex:
            j, e = math.nan, str(ex).splitlines()[0][:200]
        rows.append(dict(base, policy=spec, loss=j, on_truth=own[b], error_cost=j - own[b], error=e))
    return {"rows": rows, "coverage": coverage, "summary": dict(summary, cpu_s=time.process_time() - t0)}


def control_coverage(args) -> dict:
    """The second edition's logger on one truth: ``top-k:3`` on the declared domain, N sessions; its coverage only.

    `args` is ``(family, instance, n, seed)``; the log is simulated as
    :mod:`studies.model_error` did (:func:`planner.session.simulate.simulate_log`,
    every session resolved) and streamed once through :func:`row_coverage`.
    """
    import planner
    from planner.compile import compile_domain
    from planner.gates.admission import admit
    from planner.io.store import open_log
    from planner.session.simulate import simulate_log
    from studies.distort import miscalibrated

    family, instance, n, seed = args
    data = _truth(family, instance)
    caller = _caller()
    tc = compile_domain(planner.Domain.from_dict(data))
    dc = compile_domain(planner.Domain.from_dict(miscalibrated(data)))
    folder = tempfile.mkdtemp(prefix="me3c-")
    try:
        with open_log(Path(folder) / "log.db") as log:
            simulate_log(tc, log, sessions=n, policy=CONTROL, resolve=1.0, seed=seed, model=dc, caller=caller)
            cov = row_coverage(dc, log.iter_sessions(receipts=False))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    loggable = sorted(reachable_rows(tc, admit(tc, caller).admitted))
    return {"family": family, "instance": instance, "n": n, "seed": seed, "logger": CONTROL,
            **coverage_summary(cov, loggable)}


# --------------------------------------------------------------------------
# the power calculation


def _z(p: float) -> float:
    from studies.stats import _phi_inv

    return _phi_inv(p)


def truth_diffs(rows, contrast: str, n: int) -> dict:
    """``{(family, instance): [d per seed]}``: error cost of `contrast` minus one-step's, one log at a time."""
    by = {}
    for r in rows:
        if r.get("n") == n and r.get("policy") in (contrast, "one-step") and not math.isnan(r.get("error_cost", math.nan)):
            by.setdefault((r["family"], r["instance"], r["seed"]), {})[r["policy"]] = r["error_cost"]
    out = {}
    for (f, i, s), v in sorted(by.items()):
        if contrast in v and "one-step" in v:
            d = v[contrast] - v["one-step"]
            out.setdefault((f, i), []).append(0.0 if abs(d) < EQ else d)
    return out


def power_table(rows, *, tests: int, alpha: float = ALPHA, power: float = POWER, seeds=(1, 2, 3, 5)) -> list:
    """Per planned test, from pilot rows: delta, s_b, s_w and the truths needed at each seed count (see the docstring).

    >>> rows = [dict(family="f", instance=i, n=20, seed=s, policy=p, error_cost=v)
    ...         for i in range(4) for s in range(2) for p, v in (("one-step", 0.0), ("bounded", 0.5 + 0.1 * i + 0.05 * s))]
    >>> t = power_table(rows, tests=1, seeds=(1,))[0]
    >>> round(t["delta"], 3), t["truths"][1] >= 1
    (0.675, True)
    """
    z = _z(1 - alpha / (2 * tests)) + _z(power)
    out = []
    for n in NS:
        for contrast in CONTRASTS:
            d = truth_diffs(rows, contrast, n)
            if not d:
                continue
            means = np.array([np.mean(v) for v in d.values()])
            pairs = [v for v in d.values() if len(v) >= 2]
            s_w2 = float(np.mean([np.var(v, ddof=1) for v in pairs])) if pairs else 0.0
            k = np.mean([len(v) for v in d.values()])
            var_means = float(np.var(means, ddof=1)) if len(means) > 1 else math.nan
            s_b2 = max(var_means - s_w2 / k, 0.0) if not math.isnan(var_means) else math.nan
            delta = float(means.mean())
            need = {}
            for S in seeds:
                sd = math.sqrt(s_b2 + s_w2 / S) if not math.isnan(s_b2) else math.nan
                need[S] = math.inf if abs(delta) < EQ or math.isnan(sd) else max(3, math.ceil((z * sd / abs(delta)) ** 2))
            out.append({"n": n, "contrast": contrast, "delta": delta, "s_b": math.sqrt(s_b2) if not math.isnan(s_b2) else math.nan,
                        "s_w": math.sqrt(s_w2), "pilot_truths": len(means), "truths": need})
    return out


def simulated_power(rows, truths: int, *, tests: int, alpha: float = ALPHA, sims: int = 2000, seed: int = 0) -> dict:
    """Per planned test: the share of `sims` resamples of `truths` pilot truth means a z-test rejects at alpha/tests.

    A check on the normal approximation of :func:`power_table` for the
    pilot's seed count (its truth means are resampled as they are, zeros and
    heavy tails included). ``{(n, contrast): power}``.
    """
    z = _z(1 - alpha / (2 * tests))
    rng = np.random.default_rng(seed)
    out = {}
    for n in NS:
        for contrast in CONTRASTS:
            x = np.array([np.mean(v) for v in truth_diffs(rows, contrast, n).values()])
            if x.size < 2 or np.all(np.abs(x) < EQ):
                out[(n, contrast)] = 0.0
                continue
            draws = x[rng.integers(0, x.size, size=(sims, truths))]
            sd = draws.std(axis=1, ddof=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                t = np.where(sd > 0, np.abs(draws.mean(axis=1)) / (sd / math.sqrt(truths)), 0.0)
            out[(n, contrast)] = float((t > z).mean())
    return out


def choose_size(ptab, cpu_per_log: dict, *, budget_s: float = CPU_BUDGET_S, families: int = len(FAMS),
                max_instances: int = MAX_INSTANCES) -> dict:
    """The (truths, seeds) the arm runs: powers the most tests (largest pilot effect first) within `budget_s`.

    `cpu_per_log` maps N to the pilot's mean CPU seconds of one log of N
    sessions (its calibration and every policy's evaluation included). The
    truths come in whole instances per family (``families`` truths per
    instance). Returns ``{"instances", "seeds", "truths", "powered": [tests], "cost_s"}``.
    """
    per_truth_seed = sum(cpu_per_log[n] for n in NS)
    best = None
    for S in sorted({s for t in ptab for s in t["truths"]}):
        for inst in range(1, max_instances + 1):
            truths = inst * families
            cost = truths * S * per_truth_seed + truths * cpu_per_log.get("truth", 0.0)
            if cost > budget_s:
                break
            powered = [t for t in ptab if t["truths"][S] <= truths]
            key = (len(powered), -cost)
            if best is None or key > best[0]:
                best = (key, {"instances": inst, "seeds": S, "truths": truths, "cost_s": cost,
                              "powered": [(t["n"], t["contrast"]) for t in powered]})
    return best[1] if best else {"instances": 1, "seeds": 1, "truths": families, "cost_s": math.nan, "powered": []}


# --------------------------------------------------------------------------
# running


def _screen(args):
    family, instance = args
    t0 = time.process_time()
    own = truth_losses(family, instance)
    return (family, instance), own, time.process_time() - t0


def run(instances: int, seeds: int, out: Path, *, workers: int = 1, label: str, command: str, offset: int = 0) -> dict:
    """Every (truth, N, seed) job; write ``model_error.csv``, ``coverage.csv``, ``logs.csv``, ``meta.json``."""
    from concurrent.futures import ProcessPoolExecutor

    from studies.tables import write_csv

    truths = [(f, i) for i in range(offset, offset + instances) for f in FAMS]
    start = time.time()
    results = []
    out.mkdir(parents=True, exist_ok=True)
    partial = out / "partial.jsonl"  # every finished log, as it finishes: a run cut short keeps what it did
    with ProcessPoolExecutor(workers) as pool, open(partial, "w") as keep:
        screened = list(pool.map(_screen, truths, chunksize=1))
        own = {k: v for k, v, _ in screened}
        keep.write(json.dumps({"screened_cpu_s": [t for _, _, t in screened]}) + "\n")
        # truth-major order: a run cut short has whole truths (every N and seed) but the last few
        todo = [(f, i, n, s, own[(f, i)]) for (f, i) in truths for n in NS for s in range(seeds)]
        for k, r in enumerate(pool.map(job, todo, chunksize=1)):
            results.append(r)
            keep.write(json.dumps(r) + "\n")
            keep.flush()
            if (k + 1) % 20 == 0 or k + 1 == len(todo):
                print(f"{k + 1}/{len(todo)} logs, {time.time() - start:.0f} s", flush=True)
    partial.unlink()
    return _write_outputs(out, results, [t for _, _, t in screened], label=label, command=command,
                          instances=instances, offset=offset, seeds=seeds, wall_s=time.time() - start)


def _write_outputs(out, results, screened_cpu, *, label, command, instances, offset, seeds, wall_s) -> dict:
    from studies.tables import write_csv

    rows = [r for res in results for r in res["rows"]]
    write_csv(rows, out / "model_error.csv")
    write_csv([c for res in results for c in res["coverage"]], out / "coverage.csv")
    write_csv([res["summary"] for res in results], out / "logs.csv")
    meta = {"label": label, "command": command, "instances": instances, "offset": offset, "seeds": seeds, "families": list(FAMS),
            "ns": list(NS), "eps": EPS, "wall_s": wall_s, "logs": len(results),
            "truth_cpu_s": float(np.mean(screened_cpu)),
            "cpu_s_per_log": {str(n): float(np.mean([r["summary"]["cpu_s"] for r in results if r["summary"]["n"] == n]))
                              for n in NS}}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return {"rows": rows, "logs": [r["summary"] for r in results], "meta": meta}


# --------------------------------------------------------------------------
# the report


def _num(v):
    if v is None or v == "":
        return math.nan
    if isinstance(v, (int, float)):
        return v
    try:
        f = float(v)
    except ValueError:
        return v
    return int(f) if f.is_integer() and "." not in v and "e" not in v.lower() and "nan" not in v.lower() else f


def load_folder(folder) -> dict:
    """A results folder's rows, logs and meta, with numbers parsed."""
    from studies.tables import read_csv

    folder = Path(folder)
    conv = lambda rs: [{k: (_num(v) if k not in ("family", "policy", "error", "observation") else v)
                        for k, v in r.items()} for r in rs]
    out = {"rows": conv(read_csv(folder / "model_error.csv")), "logs": conv(read_csv(folder / "logs.csv")),
           "meta": json.loads((folder / "meta.json").read_text())}
    for r in out["rows"]:
        for k in ("n", "seed", "instance"):
            r[k] = int(r[k])
    for r in out["logs"]:
        for k in ("n", "seed", "instance"):
            r[k] = int(r[k])
    return out


def _f(x, nd=3) -> str:
    if x is None or (isinstance(x, float) and (math.isnan(x) or math.isinf(x))):
        return "-" if not (isinstance(x, float) and math.isinf(x)) else "inf"
    return f"{round(x, nd) + 0.0:.{nd}f}"


def _mean_ci(x, seed=0) -> str:
    from studies.stats import bca_interval

    x = np.asarray(x, float)
    if x.size == 0:
        return "-"
    if x.size < 3:
        return f"{_f(x.mean())} (n={x.size})"
    lo, hi = bca_interval(x, level=LEVEL, n_boot=N_BOOT, seed=seed)
    return f"{_f(x.mean())} [{_f(lo)}, {_f(hi)}]"


def _table(header, rows) -> list:
    return (["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
            + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def ess_bin(x: float) -> str:
    """The label of the :data:`ESS_BINS` bin `x` falls in.

    >>> ess_bin(0.0), ess_bin(3.2), ess_bin(250.0)
    ('[0, 1)', '[1, 5)', '>= 100')
    """
    edges = list(ESS_BINS)
    for lo, hi in zip(edges, edges[1:]):
        if lo <= x < hi:
            return f"[{lo:g}, {hi:g})"
    return f">= {edges[-1]:g}"


def planned_tests(rows) -> list:
    """Every planned test (:data:`CONTRASTS` x :data:`NS`): mean d, BCa interval, sign-flip p, Holm p."""
    from studies.stats import bca_interval, holm, sign_flip_test

    out = []
    for n in NS:
        for contrast in CONTRASTS:
            d = truth_diffs(rows, contrast, n)
            x = np.array([np.mean(v) for v in d.values()])
            if x.size == 0:
                continue
            lo, hi = bca_interval(x, level=LEVEL, n_boot=N_BOOT, seed=n) if x.size >= 3 else (math.nan, math.nan)
            out.append({"n": n, "contrast": contrast, "truths": int(x.size), "mean": float(x.mean()), "lo": lo,
                        "hi": hi, "up": int((x > EQ).sum()), "down": int((x < -EQ).sum()),
                        "p": float(sign_flip_test(x, seed=n))})
    for t, q in zip(out, holm([t["p"] for t in out])):
        t["p_holm"] = float(q)
    return out


def write_report(folder, res, *, pilot, size) -> None:
    """``report.md`` of a run: design, power calculation, tests, error cost against ESS, coverage per row."""
    from planner.io.atomic import write_text

    folder = Path(folder)
    rows = [r for r in res["rows"] if r.get("policy")]
    ok = [r for r in rows if not (isinstance(r.get("error_cost"), float) and math.isnan(r["error_cost"]))]
    logs = res["logs"]
    meta = res["meta"]
    m = len(CONTRASTS) * len(NS)
    label = meta.get("label", "")
    L = [f"# Model error with controlled log coverage (issue 24, points 3 and 5){' - ' + label.upper() if label != 'full' else ''}", ""]
    if label == "quick":
        L += ["**Quick run** (the test's end-to-end check): one truth per family, one seed, small logs. Not a result.", ""]
    truths = sorted({(r["family"], r["instance"]) for r in logs})
    L += [f"Command: `{meta['command']}`; {len(logs)} logs ({len(truths)} truths x N in {list(NS)} x {meta['seeds']} "
          f"seeds); wall time {meta['wall_s']:.0f} s with the pool's workers; CPU per log "
          + ", ".join(f"N={k}: {v:.1f} s" for k, v in meta["cpu_s_per_log"].items()) + ".", ""]
    L += ["## Design", "",
          f"- Truths: `studies.families.family_domain(family, instance, 'medium')` for families {', '.join(FAMS)}, "
          f"instances {meta.get('offset', 0)}..{meta.get('offset', 0) + meta['instances'] - 1} (the pilot used "
          f"instances {PILOT_OFFSET}..{PILOT_OFFSET + PILOT - 1}, none of them here); the study's caller.",
          "- Declared (the prior calibration starts from): `studies.distort.miscalibrated` (establishing sources' "
          "log-odds x2, the others x0.5).",
          f"- Logger: `explore:{EPS:g}:SEED` on the declared domain (epsilon-greedy over one-step; every eligible "
          "source has probability at least EPS/|E| at every step; the gates and the hard budget as every policy), "
          "a fresh seed per session; every session resolved; a real SQLite log (schema 2, each acquisition's "
          "propensity stored); read back streamed, twice (coverage, then `calibrate`, EM, default prior strength).",
          "- Models: the posterior mean; policies " + ", ".join(f"`{p}`" for p, _ in POLICIES)
          + "; exact loss under the truth (`expected_loss_under`). Error cost = that loss minus the same (base) "
          "policy's loss planning on the truth.",
          "- Coverage per row (an observation's outcome distribution in one case of its parents): n = resolved "
          "sessions that acquired it with a declared outcome in that case; ESS = Kish's (sum w)^2 / sum w^2 with "
          "w = 1/propensity. *Loggable* rows: an admitted observation, a case of positive prior probability "
          "(a rejected observation is never acquired by any policy). A log's `min_ess` is its least loggable "
          "row's ESS.",
          f"- Planned tests: per N in {list(NS)} and deep policy in {list(CONTRASTS)}: d = its error cost minus "
          f"one-step's, per truth (seeds averaged); sign-flip permutation test of mean d = 0 (two-sided), Holm over "
          f"the {m} tests at {ALPHA:g}. Intervals: {LEVEL:.0%} BCa ({N_BOOT} resamples) over truths.", ""]
    L += ["## Power calculation (from the pilot, before the arm was run)", ""]
    if pilot is None:
        L += ["Not computed in a quick run.", ""]
    else:
        pm = pilot["meta"]
        z = _z(1 - ALPHA / (2 * m)) + _z(POWER)
        L += [f"Pilot: `{pm['command']}`, {pm['instances']} instances x {len(FAMS)} families = "
              f"{pm['instances'] * len(FAMS)} truths, {pm['seeds']} seeds, N in {pm['ns']}. Per test: delta = mean "
              "truth-level d, s_b = between-truth SD (the variance of truth means less the seed part), s_w = "
              "within-truth SD over seeds. Truths needed for power "
              f"{POWER:g} at the Bonferroni level {ALPHA:g}/{m} (Holm's first step; Holm rejects at least what it "
              f"rejects): n = ((z(1 - {ALPHA:g}/{2 * m}) + z({POWER:g})) * sqrt(s_b^2 + s_w^2/S) / |delta|)^2, "
              f"z-sum {z:.3f}, S seeds per truth (normal approximation of the sign-flip test of the mean; at least 3).", ""]
        seeds_cols = sorted({s for t in pilot["power"] for s in t["truths"]})
        L += _table(["N", "contrast", "pilot truths", "delta", "s_b", "s_w"] + [f"truths, S={s}" for s in seeds_cols],
                    [[t["n"], f"`{t['contrast']}`", t["pilot_truths"], _f(t["delta"]), _f(t["s_b"]), _f(t["s_w"])]
                     + [("inf" if math.isinf(t["truths"][s]) else t["truths"][s]) for s in seeds_cols]
                     for t in pilot["power"]])
        cpu = pm["cpu_s_per_log"]
        L += ["", f"Cost (pilot, one core): " + ", ".join(f"{_f(v, 2)} s per log of N={k}" for k, v in cpu.items())
              + f", {_f(pm['truth_cpu_s'], 2)} s per truth for the policies on the truth. Budget {CPU_BUDGET_S / 60:.0f} "
              f"min of one core; truths come in whole instances ({len(FAMS)} per instance).", ""]
        if size is not None:
            pw = ", ".join(f"N={n} `{c}`" for n, c in size["powered"]) or "none"
            rest = m - len(size["powered"])
            L += [f"**Chosen**: {size['instances']} instances per family ({size['truths']} truths) x {size['seeds']} "
                  f"seeds, estimated {size['cost_s'] / 60:.1f} min of one core: the cheapest size that powers the "
                  f"most tests within the budget. Tests it powers (by the pilot's estimates): {pw}. "
                  + (f"The other {rest} tests would need more truths than the budget allows (or their pilot effect "
                     "is 0): **underpowered by design**, reported but not expected to reach significance."
                     if rest else f"That is all {m}: the hardest (largest n) sets the size.") + (f" Run with {meta['instances']} instances x {meta['seeds']} seeds." if
                                      (meta['instances'], meta['seeds']) != (size['instances'], size['seeds']) else ""), ""]
            if size.get("simulated"):
                L += [f"Check of the normal approximation (the pilot's truth means resampled, {size['truths']} truths, "
                      f"2000 resamples, z-test at {ALPHA:g}/{m}): simulated power "
                      + ", ".join(f"N={n} `{c}` {v:.2f}" for (n, c), v in size["simulated"].items())
                      + f". Resampling 20 pilot truths cannot produce an effect the pilot did not see (nor rule one "
                      "out): both figures are only as good as the pilot.", ""]
    tests = planned_tests(ok)
    pols = [p_ for p_, _ in POLICIES]
    L += ["## The planned tests: does depth amplify the error of a calibrated model?", ""]
    L += _table(["N", "deep policy", "truths", "mean d (deep - one-step) [90% BCa]", "d>0 / d<0", "sign-flip p",
                 "Holm p", f"verdict at {ALPHA:g}"],
                [[t["n"], f"`{t['contrast']}`", t["truths"],
                  f"{_f(t['mean'])} [{_f(t['lo'])}, {_f(t['hi'])}]" if not math.isnan(t["lo"]) else _f(t["mean"]),
                  f"{t['up']} / {t['down']}", f"{t['p']:.2g}", f"{t['p_holm']:.2g}",
                  ("depth amplifies" if t["mean"] > 0 else "depth is more robust") if t["p_holm"] <= ALPHA else "no decision"]
                 for t in tests])
    L += ["", "(The sign-flip test draws 20,000 sign patterns: its smallest p is 1/20,001 = 5e-05, so equal Holm p "
          "values here mean every test is at that floor.)", ""]
    # regret: does the amplified error cost depth its lead?
    L += ["### Does the amplified error cost depth its lead?", "",
          "Mean regret under the truth against the true optimum (loss planning on the calibrated model minus "
          "`bounded`'s loss planning on the truth), per truth (seeds averaged), 90% BCa over truths; the last row is "
          "each base policy planning on the truth itself.", ""]
    opt = {}
    for r in ok:
        if r["policy"] == "bounded":
            opt[(r["family"], r["instance"])] = r["on_truth"]
    body = []
    for n in NS:
        cells = []
        for p_ in pols:
            per = {}
            for r in ok:
                if r["n"] == n and r["policy"] == p_ and (r["family"], r["instance"]) in opt:
                    per.setdefault((r["family"], r["instance"]), []).append(r["loss"] - opt[(r["family"], r["instance"])])
            cells.append(_mean_ci([np.mean(v) for v in per.values()], seed=n))
        body.append([f"N = {n}"] + cells)
    own_reg = []
    for p_, b in POLICIES:
        per = {}
        for r in ok:
            if r["policy"] == p_ and (r["family"], r["instance"]) in opt:
                per[(r["family"], r["instance"])] = r["on_truth"] - opt[(r["family"], r["instance"])]
        own_reg.append(_f(float(np.mean(list(per.values())))) if per else "-")
    body.append(["on the truth"] + own_reg)
    L += _table(["model"] + [f"`{p_}`" for p_ in pols], body)
    lead = []
    for n in NS:
        means = {}
        for p_ in pols[:4]:
            v = [r["loss"] - opt[(r["family"], r["instance"])] for r in ok if r["n"] == n and r["policy"] == p_
                 and (r["family"], r["instance"]) in opt]
            means[p_] = float(np.mean(v)) if v else math.nan
        lead.append((n, min(means, key=lambda k: means[k]), means))
    L += ["", "Lowest mean regret among the non-conservative policies (planning on the same calibrated model): "
          + "; ".join(f"N={n}: `{best}` ({_f(ms[best])}; one-step {_f(ms['one-step'])})" for n, best, ms in lead) + ".", ""]
    # error cost by depth against the log's coverage
    key = {(r["family"], r["instance"], r["n"], r["seed"]): r for r in logs}
    pols = [p for p, _ in POLICIES]
    bins = [ess_bin(x) for x in ESS_BINS]
    L += ["## Error cost by depth against the rows' effective sample size", "",
          "Each log falls in the bin of its least-covered loggable row's ESS (`min_ess`). Cell: mean error cost; "
          "logs of one truth in a bin are averaged first, then the BCa interval is over truths (descriptive: ESS is "
          "an outcome of the log, not a design factor).", ""]
    def cells(sub, policies):
        # per policy, the BCa interval over truths of each truth's mean error cost
        out = []
        for p in policies:
            per = {}
            for r in sub:
                if r["policy"] == p:
                    per.setdefault((r["family"], r["instance"]), []).append(r["error_cost"])
            out.append(_mean_ci([np.mean(v) for v in per.values()]))
        return out

    def row(label, sub):
        nl = len({(r["family"], r["instance"], r["n"], r["seed"]) for r in sub})
        nt = len({(r["family"], r["instance"]) for r in sub})
        return [label, f"{nl} / {nt}"] + cells(sub, pols)

    body = []
    for b in bins:
        sub = [r for r in ok if ess_bin(key[(r["family"], r["instance"], r["n"], r["seed"])]["min_ess"]) == b]
        if sub:
            body.append(row(f"min ESS {b}", sub))
    for n in NS:
        body.append(row(f"N = {n} (all)", [r for r in ok if r["n"] == n]))
    L += _table(["logs", "logs / truths"] + [f"`{p}`" for p in pols], body)
    L += ["", "The same by the median loggable row's ESS:", ""]
    body = []
    for b in bins:
        sub = [r for r in ok if ess_bin(key[(r["family"], r["instance"], r["n"], r["seed"])]["median_ess"]) == b]
        if sub:
            body.append([f"median ESS {b}", len({(r['family'], r['instance'], r['n'], r['seed']) for r in sub})]
                        + cells(sub, pols[:4]))
    L += _table(["logs", "n logs"] + [f"`{p}`" for p in pols[:4]], body)
    # coverage
    L += ["", "## Coverage of the log per row", "",
          "Per family and N, over its logs: loggable rows per truth, the share of them with no data, the least and "
          "median row ESS (medians over logs), and ESS / n over rows with data (1: equal weights; lower: the "
          "propensities spread the weights). Rows of rejected observations are never loggable and are not counted. "
          "Every row of every log: `coverage.csv`.", ""]
    from studies.tables import read_csv

    cov = read_csv(folder / "coverage.csv") if (folder / "coverage.csv").is_file() else []
    body = []
    for fam in FAMS:
        for n in NS:
            lg = [r for r in logs if r["family"] == fam and r["n"] == n]
            if not lg:
                continue
            cv = [c for c in cov if c["family"] == fam and int(c["n"]) == n and c["loggable"] == "True"
                  and int(c["row_n"]) > 0]
            ratio = np.mean([float(c["ess"]) / int(c["row_n"]) for c in cv]) if cv else math.nan
            never = np.mean([int(r["all_rows"]) - int(r["rows"]) for r in lg])
            body.append([fam, n, len(lg), _f(np.mean([r["rows"] for r in lg]), 1), _f(never, 1),
                         _f(np.mean([r["share_empty"] for r in lg]), 3), _f(float(np.median([r["min_ess"] for r in lg])), 1),
                         _f(float(np.median([r["median_ess"] for r in lg])), 1), _f(ratio, 3)])
    L += _table(["family", "N", "logs", "loggable rows", "never-loggable rows", "share empty", "min ESS",
                 "median ESS", "ESS / n"], body)
    ctl = read_csv(folder / "control.csv") if (folder / "control.csv").is_file() else []
    if ctl:
        nmax = int(ctl[0]["n"])
        L += ["", f"### Against the second edition's logger (`{CONTROL}`), same truths, N = {nmax}, seed 0", "",
              f"The first {len({c['instance'] for c in ctl})} instances of each family logged again with `{CONTROL}` "
              "on the declared domain (coverage only; nothing calibrated or scored). Loggable rows as above.", ""]
        body = []
        for fam in FAMS:
            cs = [c for c in ctl if c["family"] == fam]
            ex = [r for r in logs if r["family"] == fam and r["n"] == nmax and r["seed"] == 0
                  and str(r["instance"]) in {c["instance"] for c in cs}]
            if not cs or not ex:
                continue
            body.append([fam, len(cs), _f(np.mean([float(c["share_empty"]) for c in cs]), 3),
                         _f(np.mean([r["share_empty"] for r in ex]), 3),
                         _f(float(np.median([float(c["min_ess"]) for c in cs])), 1),
                         _f(float(np.median([r["min_ess"] for r in ex])), 1)])
        L += _table(["family", "truths", f"share empty, {CONTROL}", f"share empty, explore:{EPS:g}",
                     f"min ESS, {CONTROL}", f"min ESS, explore:{EPS:g}"], body)
    # verdicts
    sig = [t for t in tests if t["p_holm"] <= ALPHA]
    L += ["", "## Verdicts", ""]
    if label != "full":
        L += [f"- This is a {label} run: its numbers check the machinery, not the question."]
    L += [f"- {len(sig)} of {len(tests)} planned tests are significant after Holm at {ALPHA:g}: "
          + (", ".join(f"N={t['n']} `{t['contrast']}` (mean d {_f(t['mean'])}, Holm p {t['p_holm']:.3g})" for t in sig)
             or "none") + "."]
    if tests:
        best = min(tests, key=lambda t: t["p_holm"])
        L += [f"- Smallest Holm p: {best['p_holm']:.3g} (N={best['n']} `{best['contrast']}`, mean d {_f(best['mean'])})."]
    empty = [r["share_empty"] for r in logs if r["n"] == max(NS)]
    if empty:
        L += [f"- Coverage: at N = {max(NS)} the share of loggable rows with no data is {_f(float(np.mean(empty)))} on "
              f"average over the exploring logs (max {_f(float(np.max(empty)))})"
              + (f"; on the control truths `{CONTROL}` leaves {_f(np.mean([float(c['share_empty']) for c in ctl]))} of "
                 "them empty." if ctl else ".")]
    if lead:
        L += ["- Depth's lead: planning on the same calibrated model, `" + "`, `".join(sorted({b for _, b, _ in lead}))
              + "` has the lowest mean regret of the non-conservative policies at every N "
              + "(" + ", ".join(f"N={n}: {_f(ms[b])} against one-step's {_f(ms['one-step'])}" for n, b, ms in lead)
              + "): depth pays more for the same model error than one-step does, and still loses less."
              if len({b for _, b, _ in lead}) == 1 else
              "- Depth's lead: the lowest mean regret is "
              + "; ".join(f"N={n} `{b}`" for n, b, _ in lead) + "."]
    # error cost against coverage, in words: the lowest and the highest min-ESS bin met
    met = [b for b in bins if len({(r["family"], r["instance"]) for r in logs if ess_bin(r["min_ess"]) == b}) >= 10]
    if len(met) >= 2:
        lo_b, hi_b = met[0], met[-1]
        def _bin_mean(p, b):  # as the table: the truth's logs in the bin averaged first, then over truths
            per = {}
            for r in ok:
                if r["policy"] == p and ess_bin(key[(r["family"], r["instance"], r["n"], r["seed"])]["min_ess"]) == b:
                    per.setdefault((r["family"], r["instance"]), []).append(r["error_cost"])
            return float(np.mean([np.mean(v) for v in per.values()])) if per else math.nan
        L += ["- Error cost against coverage (descriptive; bins with at least 10 truths): from min ESS " + lo_b
              + " to " + hi_b + ", "
              + "; ".join(f"`{p}` {_f(_bin_mean(p, lo_b))} -> {_f(_bin_mean(p, hi_b))}" for p in pols[:4])
              + ". The bins are not a controlled factor: a log's min ESS rises with N and differs by family, so "
              "a bin mixes both; the per-N rows of the same table are the controlled comparison."]
    L += ["- The power calculation rests on a pilot of "
          + (f"{pilot['meta']['instances'] * len(FAMS)} truths" if pilot else "no truths")
          + " whose differences are mostly exact zeros with a few large values (a truth either changes its "
          "decision under the calibrated model or not), so its s_b and s_w are rough; the simulated power above "
          "resamples the same pilot and shares its blind spots.",
          "- The tests compare the deep policies' *error cost* (loss on the model minus loss on the truth), not "
          "their losses: a deep policy can pay more for the same model error and still lose less than one-step "
          "(its loss on the truth is lower)."]
    L += ["", "Raw rows: `model_error.csv` (truth x N x seed x policy), `logs.csv` (one row per log: coverage "
          "summary, CPU seconds), `coverage.csv` (every row of every log), `meta.json`."]
    write_text(folder / "report.md", "\n".join(L) + "\n")


def controls(folder, meta, *, workers: int = 1) -> None:
    """``control.csv``: the second edition's logger's coverage on the first truths, at the largest N, seed 0."""
    from concurrent.futures import ProcessPoolExecutor

    from studies.tables import write_csv

    folder = Path(folder)
    if (folder / "control.csv").is_file():
        return
    n = max(int(x) for x in meta["ns"])
    k = min(CONTROL_INSTANCES, int(meta["instances"]))
    todo = [(f, i, n, 0) for i in range(int(meta.get("offset", 0)), int(meta.get("offset", 0)) + k) for f in FAMS]
    with ProcessPoolExecutor(workers) as pool:
        write_csv(list(pool.map(control_coverage, todo, chunksize=1)), folder / "control.csv")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m studies.depth3.model_error", description=__doc__.splitlines()[0])
    p.add_argument("--pilot", action="store_true", help="the pilot the power calculation reads")
    p.add_argument("--quick", action="store_true", help="one instance per family, one seed, N in (10, 40)")
    p.add_argument("--out", default=None)
    p.add_argument("--pilot-dir", default="studies/results/depth3-model-error/pilot")
    p.add_argument("--instances", type=int, default=None, help="override the power calculation's choice")
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--render", default=None, metavar="DIR",
                   help="write DIR's report again from its CSVs (and its control coverage, computed when missing)")
    p.add_argument("--from-partial", default=None, metavar="DIR",
                   help="a run cut short: write its outputs and report from DIR/partial.jsonl (labelled partial)")
    args = p.parse_args(argv)
    global NS
    command = "python3 -m studies.depth3.model_error " + " ".join(argv if argv is not None else sys.argv[1:])
    rep = sys.modules[__name__]  # the report is below, in this module

    if args.quick:
        saved, NS = NS, (10, 40)  # the module's log sizes, for this run only (a caller in-process keeps its own)
        try:
            out = Path(args.out or "studies/results/depth3-model-error/quick")
            res = run(1, 1, out, workers=args.workers, label="quick", command=command.strip())
            controls(out, res["meta"], workers=args.workers)
            rep.write_report(out, res, pilot=None, size=None)
        finally:
            NS = saved
        print(f"{out}: {len(res['rows'])} rows")
        return 0
    if args.pilot:
        out = Path(args.out or args.pilot_dir)
        res = run(PILOT, PILOT_SEEDS, out, workers=args.workers, label="pilot", command=command.strip(),
                  offset=PILOT_OFFSET)
        print(f"{out}: {len(res['rows'])} rows")
        return 0
    pilot_dir = Path(args.pilot_dir)
    if not (pilot_dir / "model_error.csv").is_file():
        print(f"no pilot in {pilot_dir}: run with --pilot first (power first)", file=sys.stderr)
        return 2
    pilot = rep.load_folder(pilot_dir)
    ptab = power_table(pilot["rows"], tests=len(CONTRASTS) * len(NS))
    cpu = {int(k): v for k, v in pilot["meta"]["cpu_s_per_log"].items()}
    cpu["truth"] = pilot["meta"]["truth_cpu_s"]
    size = choose_size(ptab, cpu)
    size["simulated"] = simulated_power(pilot["rows"], size["truths"], tests=len(CONTRASTS) * len(NS))
    pinfo = {"rows": pilot["rows"], "meta": pilot["meta"], "power": ptab}
    if args.render:
        folder = Path(args.render)
        res = rep.load_folder(folder)
        controls(folder, res["meta"], workers=args.workers)
        rep.write_report(folder, res, pilot=pinfo, size=size)
        print(f"{folder}: report written again")
        return 0
    if args.from_partial:
        folder = Path(args.from_partial)
        lines = (folder / "partial.jsonl").read_text().splitlines()
        screened = json.loads(lines[0])["screened_cpu_s"]
        results = [json.loads(x) for x in lines[1:] if x.strip()]
        done = {}
        for r in results:
            done.setdefault((r["summary"]["family"], r["summary"]["instance"]), []).append(r)
        whole = [r for k, rs in done.items() if len(rs) == len(NS) * (args.seeds or size["seeds"]) for r in rs]
        meta_inst = len({k[1] for k in done})
        res = _write_outputs(folder, whole, screened, label="partial", command=command.strip() + " (cut short)",
                             instances=meta_inst, offset=0, seeds=args.seeds or size["seeds"], wall_s=math.nan)
        controls(folder, res["meta"], workers=args.workers)
        rep.write_report(folder, res, pilot=pinfo, size=size)
        print(f"{folder}: {len(res['rows'])} rows from {len(whole)} of {len(results)} logs (whole truths only)")
        return 0
    inst = args.instances or size["instances"]
    seeds = args.seeds or size["seeds"]
    out = Path(args.out or "studies/results/depth3-model-error")
    res = run(inst, seeds, out, workers=args.workers, label="full", command=command.strip())
    controls(out, res["meta"], workers=args.workers)
    rep.write_report(out, res, pilot=pinfo, size=size)
    print(f"{out}: {len(res['rows'])} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
