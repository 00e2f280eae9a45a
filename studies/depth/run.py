"""The depth study, second edition: wide families, every policy, model error, latency as a sweep.

``planner bench depth`` runs this (the first edition's code is gone; git keeps
it, and its committed results are in ``studies/results/depth-edition1``). The
cases are the wide generator's
(:func:`studies.wide.wide_instance`): generator seeds
:data:`SEEDS`, instances 0, 1, ... per seed, each case at its own drawn
budget level, so every case is one instance and the intervals resample
cases. Four kinds of job, each independent of the others and of the order
they run in (every draw is seeded from the job's key):

- **case** (every instance): V* (certified, or an interval), then every
  policy of :data:`POLICIES` measured exactly
  (:func:`studies.measure.measure_exact`, each decision timed once: the
  latency columns are single-decision times, p95 over the decisions an
  episode takes, weighted by their probability); an evaluation past its
  caps (:data:`EVAL_CAP` nodes of the policy's tree, :data:`EVAL_WORK` search
  nodes of its decisions: counts, never the clock) reports bounds on the
  loss instead (``loss_lo``, ``loss_up``: :func:`studies.measure.loss_bounds`);
- **peer** (the first :attr:`Config.peer_instances` of each seed, when
  pomdp_py is installed): POUCT with one-step rollouts and a tuned
  exploration constant at equal node budgets (:data:`PEER_SIMS` simulations
  per decision, against ``bounded:N`` at the same N) and at
  :data:`PEER_MS` of planning per decision, on common random numbers;
- **model** (the first :attr:`Config.model_instances` of each seed): the
  policies of :data:`MODEL_POLICIES` plan on a wrong model and are scored
  exactly under the truth (:func:`planner.evaluation.evaluate.expected_loss_under`): every
  likelihood row's log-odds scaled by lambda in :data:`LAMBDAS`
  (:func:`studies.distort.scaled`), and likelihoods estimated from N in
  :data:`NS` logged sessions (:func:`planner.session.simulate.simulate_log` through a
  real SQLite log, then :func:`planner.calibration.calibrate.calibrate` with the
  miscalibrated declared domain as its prior);
- **frontier** (the first :attr:`Config.frontier_instances` small instances
  of each seed): the exact loss of :data:`FRONTIER_POLICIES` at calls limits
  :data:`FRONTIER_CALLS` and penalty-weight multipliers :data:`FRONTIER_WEIGHTS`.

:mod:`studies.depth.report` turns the rows into the report, the regime map
and the plots.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from pathlib import Path

import attrs
import numpy as np

from planner.gates.admission import admit
from planner.evaluation.audit import Audit
from planner.model.caller import Caller
from planner.compile import compile_domain
from planner.model.domain import Domain
from planner.errors import EvaluationNodeCap, PlannerError
from planner.tolerances import VALUE_TOL
from planner.node import root_node
from planner.policies import parse_policy
from studies import peer as peer_mod
from planner.io.atomic import replacing_folder, write_text
from studies.depth.design import (
    CHEAP,
    CONSERVATIVE,
    DEPTH,
    FRONTIER_CALLS,
    FRONTIER_POLICIES,
    FRONTIER_WEIGHTS,
    HISTORICAL,
    LAMBDAS,
    MODEL_POLICIES,
    NS,
    POLICIES,
    SEEDS,
)
from studies.depth.report import make_plots, render
from studies.distort import miscalibrated, scaled
from studies.families import STUDY_PURPOSE, SUBJECT_ENTITLEMENTS, stable_seed
from studies.jobs import Progress, default_workers, map_jobs
from studies.tables import write_csv
from studies.wide import wide_instance
from studies.measure import EvaluationCapped, draw_episodes, loss_bounds, measure_exact, measure_mc
from studies.optimal import OptimalValues

__all__ = ["SEEDS", "POLICIES", "CHEAP", "DEPTH", "MODEL_POLICIES", "Config", "Job", "build_jobs", "run_job",
           "run_jobs", "run_study", "vstar", "caller", "StudyInterrupted", "DEFAULT_OUT", "DEFAULT_OUT_QUICK"]

#: Frontier instances have at most this many observations (every policy is evaluated 24 times).
FRONTIER_MAX_OBS = 16

#: POUCT: simulations per decision at equal node budgets (against bounded:N), and planning times (ms).
PEER_SIMS = (1000,)
PEER_MS = (1.0, 10.0, 100.0)
#: POUCT's planning time per decision under model error (ms).
PEER_MODEL_MS = 10.0
#: Exploration multipliers (of each case's loss range) tried when tuning POUCT, on instances not in the study.
PEER_TUNE_GRID = (0.03, 0.1, 0.3, 1.0, 3.0)
#: Simulations per decision while tuning.
PEER_TUNE_SIMS = 300
#: The tuning instances: generator seed and instances (seed 99 is not one of :data:`SEEDS`).
PEER_TUNE_CASES = ((99, 0), (99, 1), (99, 2), (99, 3))

#: Node cap of the second, exhaustive-only attempt at V* where bounded does not certify it at the root.
EXHAUSTIVE_CAP = 3_000_000
#: Distinct nodes one policy's exact evaluation may visit on a case; past it the row records the cap
#: (its loss is NaN, left out of every paired comparison and counted in the report, with bounds on it).
#: Without it a search-heavy policy on a 40-observation case with no budget re-plans at each of up to
#: 200,000 nodes of its own tree, for the better part of an hour.
EVAL_CAP = 30_000
#: Search nodes one policy's decisions may expand, in all, in one case's exact evaluation (summed as
#: :func:`studies.measure.search_nodes` counts them). A count, not a clock: it bites in the same place on
#: every machine and on a cold numba cache alike; a capped row reports bounds on its loss.
EVAL_WORK = 5_000_000
#: A value is certified when its interval is at most this wide.
CERT_GAP = VALUE_TOL


class StudyInterrupted(PlannerError):
    """The run was interrupted (``KeyboardInterrupt``); ``str(err)`` says which complete set is in place.

    Attributes
    ----------
    out : pathlib.Path
        The output folder.
    kept_previous : bool
        True when the folder holds the previous results (or none), False
        when the interrupt came after the new set was swapped in.
    """

    def __init__(self, out, kept_previous: bool):
        self.out = out
        self.kept_previous = kept_previous
        what = "the previous results are unchanged" if kept_previous else "the new results are complete and in place"
        super().__init__(f"{out}: {what}")


def caller() -> Caller:
    """The study's caller: the subject's entitlements and the study's purpose."""
    return Caller(entitlements=list(SUBJECT_ENTITLEMENTS), purpose=STUDY_PURPOSE)


