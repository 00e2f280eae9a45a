"""The sweep: cases (family x instance x budget level), each measured for every policy.

A :class:`Case` is independent of every other: its domain, its Monte Carlo
draws and its seeds are derived from its key (``family/instance/budget``),
never from the order cases run in or the worker that runs them. The sweep
runs cases in this process, across processes
(:class:`concurrent.futures.ProcessPoolExecutor`, ``workers``) or on a Dask
distributed cluster (``scheduler``), and returns rows sorted by case key and
policy, so every way of running it gives the same tables (timing columns
aside: :data:`planner.study.measure.TIMING_COLUMNS`; the POUCT peer runs
against the clock, so its table is not reproducible bit for bit either).

One row per (case, policy) has the case's knobs, the measurement method
(``exact``, or ``mc`` for the Monte Carlo family, whose rows also carry the
exact value as a cross-check where it is affordable) and the metrics of
:func:`planner.study.measure.measure_exact` / ``measure_mc``, plus:

- ``route_regret``: total loss minus V* at the root (the optimal policy's);
- ``first_agrees``: the first choice (an observation, or stop) is the optimal one's;
- ``gain_vs_none``: the no-retrieval policy's total loss minus this one's.
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import sys
import time

import attrs

from planner.admission import admit
from planner.audit import Audit
from planner.caller import Caller
from planner.compile import compile_domain
from planner.domain import Domain
from planner.errors import PlannerError
from planner.evaluate import evaluate_policy
from planner.node import root_node
from planner.policies import parse_policy, policy_class
from planner.policies.registry import study_specs
from planner.study import peer
from planner.study.measure import TIMING_COLUMNS, draw_episodes, measure_exact, measure_mc
from planner.study.optimal import OptimalValues
from planner.study.families import (
    BUDGET_LEVELS,
    FAMILIES,
    SUBJECT_ENTITLEMENTS,
    family_domain,
    family_knobs,
    stable_seed,
)

__all__ = [
    "POLICIES",
    "Case",
    "SweepConfig",
    "build_cases",
    "run_case",
    "run_sweep",
    "deterministic_columns",
    "policy_spec",
]

#: The policies compared, in report order: every registered policy's study specs
#: (:mod:`planner.policies.registry`), then ``optimal`` (``lookahead:<number of observations>``).
POLICIES = study_specs() + ("optimal",)

#: Policies that decide by looking at the evidence's value or at the belief (not static).
ADAPTIVE = tuple(p for p in study_specs() if policy_class(p).adaptive) + ("optimal",)

#: The multi-step lookaheads (the report's depth group).
DEPTH = tuple(p for p in study_specs() if policy_class(p).depth_group) + ("optimal",)

#: The caller of every case: the study's subject.
CALLER = Caller(entitlements=SUBJECT_ENTITLEMENTS)

#: POUCT's planning time per decision in the peer's third, generous configuration (ms).
PEER_GENEROUS_MS = 20.0

_BUDGET_ORDER = {b: i for i, b in enumerate(BUDGET_LEVELS)}
_FAMILY_ORDER = {f: i for i, f in enumerate(FAMILIES)}
_POLICY_ORDER = {p: i for i, p in enumerate(POLICIES)}


def policy_spec(label: str, n_observations: int) -> str:
    """The spec string of a policy label (``optimal`` -> ``lookahead:O``).

    >>> policy_spec("optimal", 7), policy_spec("one-step", 7)
    ('lookahead:7', 'one-step')
    """
    return f"lookahead:{n_observations}" if label == "optimal" else label


@attrs.frozen(kw_only=True)
class Case:
    """One case of the sweep (plain data: it travels to worker processes and Dask workers).

    Attributes
    ----------
    family, instance, budget
        The case key.
    episodes : int
        Monte Carlo episodes (0: exact only).
    exact : bool
        Measure exactly.
    peer_episodes : int
        Episodes for the POUCT peer (0: none).
    repeats : int
        Times each decision is timed (the fastest kept).
    """

    family: str
    instance: int
    budget: str
    episodes: int = 0
    exact: bool = True
    peer_episodes: int = 0
    repeats: int = 2

    @property
    def key(self) -> str:
        return f"{self.family}/{self.instance:02d}/{self.budget}"

    def sort_key(self) -> tuple:
        return (_FAMILY_ORDER[self.family], self.instance, _BUDGET_ORDER[self.budget])


@attrs.frozen(kw_only=True)
class SweepConfig:
    """How many instances per family, which budget levels, how many episodes.

    :meth:`full` is the committed study, :meth:`quick` the one-minute version.
    """

    instances: tuple  # ((family, n), ...)
    budgets: tuple = tuple(BUDGET_LEVELS)
    episodes: int = 400
    peer_episodes: int = 100
    peer_instances: int = 2
    peer_budgets: tuple = ("medium",)
    repeats: int = 3

    @classmethod
    def full(cls) -> "SweepConfig":
        return cls(instances=(("exact_lookup", 24), ("prerequisite", 48), ("unreliable_prereq", 36),
                              ("complementary", 48), ("heterogeneous", 48), ("large", 16)),
                   episodes=2000, peer_episodes=100, peer_instances=3)

    @classmethod
    def quick(cls) -> "SweepConfig":
        return cls(instances=(("exact_lookup", 2), ("prerequisite", 3), ("unreliable_prereq", 2),
                              ("complementary", 2), ("heterogeneous", 2), ("large", 1)),
                   budgets=("tight", "loose"), episodes=100, peer_episodes=0, repeats=1)


def build_cases(config: SweepConfig, *, peer: bool = False) -> list:
    """The cases of a sweep, sorted by key.

    >>> [c.key for c in build_cases(SweepConfig.quick())][:3]
    ['exact_lookup/00/tight', 'exact_lookup/00/loose', 'exact_lookup/01/tight']
    """
    cases = []
    for family, n in config.instances:
        mc = FAMILIES[family].monte_carlo
        for i in range(n):
            for b in config.budgets:
                pe = config.peer_episodes if (peer and i < config.peer_instances and b in config.peer_budgets) else 0
                cases.append(Case(family=family, instance=i, budget=b, episodes=config.episodes if mc else 0,
                                  exact=True, peer_episodes=pe, repeats=config.repeats))
    return sorted(cases, key=Case.sort_key)


# --------------------------------------------------------------------------
# one case

_WARM = False


def _warm_up() -> None:
    """Run every policy once on small domains, so no measured decision pays for JIT compilation."""
    global _WARM
    if _WARM:
        return
    for family in ("prerequisite", "complementary", "heterogeneous"):
        c = compile_domain(Domain.from_dict(family_domain(family, 0, "loose")))
        for label in POLICIES:
            evaluate_policy(c, policy_spec(label, len(c.obs_names)), CALLER)
    _WARM = True


def run_case(case: Case) -> dict:
    """Measure every policy on one case; return ``{"key", "rows", "peer_rows", "seconds"}``.

    Examples
    --------
    >>> out = run_case(Case(family="exact_lookup", instance=0, budget="tight"))
    >>> [r["policy"] for r in out["rows"]][:3], out["rows"][0]["method"]
    (['none', 'top-k:1', 'top-k:3'], 'exact')
    """
    t_start = time.perf_counter()
    _warm_up()
    data = family_domain(case.family, case.instance, case.budget)
    knobs = family_knobs(case.family, case.instance, case.budget)
    domain = Domain.from_dict(data)
    c = compile_domain(domain)
    O = len(c.obs_names)
    admission = admit(c, CALLER)
    audit = Audit(data, CALLER)
    optimal = OptimalValues(c, admission)
    none_action = root_node(c, admission).action
    base = {"family": case.family, "instance": case.instance, "budget": case.budget, "key": case.key}
    kn = knobs.to_json()
    kn.pop("budget")
    base.update({f"k_{k}": v for k, v in kn.items()})
    base.update({"n_obs": O, "n_states": int(c.n_states), "admitted": int(admission.admitted.sum()),
                 "calls_limit": float(c.limits[c.dims.index("calls")]), "v_star": optimal.value_root,
                 "optimal_nodes": optimal.nodes})
    draws = draw_episodes(c, case.episodes, stable_seed("episodes", case.key)) if case.episodes else None
    rows = []
    episodes = {}
    for label in POLICIES:
        spec = policy_spec(label, O)
        row = dict(base, policy=label, spec=spec)
        exact = None
        if case.exact:
            try:
                exact = measure_exact(c, parse_policy(spec), audit=audit, caller=CALLER, optimal=optimal,
                                      none_action=none_action, repeats=case.repeats)
            except PlannerError as e:  # a cap: the tree or a search is too large to enumerate
                row["exact_error"] = str(e)
        if draws is not None:
            metrics, ep = measure_mc(c, admission, parse_policy(spec), *draws, audit=audit,
                                     none_action=none_action, repeats=case.repeats)
            episodes[label] = ep
            row.update(metrics)
            row["exact_total_loss"] = exact["total_loss"] if exact is not None else math.nan
            if exact is not None:
                for k in ("p_premature_stop", "premature_loss", "wasteful_continuations", "p_wasteful",
                          "v_estimate", "audit_diff", "first"):
                    row[k] = exact[k]
                # the audit of every path counts too: add the exact audit's findings
                for k in ("breach_paths", "forbidden", "unavailable_acquisitions", "repeat_acquisitions"):
                    row[k] = row[k] + exact[k]
        elif exact is not None:
            row.update({k: v for k, v in exact.items() if not k.startswith("_")})
            row["exact_total_loss"] = exact["total_loss"]
            row["realised_loss"] = exact["total_loss"]
        else:
            row["method"] = "infeasible"
        rows.append(row)
    # columns relative to other policies of the case
    by = {r["policy"]: r for r in rows}
    opt_first = by["optimal"].get("first")
    for r in rows:
        J = r.get("total_loss", math.nan)
        r["route_regret"] = J - optimal.value_root if optimal.feasible else math.nan
        r["first_agrees"] = bool(r.get("first") == opt_first) if opt_first is not None else False
        r["gain_vs_none"] = by["none"].get("total_loss", math.nan) - J
        if episodes and r["policy"] in episodes:
            d = episodes[r["policy"]]["total"] - episodes["one-step"]["total"]
            r["mc_diff_vs_onestep"] = float(d.mean())
            r["mc_diff_half_ci"] = 1.96 * float(d.std(ddof=1)) / math.sqrt(len(d)) if len(d) > 1 else math.inf
    peer_rows = []
    if case.peer_episodes:
        try:
            peer_rows = _peer(case, c, admission, rows, by)
        except Exception as e:  # noqa: BLE001 - an optional third-party peer must not sink the sweep
            peer_rows = [{"family": case.family, "instance": case.instance, "budget": case.budget, "key": case.key,
                          "peer": "pouct", "error": f"{type(e).__name__}: {e}"}]
    return {"key": case.key, "rows": rows, "peer_rows": peer_rows, "seconds": time.perf_counter() - t_start}


def _peer(case, c, admission, rows, by) -> list:
    """POUCT at the planning time of lookahead:2 and lookahead:3, on common random numbers."""
    if not peer.available():
        return []
    audit = Audit(family_domain(case.family, case.instance, case.budget), CALLER)
    states, uniforms = draw_episodes(c, case.peer_episodes, stable_seed("peer-episodes", case.key))
    O = len(c.obs_names)
    ours = {}
    for label in ("one-step", "lookahead:2", "lookahead:3", "optimal"):
        _, ep = measure_mc(c, admission, parse_policy(policy_spec(label, O)), states, uniforms, audit=audit)
        ours[label] = ep["total"]
    out = []
    # at lookahead:2's and lookahead:3's median planning time per decision, and at a generous fixed time
    for label, ours_label in (("lookahead:2", "lookahead:2"), ("lookahead:3", "lookahead:3"),
                              (f"{PEER_GENEROUS_MS:g}ms", "lookahead:3")):
        ms = by[label]["lat_median_ms"] if label in by else PEER_GENEROUS_MS
        res = peer.run_pouct(c, admission, states, uniforms, ms, seed=stable_seed("pouct", case.key, label))
        n = len(states)
        diff = res["total"] - ours["optimal"]
        mine = ours[ours_label] - ours["optimal"]
        out.append({
            "family": case.family, "instance": case.instance, "budget": case.budget, "key": case.key,
            "peer": f"pouct@{label}", "ours": ours_label, "planning_ms": ms, "episodes": n,
            "pouct_total_loss": float(res["total"].mean()),
            "pouct_ci_half": 1.96 * float(res["total"].std(ddof=1)) / math.sqrt(n),
            "pouct_realised_loss": float(res["realised"].mean()),
            "pouct_regret": float(diff.mean()),
            "pouct_regret_ci_half": 1.96 * float(diff.std(ddof=1)) / math.sqrt(n),
            "ours_total_loss": float(ours[ours_label].mean()), "ours_regret": float(mine.mean()),
            "optimal_total_loss": float(ours["optimal"].mean()),
            "onestep_total_loss": float(ours["one-step"].mean()),
            "exact_ours": by[ours_label].get("exact_total_loss", math.nan),
            "sims_per_decision": res["sims"], "decisions_per_episode": res["decisions"],
            "illegal_actions": res["illegal"], "one_sim_decisions": res["one_sim_decisions"],
        })
    return out


# --------------------------------------------------------------------------
# the sweep


class _Progress:
    """A tqdm bar (count, rate, ETA) on stderr while the sweep runs; silent when disabled or off a terminal.

    Off a terminal (a log file, a pipe, CI) a bar is only noise between the
    lines that matter, so it is shown only where someone is watching.
    `file` is for tests (default: ``sys.stderr`` at construction time).
    """

    def __init__(self, total: int, enabled: bool = True, desc: str = "cases", file=None):
        from tqdm import tqdm

        stream = sys.stderr if file is None else file
        try:
            on = enabled and stream.isatty()
        except (AttributeError, ValueError):  # a closed or a fake stream
            on = False
        self.total, self.n = total, 0
        self.bar = tqdm(total=total, desc=desc, unit="case", file=stream, disable=not on, dynamic_ncols=True)

    def update(self):
        self.n += 1
        self.bar.update(1)

    def close(self):
        self.bar.close()


def _collect(results: list) -> tuple[list, list, dict]:
    results = sorted(results, key=lambda r: r["key"])
    rows = [row for r in results for row in r["rows"]]
    peer_rows = [row for r in results for row in r["peer_rows"]]
    rows.sort(key=lambda r: (_FAMILY_ORDER[r["family"]], r["instance"], _BUDGET_ORDER[r["budget"]],
                             _POLICY_ORDER[r["policy"]]))
    peer_rows.sort(key=lambda r: (_FAMILY_ORDER[r["family"]], r["instance"], _BUDGET_ORDER[r["budget"]], r["peer"]))
    seconds = {r["key"]: r["seconds"] for r in results}
    return rows, peer_rows, seconds


def run_sweep(cases, *, workers: int = 1, scheduler=None, progress: bool = True) -> tuple[list, list, dict]:
    """Run `cases`; return ``(rows, peer_rows, seconds per case)``, rows sorted by case key and policy.

    Parameters
    ----------
    cases : list of Case
    workers : int
        Local worker processes (1: run here).
    scheduler : str or distributed.Client, optional
        A Dask distributed scheduler address (or a client): run the cases
        there instead (needs the ``dask`` extra).
    progress : bool
        Show a progress bar on stderr.
    """
    cases = list(cases)
    bar = _Progress(len(cases), progress)
    try:
        results = map_jobs(run_case, cases, workers=workers, scheduler=scheduler, on_done=bar.update,
                           key=lambda c: f"depth-{c.key}")
    finally:
        bar.close()
    return _collect(results)


def map_jobs(fn, items, *, workers: int = 1, scheduler=None, on_done=None, key=None) -> list:
    """``[fn(item) for item in items]`` here, in `workers` processes or on a Dask scheduler, in finishing order.

    Parameters
    ----------
    fn : callable
        A module-level function (it travels to worker processes by name).
    items : list
    workers : int
        Local worker processes (1: run here, in order).
    scheduler : str or distributed.Client, optional
        A Dask distributed scheduler address (or a client; needs the ``dask`` extra).
    on_done : callable, optional
        Called with no argument after each result (a progress bar).
    key : callable, optional
        ``key(item)``: the Dask task key of an item.

    >>> map_jobs(abs, [-1, 2, -3])
    [1, 2, 3]
    """
    tick = on_done or (lambda: None)
    results = []
    if scheduler is not None:
        try:
            from distributed import Client, as_completed
        except ImportError:
            raise PlannerError("running on a Dask scheduler needs dask.distributed: "
                               "pip install 'evidence-planner[dask]'") from None
        own = not hasattr(scheduler, "submit")
        client = Client(scheduler) if own else scheduler
        try:
            futures = client.map(fn, items, pure=False, key=[key(x) for x in items] if key else None)
            for fut in as_completed(futures):
                results.append(fut.result())
                tick()
        finally:
            if own:
                client.close()
    elif workers > 1:
        ctx = None
        if sys.platform.startswith("linux"):
            import multiprocessing

            ctx = multiprocessing.get_context("forkserver")
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            for fut in concurrent.futures.as_completed([pool.submit(fn, x) for x in items]):
                results.append(fut.result())
                tick()
    else:
        for x in items:
            results.append(fn(x))
            tick()
    return results


def deterministic_columns(rows) -> list:
    """The rows without wall-clock columns (and NaN as None, which compares equal), for comparing runs.

    >>> deterministic_columns([{"policy": "none", "lat_median_ms": 0.1, "total_loss": 1.0, "v": float("nan")}])
    [{'policy': 'none', 'total_loss': 1.0, 'v': None}]
    """
    def clean(v):
        return None if isinstance(v, float) and math.isnan(v) else v

    return [{k: clean(v) for k, v in r.items() if k not in TIMING_COLUMNS} for r in rows]


def default_workers() -> int:
    """Local workers by default: the cores this process may use, at most 2."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        n = os.cpu_count() or 1
    return max(1, min(2, n))