@attrs.frozen(kw_only=True)
class Config:
    """How many instances of each kind of job, and the Monte Carlo sizes.

    :meth:`full` is the committed study; :meth:`quick` the one-minute version
    (small instances only, two models, a small frontier, no peer unless installed).
    """

    instances: int  # per seed
    peer_instances: int = 2
    peer_episodes: int = 30
    model_instances: int = 2
    lambdas: tuple = LAMBDAS
    ns: tuple = NS
    frontier_instances: int = 2
    frontier_calls: tuple = FRONTIER_CALLS
    frontier_weights: tuple = FRONTIER_WEIGHTS
    max_obs: int | None = None  # quick: only instances with at most this many observations
    peer_ms: tuple = PEER_MS
    peer_sims: tuple = PEER_SIMS
    tune: bool = True

    @classmethod
    def full(cls) -> "Config":
        return cls(instances=24, peer_episodes=50)

    @classmethod
    def quick(cls) -> "Config":
        return cls(instances=2, peer_instances=1, peer_episodes=8, model_instances=1, lambdas=(0.5, 2.0), ns=(20,),
                   frontier_instances=1, frontier_calls=(1, 3, None), frontier_weights=(1.0, 4.0), max_obs=10,
                   peer_ms=(1.0, 10.0), peer_sims=(200,), tune=False)


@attrs.frozen
class Job:
    """One unit of work: ``kind`` in case / peer / model / frontier, the instance, and parameters."""

    kind: str
    seed: int
    instance: int
    param: tuple = ()

    @property
    def key(self) -> str:
        tail = "/".join(str(p) for p in self.param)
        return f"{self.kind}/s{self.seed}/i{self.instance:03d}" + (f"/{tail}" if tail else "")


def _instances(seed: int, n: int, max_obs: int | None) -> list:
    """The first `n` instances of `seed` (with at most `max_obs` observations, when given)."""
    if max_obs is None:
        return list(range(n))
    out, i = [], 0
    while len(out) < n and i < 10_000:
        k, data = wide_instance(seed, i)
        if len(data["observations"]) <= max_obs:
            out.append(i)
        i += 1
    return out


def build_jobs(config: Config, *, peer: bool = False, peer_exploration: float | None = None) -> list:
    """Every job of a run, the dearest kinds first (so two workers finish together).

    >>> jobs = build_jobs(Config.quick())
    >>> sorted({j.kind for j in jobs}), jobs[0].kind, jobs[-1].kind
    (['case', 'frontier', 'model'], 'model', 'case')
    """
    jobs = []
    size = {}  # observations per (seed, instance): the frontier's filter and the job order
    for s in SEEDS:
        inst = _instances(s, config.instances, config.max_obs)
        size.update({(s, i): len(wide_instance(s, i)[1]["observations"]) for i in inst})
        if peer:
            for i in inst[:config.peer_instances]:
                jobs.append(Job("peer", s, i, (config.peer_episodes, config.peer_ms, config.peer_sims,
                                               peer_exploration)))
        for i in inst[:config.model_instances]:
            pe = config.peer_episodes if peer else 0
            jobs += [Job("model", s, i, ("scaled", lam, pe, peer_exploration)) for lam in config.lambdas]
            jobs += [Job("model", s, i, ("estimated", n, pe, peer_exploration)) for n in config.ns]
        small = [i for i in inst if size[s, i] <= FRONTIER_MAX_OBS]
        for i in small[:config.frontier_instances]:
            jobs.append(Job("frontier", s, i, (config.frontier_calls, config.frontier_weights,
                                               config.peer_episodes if peer else 0, peer_exploration)))
        jobs += [Job("case", s, i) for i in inst]
    order = {"peer": 0, "model": 1, "frontier": 2, "case": 3}
    # the largest cases first, so that two workers finish together
    return sorted(jobs, key=lambda j: (order[j.kind], -size[j.seed, j.instance], j.seed, j.instance, str(j.param)))


# --------------------------------------------------------------------------
# the optimum


def vstar(domain, who: Caller) -> dict:
    """V* of a domain for `who`: ``{"v_lo", "v_up", "certified", "vstar_source", "t_vstar_s"}``.

    The default planner ``bounded`` at the root first; where its interval is
    wider than :data:`CERT_GAP`, its exhaustive phase again with a cap of
    :data:`EXHAUSTIVE_CAP` nodes; where that does not fit either, the interval
    stays (``vstar_source`` = ``interval``).

    >>> from studies.wide import wide_domain
    >>> v = vstar(Domain.from_dict(wide_domain(0, 3)), caller())
    >>> v["certified"], v["vstar_source"], v["v_lo"] == v["v_up"]
    (True, 'bounded', True)
    """
    from lookahead.search import SearchCapExceeded
    from planner.policies.bounded import Bounded
    from planner.session.session import Session

    t0 = time.perf_counter()
    s = Session(domain, Bounded(), caller=who)
    step = s.next()
    lo, up = (float(x) for x in step.info["interval"])
    certified = bool(step.info["certified"]) and up - lo <= CERT_GAP
    source = "bounded"
    if not certified:
        try:
            ex = s.node.search(len(s.compiled.obs_names), max_nodes=EXHAUSTIVE_CAP)
            lo = up = float(ex.value)
            certified, source = True, "exhaustive"
        except SearchCapExceeded:
            source = "interval"
    return {"v_lo": lo, "v_up": up, "certified": certified, "vstar_source": source,
            "t_vstar_s": time.perf_counter() - t0}


# --------------------------------------------------------------------------
# the jobs


def _knob_columns(k, data) -> dict:
    obs = data["observations"]
    out = {f"k_{name}": v for name, v in k.to_json().items()}
    out.update({
        "or_steps": sum(n.startswith("prereq_") and n.endswith("_alt") for n in obs),
        "lineage_copies": sum("_copy" in n for n in obs),
        "n_obs": len(obs),
    })
    return out


def _case(job: Job) -> list:
    who = caller()
    k, data = wide_instance(job.seed, job.instance)
    domain = Domain.from_dict(data)
    c = compile_domain(domain)
    adm = admit(c, who)
    audit = Audit(data, who)
    none_action = root_node(c, adm).action
    v = vstar(domain, who)
    t0 = time.perf_counter()
    try:
        optimal = OptimalValues(c, adm)
        if not optimal.feasible:
            optimal = None
    except PlannerError:
        optimal = None
    t_opt = time.perf_counter() - t0
    base = {"seed": job.seed, "instance": job.instance, "case": f"s{job.seed}/i{job.instance:03d}",
            "admitted": int(adm.admitted.sum()), "n_states": int(c.n_states), **_knob_columns(k, data), **v,
            "stop_quality_known": optimal is not None, "t_optimal_values_s": t_opt}
    rows = []
    for spec in POLICIES:
        row = dict(base, policy=spec)
        try:
            m = measure_exact(c, parse_policy(spec), audit=audit, caller=who, optimal=optimal,
                              none_action=none_action, repeats=1, max_nodes=EVAL_CAP, work_cap=EVAL_WORK)
            row.update({key: val for key, val in m.items() if not key.startswith("_")})
            row.update(error="", loss_lo=row["total_loss"], loss_up=row["total_loss"])
        except (EvaluationCapped, EvaluationNodeCap) as e:  # too large to enumerate: bounds instead
            lo, up = loss_bounds(c, parse_policy(spec), who, max_nodes=EVAL_CAP, work_cap=EVAL_WORK)
            row.update(total_loss=math.nan, loss_lo=lo, loss_up=up, error=str(e).splitlines()[0][:200])
        except PlannerError as e:  # the policy's own search cap: it cannot decide here
            row.update(total_loss=math.nan, error=str(e).splitlines()[0][:200])
        except Exception as e:  # noqa: BLE001 - a fault in one policy is reported in its row, not fatal to the run
            row.update(total_loss=math.nan, error=f"{type(e).__name__}: {str(e).splitlines()[0][:180]}")
        J = row["total_loss"]
        row["regret_lo"] = row.get("loss_lo", J) - v["v_up"]
        row["regret_up"] = row.get("loss_up", J) - v["v_lo"]
        row["regret"] = J - v["v_lo"] if v["certified"] else math.nan
        rows.append(row)
    by = {r["policy"]: r for r in rows}
    for r in rows:
        r["gain_vs_onestep"] = by["one-step"]["total_loss"] - r["total_loss"]
        r["gain_vs_none"] = by["none"]["total_loss"] - r["total_loss"]
    return rows


def _peer(job: Job) -> list:
    episodes, ms_list, sims_list, scale = job.param
    who = caller()
    _, data = wide_instance(job.seed, job.instance)
    c = compile_domain(Domain.from_dict(data))
    adm = admit(c, who)
    audit = Audit(data, who)
    states, uniforms = draw_episodes(c, episodes, stable_seed("edition2-peer", job.seed, job.instance))
    ours = {}
    for spec in ("one-step", "bounded", *(f"bounded:{n}" for n in sims_list)):
        _, ep = measure_mc(c, adm, parse_policy(spec), states, uniforms, audit=audit)
        ours[spec] = ep["total"]
    configs = [(f"pouct:{n}sims", {"num_sims": int(n)}, f"bounded:{n}") for n in sims_list]
    configs += [(f"pouct:{ms:g}ms", {"planning_ms": float(ms)}, "bounded") for ms in ms_list]
    configs.append((f"pouct-random:{ms_list[-1]:g}ms", {"planning_ms": float(ms_list[-1]), "rollout": "random"},
                    "bounded"))
    out = []
    n = len(states)
    for label, kw, against in configs:
        kw = dict(kw)
        rollout = kw.pop("rollout", "one-step")
        res = peer_mod.run_pouct(c, adm, states, uniforms, seed=stable_seed("edition2-pouct", job.key, label),
                                 rollout=rollout, exploration_scale=scale, visited_only=True, **kw)
        d = res["total"] - ours[against]
        d1 = res["total"] - ours["one-step"]
        dm = np.asarray(res["decision_ms"], float)
        out.append({
            "seed": job.seed, "instance": job.instance, "case": f"s{job.seed}/i{job.instance:03d}",
            "peer": label, "against": against, "episodes": n, "rollout": rollout,
            "exploration_scale": scale if scale is not None else math.nan,
            "pouct_total_loss": float(res["total"].mean()),
            "pouct_ci_half": 1.96 * float(res["total"].std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf,
            "ours_mc_total_loss": float(ours[against].mean()),
            "diff_vs_ours": float(d.mean()),
            "diff_vs_ours_ci_half": 1.96 * float(d.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf,
            "diff_vs_onestep": float(d1.mean()),
            "diff_vs_onestep_ci_half": 1.96 * float(d1.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf,
            "sims_per_decision": float(res["sims"]), "decisions_per_episode": float(res["decisions"]),
            "decision_ms_median": float(np.median(dm)) if dm.size else math.nan,
            "decision_ms_p95": float(np.quantile(dm, 0.95)) if dm.size else math.nan,
            "illegal_actions": int(res["illegal"]),
        })
    return out


def _model(job: Job) -> list:
    from planner.calibration.calibrate import PRIOR_STRENGTH, CalibrationError, calibrate, calibrated_data
    from planner.evaluation.evaluate import expected_loss_under
    from planner.session.simulate import simulate_log
    from planner.io.store import open_log

    kind, param, peer_episodes, scale = job.param
    who = caller()
    _, data = wide_instance(job.seed, job.instance)
    data = {k: v for k, v in data.items() if k != "checks"}
    truth = Domain.from_dict(data)
    base = {"seed": job.seed, "instance": job.instance, "case": f"s{job.seed}/i{job.instance:03d}", "model": kind,
            "param": float(param)}
    t0 = time.perf_counter()
    specs = list(MODEL_POLICIES)
    if kind == "scaled":
        model = Domain.from_dict(scaled(data, float(param)))
        extra = {}
    else:
        declared = Domain.from_dict(miscalibrated(data))
        seed = stable_seed("edition2-log", job.seed, job.instance, int(param))
        with tempfile.TemporaryDirectory(prefix="edition2-") as tmp:
            with open_log(Path(tmp) / "log.db") as log:
                simulate_log(truth, log, sessions=int(param), policy=HISTORICAL, resolve=1.0, seed=seed,
                             model=declared, caller=who)
                sessions = log.sessions()
        try:
            res = calibrate(declared, sessions, method="em", seed=seed, prior_strength=PRIOR_STRENGTH)
        except CalibrationError as e:
            return [dict(base, policy="", loss=math.nan, error=f"calibration: {e}")]
        model = Domain.from_dict(calibrated_data(res, date="2026-12-01"))
        specs += [f"conservative:{p}" for p in CONSERVATIVE]
        extra = {"sessions_used": int(res.used)}
    prep_s = time.perf_counter() - t0
    rows = []
    for spec in specs:
        t0 = time.perf_counter()
        try:
            j, err = expected_loss_under(model, truth, spec, who), ""
        except PlannerError as e:
            j, err = math.nan, str(e).splitlines()[0][:200]
        rows.append(dict(base, policy=spec, loss=j, error=err, prep_s=prep_s, eval_s=time.perf_counter() - t0,
                         **extra))
    if peer_episodes:
        rows.append(dict(base, **_peer_error(job, model, truth, who, peer_episodes, scale), prep_s=prep_s, **extra))
    return rows


def _peer_error(job, model, truth, who, episodes, scale) -> dict:
    """POUCT at :data:`PEER_MODEL_MS` planning on `model` and on `truth`, scored under the truth (MC, common draws)."""
    tc = compile_domain(truth)
    mc = compile_domain(model)
    states, uniforms = draw_episodes(tc, episodes, stable_seed("edition2-model-peer", job.seed, job.instance))
    seed = stable_seed("edition2-model-pouct", job.key)
    on_model = peer_mod.run_pouct(mc, admit(mc, who), states, uniforms, planning_ms=PEER_MODEL_MS, seed=seed,
                                  rollout="one-step", exploration_scale=scale, truth=tc, visited_only=True)
    on_truth = peer_mod.run_pouct(tc, admit(tc, who), states, uniforms, planning_ms=PEER_MODEL_MS, seed=seed,
                                  rollout="one-step", exploration_scale=scale, visited_only=True)
    d = on_model["total"] - on_truth["total"]
    n = len(d)
    return {"policy": f"pouct:{PEER_MODEL_MS:g}ms", "loss": float(on_model["total"].mean()),
            "on_truth": float(on_truth["total"].mean()), "error_cost": float(d.mean()),
            "error_cost_ci_half": 1.96 * float(d.std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf,
            "episodes": n, "error": ""}


def _frontier(job: Job) -> list:
    from planner.evaluation.evaluate import evaluate_policy

    calls_levels, weight_levels, peer_episodes, scale = job.param
    who = caller()
    k, data = wide_instance(job.seed, job.instance)
    rows = []
    for calls in calls_levels:
        for wm in weight_levels:
            d = {key: val for key, val in data.items() if key != "checks"}
            limits = {} if calls is None else {"calls": int(calls)}
            d["budget"] = {"limits": limits,
                           "weights": {dim: w * float(wm) for dim, w in data["budget"]["weights"].items()}}
            dom = Domain.from_dict(d)
            v = vstar(dom, who)
            for spec in FRONTIER_POLICIES:
                try:
                    ev = evaluate_policy(dom, spec, who)
                    J, acq, err = ev.expected_total_loss, float(sum(n * p for n, p in ev.acquisitions)), ""
                except PlannerError as e:
                    J, acq, err = math.nan, math.nan, str(e).splitlines()[0][:200]
                rows.append(_frontier_row(job, calls, wm, spec, J, acq, v, err))
            if peer_episodes:
                c = compile_domain(dom)
                states, uniforms = draw_episodes(c, peer_episodes, stable_seed("edition2-frontier", job.key, calls,
                                                                               wm))
                res = peer_mod.run_pouct(c, admit(c, who), states, uniforms, planning_ms=PEER_MODEL_MS,
                                         seed=stable_seed("edition2-frontier-pouct", job.key, calls, wm),
                                         rollout="one-step", exploration_scale=scale, visited_only=True)
                n = len(states)
                row = _frontier_row(job, calls, wm, f"pouct:{PEER_MODEL_MS:g}ms", float(res["total"].mean()),
                                    math.nan, v, "")
                row["mc_ci_half"] = 1.96 * float(res["total"].std(ddof=1)) / math.sqrt(n) if n > 1 else math.inf
                rows.append(row)
    return rows


def _frontier_row(job, calls, wm, spec, J, acq, v, err) -> dict:
    return {"seed": job.seed, "instance": job.instance, "case": f"s{job.seed}/i{job.instance:03d}",
            "calls_limit": "none" if calls is None else int(calls), "weight_multiplier": float(wm),
            "policy": spec, "total_loss": J, "acquisitions": acq, "v_lo": v["v_lo"], "v_up": v["v_up"],
            "certified": v["certified"], "error": err}


_RUN = {"case": _case, "peer": _peer, "model": _model, "frontier": _frontier}

_WARM = False


def _warm_up() -> None:
    """Run every policy once on a small domain, so no measured decision pays for JIT compilation."""
    global _WARM
    if _WARM:
        return
    from planner.evaluation.evaluate import evaluate_policy

    who = caller()
    data = wide_instance(0, 3)[1]
    for spec in POLICIES:
        evaluate_policy(Domain.from_dict(data), spec, who)
    _WARM = True


def run_job(job: Job) -> dict:
    """Run one job; ``{"key", "kind", "rows", "seconds"}`` (an error becomes a row with ``error``).

    >>> out = run_job(Job("case", 0, 3))
    >>> out["kind"], [r["policy"] for r in out["rows"]][:3]
    ('case', ['none', 'top-k:1', 'top-k:3'])
    """
    _warm_up()
    t0 = time.perf_counter()
    error = ""
    try:
        rows = _RUN[job.kind](job)
    except Exception as e:  # noqa: BLE001 - a peer or model job's fault is listed in jobs.csv, not fatal to the run
        if job.kind == "case":
            raise
        rows, error = [], f"{type(e).__name__}: {str(e).splitlines()[0][:180]}"
    return {"key": job.key, "kind": job.kind, "rows": rows, "seconds": time.perf_counter() - t0, "error": error}


def tune_peer(episodes: int = 40, sims: int = PEER_TUNE_SIMS) -> dict:
    """Tune POUCT's exploration multiplier on :data:`PEER_TUNE_CASES` (not study instances).

    At a fixed number of simulations per decision (reproducible for the seed),
    one-step rollouts; returns ``{"best", "table", "cases", "sims", "episodes"}``.
    """
    who = caller()
    cases = []
    for s, i in PEER_TUNE_CASES:
        c = compile_domain(Domain.from_dict(wide_instance(s, i)[1]))
        cases.append((c, admit(c, who)))
    t = peer_mod.tune_exploration(cases, PEER_TUNE_GRID, num_sims=sims, episodes=episodes,
                                  seed=stable_seed("edition2-tune"), rollout="one-step", visited_only=True)
    return {"best": float(t.best_scale), "table": dict(zip(t.grid, t.means)), "cases": len(cases), "sims": sims,
            "episodes": episodes}


class JobCache:
    """A job runner that first looks for a job's result in a folder, and saves it there when done (``--resume``).

    `run` runs one task; `job_of` picks the job (anything with a ``key``) out of a task (default: the task is
    the job). Used by both editions' runners.

    >>> import tempfile
    >>> class J:
    ...     key = "s0/i001"
    >>> cache = JobCache(tempfile.mkdtemp(), run=lambda job: {"key": job.key})
    >>> cache.path(J()).name, cache.split([J()])[0]
    ('s0_i001.json', [])
    """

    def __init__(self, folder, run=None, job_of=None):
        self.folder = Path(folder)
        self.run = run_job if run is None else run
        self.job_of = job_of

    def path(self, job) -> Path:
        return self.folder / (job.key.replace("/", "_").replace(" ", "") + ".json")

    def _path_of(self, task) -> Path:
        return self.path(task if self.job_of is None else self.job_of(task))

    def split(self, tasks) -> tuple:
        """``(results saved already, tasks still to run)``, in the order of `tasks`."""
        import json

        done = [json.loads(self._path_of(t).read_text(encoding="utf-8")) for t in tasks if self._path_of(t).exists()]
        return done, [t for t in tasks if not self._path_of(t).exists()]

    def __call__(self, task) -> dict:
        import json

        out = self.run(task)
        write_text(self._path_of(task), json.dumps(out))
        return out


def run_jobs(jobs, *, workers: int = 1, scheduler=None, progress: bool = True, cache=None) -> dict:
    """Run `jobs` here, in `workers` processes or on a Dask scheduler; ``{kind: rows}`` plus ``seconds``.

    Rows come back sorted by job key, whatever order the jobs finished in.
    With `cache` (a folder), each finished job's result is saved there and a
    job already saved is not run again: an interrupted run resumes.
    """
    jobs = list(jobs)
    done, todo = [], jobs
    fn = run_job
    if cache is not None:
        cached = JobCache(cache)
        cached.folder.mkdir(parents=True, exist_ok=True)
        done, todo = cached.split(jobs)
        fn = cached
    bar = Progress(len(todo), progress)
    try:
        results = done + map_jobs(fn, todo, workers=workers, scheduler=scheduler, on_done=bar.update,
                                  key=lambda j: f"edition2-{j.key}")
    finally:
        bar.close()
    results.sort(key=lambda r: r["key"])
    out = {kind: [row for r in results if r["kind"] == kind for row in r["rows"]] for kind in _RUN}
    out["seconds"] = {r["key"]: r["seconds"] for r in results}
    out["errors"] = {r["key"]: r["error"] for r in results if r.get("error")}
    return out


# --------------------------------------------------------------------------
# the run: jobs, tables, report and plots, swapped in as one set

DEFAULT_OUT = "studies/results/depth"
DEFAULT_OUT_QUICK = "studies/results/depth-quick"
#: The files a run writes besides its plots (``*.png``).
TABLES = ("cases.csv", "peer.csv", "model_error.csv", "frontier.csv", "jobs.csv", "meta.json", "report.md")


def is_output(name: str) -> bool:
    """Whether a file name is one a run writes (the swap replaces a folder only of these).

    >>> is_output("cases.csv"), is_output("regime_map.png"), is_output("notes.txt")
    (True, True, False)
    """
    return name in TABLES or name.endswith(".png")


def run_study(*, quick: bool = False, out=None, workers: int | None = None, scheduler=None, peer: bool = True,
              plots: bool = True, progress: bool = True, command: str | None = None, resume: bool = False) -> dict:
    """Run the second edition and write its outputs; ``{"out", "rows", "seconds", "files", "notes"}``.

    Parameters mirror ``planner bench depth``. The outputs replace the
    folder's previous set whole (:func:`planner.io.atomic.replacing_folder`), so
    an interrupt or a failed write leaves the previous complete set. With
    `resume`, every finished job is kept in ``<out>.jobs/`` beside the output
    folder and a rerun with `resume` takes the jobs found there instead of
    running them again (the folder is removed when the run completes; it is
    only valid for the same code and options).

    Raises
    ------
    StudyInterrupted
        On ``KeyboardInterrupt``.
    planner.io.atomic.OutputError
        The folder cannot be written or holds files a run does not write.
    """
    import datetime as _dt
    import json
    import platform

    out = Path(out if out is not None else (DEFAULT_OUT_QUICK if quick else DEFAULT_OUT))
    workers = (1 if quick else default_workers()) if workers is None else int(workers)
    if workers < 1:
        raise PlannerError(f"workers must be >= 1, got {workers}")
    config = Config.quick() if quick else Config.full()
    notes = []
    peer_ok = peer and peer_mod.available()
    if peer and not peer_ok:
        peer_note = "POUCT peer skipped: pomdp_py is not installed (pip install './studies[compare]')."
        notes.append(peer_note)
    elif not peer:
        peer_note = "POUCT peer not run (switched off)."
    else:
        peer_note = ""
    swap = None
    try:
        with replacing_folder(out, keep=is_output) as swap:
            t0 = time.perf_counter()
            tuning = None
            scale = None
            cache = out.parent / f".{out.name}.jobs" if resume else None
            if peer_ok and config.tune:
                tuned = cache / "tuning.json" if cache is not None else None
                if tuned is not None and tuned.exists():
                    tuning = json.loads(tuned.read_text(encoding="utf-8"))
                    tuning["table"] = {float(k): v for k, v in tuning["table"].items()}
                else:
                    tuning = tune_peer()
                    if tuned is not None:
                        tuned.parent.mkdir(parents=True, exist_ok=True)
                        write_text(tuned, json.dumps(tuning))
                scale = tuning["best"]
            jobs = build_jobs(config, peer=peer_ok, peer_exploration=scale)
            res = run_jobs(jobs, workers=workers, scheduler=scheduler, progress=progress, cache=cache)
            wall = time.perf_counter() - t0
            folder = swap.path
            files = []
            for kind, name in (("case", "cases.csv"), ("peer", "peer.csv"), ("model", "model_error.csv"),
                               ("frontier", "frontier.csv")):
                if res[kind]:
                    write_csv(res[kind], folder / name)
                    files.append(name)
            write_csv([{"job": k, "seconds": v, "error": res["errors"].get(k, "")}
                       for k, v in sorted(res["seconds"].items())], folder / "jobs.csv")
            for k, e in sorted(res["errors"].items()):
                notes.append(f"job {k} failed: {e}")
            files.append("jobs.csv")
            if plots:
                plot_files, plot_note = make_plots(res["case"], res["peer"], res["model"], res["frontier"], folder)
            else:
                plot_files, plot_note = [], "Plots not drawn (switched off)."
            if plot_note:
                notes.append(plot_note)
            files += plot_files
            if command is None:
                command = f"run_study(quick={quick}, out={str(out)!r}, workers={workers}, peer={peer}, plots={plots})"
            meta = {"wall time": f"{wall:.0f} s", "jobs": len(jobs),
                    "workers": workers if scheduler is None else f"dask {scheduler}", "cores": os.cpu_count(),
                    "python": platform.python_version(), "date": _dt.date.today().isoformat()}
            # what the report needs besides the CSVs, so that it can be rendered again from the folder alone
            from studies.depth.report import recorded_specs

            info = {"command": command, "meta": meta, "peer_note": peer_note, "tuning": tuning,
                    "study_specs": recorded_specs(),
                    "plots": plot_files, "plot_note": plot_note, "errors": res["errors"]}
            write_text(folder / "meta.json", json.dumps(info, indent=1) + "\n")
            files.append("meta.json")
            text = render(res["case"], res["peer"], res["model"], res["frontier"], command=command, meta=meta,
                          peer_note=peer_note, tuning=tuning, plots=plot_files, plot_note=plot_note,
                          errors=res["errors"])
            write_text(folder / "report.md", text)
            files.append("report.md")
        if cache is not None:
            import shutil

            shutil.rmtree(cache, ignore_errors=True)
    except KeyboardInterrupt:
        raise StudyInterrupted(out, kept_previous=swap is None or not swap.done) from None
    return {"out": out, "rows": res, "seconds": wall, "files": files, "notes": notes}
