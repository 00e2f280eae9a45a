"""The third edition's runner: every study spec on the same cases, exact, under node and work caps only.

A case is one generated instance (:func:`studies.wide.wide_instance`, seed
and instance: the second edition's generator), one shipped domain
(:mod:`planner.domains`) or one case of the outside suite
(:mod:`studies.depth3.outside`: pystreed's cost-sensitive UCI datasets). On each case the job computes V*
(:func:`studies.depth.run.vstar`) and measures every policy of
:data:`~studies.depth3.design.POLICIES` exactly
(:func:`studies.measure.measure_exact`) with the caps of
:mod:`studies.depth3.design` (counts of nodes; there is no clock anywhere
in a result). A row past a cap keeps bounds on its loss
(:func:`studies.measure.loss_bounds`) and is flagged ``capped``; a row
whose policy cannot decide at all (its own search cap) is flagged
``failed``. No case is dropped: every policy has a row on every case.

With the peer on (pomdp_py installed), every case also gets the POUCT
peer's two Monte Carlo rows (:mod:`studies.depth3.pouct`: equal
simulations and equal planning time, both as counts derived from
``bounded``'s counted nodes).

The rows carry no timing column: planning cost is priced later from the
counted ``search_nodes_per_episode`` (:data:`~studies.depth3.design.NODE_MS`).

For example (the preview, committed in ``studies/results/depth3-preview``)::

    nice -n 10 python3 -m studies.depth3.run --preview
    nice -n 10 python3 -m studies.depth3.run --out studies/results/depth3 --workers 2   # the full run
    planner bench depth --workers 2                                                      # the same full run
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import attrs

from planner.errors import EvaluationNodeCap, PlannerError
from studies.depth3.design import (EVAL_CAP, EVAL_WORK, PEER_EPISODES, POLICIES, SELECT_SEEDS, SEEDS, TEST_SEEDS,
                                   budget_level, structure)
# the second edition's interrupt: one class and one message for both editions of ``planner bench depth``
from studies.depth.run import JobCache, StudyInterrupted

__all__ = ["Config", "CaseJob", "build_jobs", "run_case", "run_study", "run_bench", "main", "DEFAULT_OUT",
           "PREVIEW_OUT", "DEFAULT_OUT_QUICK", "StudyInterrupted"]

DEFAULT_OUT = "studies/results/depth3"
PREVIEW_OUT = "studies/results/depth3-preview"
#: Where ``planner bench depth --quick`` writes (the preview's configuration; not the committed folder).
DEFAULT_OUT_QUICK = "studies/results/depth3-quick"

#: The measurement columns a row keeps (no timing column: none is a result here).
KEEP = ("total_loss", "decision_loss", "penalty", "acquisitions", "decisions_per_episode", "nodes",
        "search_nodes_per_episode", "search_nodes_p95", "p_act_unsupported", "breach_prob")


@attrs.frozen(kw_only=True)
class Config:
    """Which cases: instances per generator seed (at most `max_obs` observations, when given), the shipped domains.

    :meth:`full` is the run the report is meant for: 24 instances per seed of
    every size, the shipped domains, the outside suite and the peer, about 70
    CPU-minutes, some 35-40 minutes on two idle cores (measured on a sample of
    its cases: docs/depth-study.md, "The full run's cost"). :meth:`preview`
    is a few CPU-minutes (the committed ``studies/results/depth3-preview``);
    ``planner bench depth --quick`` runs the preview's cases.
    """

    instances: int
    max_obs: int | None = None
    shipped: bool = True
    outside: bool = True
    peer: bool = True
    peer_episodes: int = PEER_EPISODES
    label: str = "full"

    @classmethod
    def full(cls) -> "Config":
        # kept at the design's size: the measured cost fits the hour on 2 workers (docs/depth-study.md)
        return cls(instances=24)

    @classmethod
    def preview(cls) -> "Config":
        return cls(instances=8, max_obs=14, label="preview")


@attrs.frozen
class CaseJob:
    """One case: ``source`` "wide" (``seed``, ``instance``), "shipped" or "outside" (``name``)."""

    source: str
    seed: int = -1
    instance: int = -1
    name: str = ""

    @property
    def key(self) -> str:
        if self.source == "wide":
            return f"s{self.seed}/i{self.instance:03d}"
        return f"{'domain' if self.source == 'shipped' else 'outside'}/{self.name}"

    @property
    def split(self) -> str:
        if self.source in ("shipped", "outside"):
            return self.source
        return "select" if self.seed in SELECT_SEEDS else "test" if self.seed in TEST_SEEDS else "other"

    def caller(self, data: dict):
        """Who decides: the study's caller on a generated case; on a shipped domain the domain's own purpose, no
        entitlements (as ``planner run`` has it) and, where records carry ``as_of``, the decision time of the
        domain's first check that gives one (fixed, so no result reads the clock)."""
        from planner.model.caller import Caller
        from studies.depth.run import caller

        if self.source != "shipped":
            return caller()
        times = [ch["decision_time"] for ch in data.get("checks") or () if ch.get("decision_time")]
        when = None
        if times:
            import datetime as _dt

            when = _dt.datetime.fromisoformat(str(times[0]).replace("Z", "+00:00"))
        return Caller(purpose=data.get("purpose"), decision_time=when)

    def data(self) -> dict:
        if self.source == "wide":
            from studies.wide import wide_instance

            return wide_instance(self.seed, self.instance)[1]
        if self.source == "outside":
            from studies.depth3.outside import outside_domain

            return outside_domain(self.name)
        import yaml

        from planner.model.domain import DOMAINS

        return yaml.safe_load((DOMAINS / f"{self.name}.yaml").read_text(encoding="utf-8"))


def build_jobs(config: Config) -> list:
    """Every case of a run, in key order.

    >>> jobs = build_jobs(Config(instances=1, shipped=False, outside=False))
    >>> [j.key for j in jobs], jobs[-1].split
    (['s0/i000', 's1/i000', 's2/i000', 's3/i000', 's4/i000'], 'test')
    """
    from studies.wide import wide_instance

    jobs = []
    for s in SEEDS:
        found, i = 0, 0
        while found < config.instances and i < 10_000:
            if config.max_obs is None or len(wide_instance(s, i)[1]["observations"]) <= config.max_obs:
                jobs.append(CaseJob("wide", s, i))
                found += 1
            i += 1
    if config.shipped:
        from planner.model.domain import shipped_domains

        jobs += [CaseJob("shipped", name=n) for n in shipped_domains()]
    if config.outside:
        from studies.depth3.outside import outside_names

        jobs += [CaseJob("outside", name=n) for n in outside_names()]
    return jobs


def run_case(job: CaseJob, policies=POLICIES, *, peer_scale: float | None = None,
             peer_episodes: int = PEER_EPISODES) -> list:
    """One row per policy on one case: loss (or bounds), counted search nodes, flags.

    With `peer_scale` (POUCT's tuned UCB multiplier) the POUCT peer's two
    rows follow (:func:`studies.depth3.pouct.peer_rows`; they need the
    ``bounded`` row, so ``bounded`` must be among `policies`).

    >>> rows = run_case(CaseJob("shipped", name="payment_release"), policies=("none", "one-step"))
    >>> [(r["policy"], r["capped"], r["failed"]) for r in rows]
    [('none', False, False), ('one-step', False, False)]
    """
    from planner.compile import compile_domain
    from planner.evaluation.audit import Audit
    from planner.gates.admission import admit
    from planner.model.domain import Domain
    from planner.node import root_node
    from planner.policies import parse_policy
    from studies.depth.run import vstar
    from studies.measure import EvaluationCapped, loss_bounds, measure_exact
    from studies.optimal import OptimalValues

    data = job.data()
    who = job.caller(data)
    if job.source == "shipped":
        data = {k: v for k, v in data.items() if k != "checks"}
    domain = Domain.from_dict(data)
    c = compile_domain(domain)
    adm = admit(c, who)
    audit = Audit(data, who)
    none_action = root_node(c, adm).action
    v = vstar(domain, who)
    try:
        optimal = OptimalValues(c, adm)
        optimal = optimal if optimal.feasible else None
    except PlannerError:
        optimal = None
    weight = ((data.get("budget") or {}).get("weights") or {}).get("latency_ms")
    base = {"case": job.key, "source": job.source, "split": job.split, "seed": job.seed, "instance": job.instance,
            "budget_level": budget_level(data), "structure": structure(data), "n_obs": len(data["observations"]),
            "admitted": int(adm.admitted.sum()), "latency_weight": 0.0 if weight is None else float(weight),
            "v_lo": v["v_lo"], "v_up": v["v_up"], "certified": v["certified"]}
    rows = []
    for spec in policies:
        row = dict(base, policy=spec, capped=False, failed=False, error="")
        row.update({k: math.nan for k in KEEP})
        try:
            m = measure_exact(c, parse_policy(spec), audit=audit, caller=who, optimal=optimal,
                              none_action=none_action, repeats=1, max_nodes=EVAL_CAP, work_cap=EVAL_WORK)
            row.update({k: m[k] for k in KEEP if k in m})
            row.update(loss_lo=row["total_loss"], loss_up=row["total_loss"])
        except (EvaluationCapped, EvaluationNodeCap) as e:  # too large to enumerate: bounds, flagged
            lo, up = loss_bounds(c, parse_policy(spec), who, max_nodes=EVAL_CAP, work_cap=EVAL_WORK)
            row.update(loss_lo=lo, loss_up=up, capped=True, error=str(e).splitlines()[0][:200])
        except PlannerError as e:  # the policy's own search cap: it cannot decide here
            row.update(loss_lo=math.nan, loss_up=math.nan, failed=True, error=str(e).splitlines()[0][:200])
        rows.append(row)
    if peer_scale is not None:
        from studies.depth3.pouct import peer_rows

        (brow,) = [r for r in rows if r["policy"] == "bounded"]
        rows += peer_rows(c, adm, job.key, brow, base, peer_scale, peer_episodes)
    return rows


def _job(task) -> dict:
    job, scale, episodes = task
    return {"key": job.key, "rows": run_case(job, peer_scale=scale, peer_episodes=episodes)}


def _task_job(task) -> "CaseJob":
    return task[0]


def run_study(config: Config, out, *, workers: int = 1, scheduler=None, progress: bool = True, command: str = "",
              resume: bool = False, plots: bool = True) -> dict:
    """Run every case of `config`, write ``cases.csv`` and ``meta.json`` to `out`, then render the report.

    The folder's previous outputs are replaced whole
    (:func:`planner.io.atomic.replacing_folder`): an interrupt leaves the
    previous complete set (:class:`StudyInterrupted`). With `resume`, each
    finished job is kept in ``.<out>.jobs/`` beside the folder and taken from
    there by a rerun (same code and options only; removed when the run
    completes). With `config.peer` and pomdp_py missing, the peer's rows are
    skipped and the returned ``notes`` (and the report) say so.

    Returns ``{"out", "rows", "cases", "files", "notes"}``.
    """
    import shutil

    from planner.io.atomic import replacing_folder, write_text
    from studies import peer as peer_mod
    from studies.depth3.design import NODE_MS, PEER_MAX_SIMS, PEER_MS_PER_SIM, PRICES
    from studies.depth3.report import OUTPUTS, render_folder
    from studies.jobs import Progress, map_jobs
    from studies.tables import write_csv

    out = Path(out)
    notes = []
    if not config.peer:
        peer_note = "POUCT peer not run (switched off)."
    elif not peer_mod.available():
        peer_note = "POUCT peer skipped: pomdp_py is not installed (pip install './studies[compare]')."
    else:
        peer_note = ""
    if peer_note:
        notes.append(peer_note)
    swap = None
    try:
        with replacing_folder(out, keep=lambda name: name in OUTPUTS or name.endswith(".png")) as swap:
            cache = out.parent / f".{out.name}.jobs" if resume else None
            tuning = None
            if not peer_note:
                saved = cache / "tuning.json" if cache is not None else None
                if saved is not None and saved.exists():
                    tuning = json.loads(saved.read_text(encoding="utf-8"))
                else:
                    from studies.depth3.pouct import tune

                    tuning = tune()
                    if saved is not None:
                        saved.parent.mkdir(parents=True, exist_ok=True)
                        write_text(saved, json.dumps(tuning))
            scale = tuning["best"] if tuning else None
            jobs = build_jobs(config)
            tasks = [(j, scale, config.peer_episodes) for j in jobs]
            done, fn = [], _job
            if cache is not None:
                cached = JobCache(cache, run=_job, job_of=_task_job)
                cached.folder.mkdir(parents=True, exist_ok=True)
                done, tasks = cached.split(tasks)
                fn = cached
            bar = Progress(len(tasks), progress)
            try:
                results = done + map_jobs(fn, tasks, workers=workers, scheduler=scheduler, on_done=bar.update,
                                          key=lambda t: f"depth3-{t[0].key}")
            finally:
                bar.close()
            results.sort(key=lambda r: r["key"])
            rows = [row for r in results for row in r["rows"]]
            write_csv(rows, swap.path / "cases.csv")
            meta = {"label": config.label, "config": attrs.asdict(config), "command": command, "cases": len(jobs),
                    "policies": list(POLICIES), "node_ms": NODE_MS, "prices": list(PRICES),
                    "caps": {"eval_cap": EVAL_CAP, "eval_work": EVAL_WORK},
                    "peer": {"note": peer_note, "tuning": tuning, "episodes": config.peer_episodes,
                             "max_sims": PEER_MAX_SIMS, "ms_per_sim": PEER_MS_PER_SIM}}
            write_text(swap.path / "meta.json", json.dumps(meta, indent=1) + "\n")
            files = ["cases.csv", "meta.json"] + render_folder(swap.path, plots=plots)
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
    except KeyboardInterrupt:
        raise StudyInterrupted(out, kept_previous=swap is None or not swap.done) from None
    return {"out": out, "rows": len(rows), "cases": len(jobs), "files": files, "notes": notes}


def run_bench(*, quick: bool = False, out=None, workers: int | None = None, scheduler=None, peer: bool = True,
              plots: bool = True, progress: bool = True, command: str | None = None, resume: bool = False) -> dict:
    """``planner bench depth``'s entry: the full run, or with `quick` the preview's configuration.

    Returns :func:`run_study`'s dict; the output folder defaults to
    :data:`DEFAULT_OUT` (:data:`DEFAULT_OUT_QUICK` with `quick`: the committed
    preview is written by ``python3 -m studies.depth3.run --preview``).
    """
    from studies.jobs import default_workers

    config = Config.preview() if quick else Config.full()
    if quick:
        config = attrs.evolve(config, label="quick")
    config = attrs.evolve(config, peer=bool(peer))
    workers = (1 if quick else default_workers()) if workers is None else int(workers)
    if workers < 1:
        raise PlannerError(f"workers must be >= 1, got {workers}")
    out = out if out is not None else (DEFAULT_OUT_QUICK if quick else DEFAULT_OUT)
    return run_study(config, out, workers=workers, scheduler=scheduler, progress=progress, command=command or "",
                     resume=resume, plots=plots)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m studies.depth3.run",
                                description="run the depth study's third edition (node caps only, no clock)")
    p.add_argument("--preview", action="store_true", help="the small preview (a few minutes of one core)")
    p.add_argument("--out", default=None, help=f"output folder (default {DEFAULT_OUT}, or {PREVIEW_OUT})")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--instances", type=int, default=None, help="instances per generator seed")
    p.add_argument("--no-peer", action="store_true", help="skip the POUCT peer's rows")
    p.add_argument("--no-outside", action="store_true", help="skip the outside suite")
    p.add_argument("--resume", action="store_true", help="keep finished jobs in .<out>.jobs/ and reuse them")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    config = Config.preview() if args.preview else Config.full()
    if args.instances is not None:
        if args.instances < 1:
            print(f"--instances must be >= 1, got {args.instances}", file=sys.stderr)
            return 2
        config = attrs.evolve(config, instances=args.instances)
    config = attrs.evolve(config, peer=not args.no_peer, outside=not args.no_outside)
    if args.workers < 1:
        print(f"--workers must be >= 1, got {args.workers}", file=sys.stderr)
        return 2
    out = args.out or (PREVIEW_OUT if args.preview else DEFAULT_OUT)
    command = "python3 -m studies.depth3.run " + " ".join(argv if argv is not None else sys.argv[1:])
    try:
        res = run_study(config, out, workers=args.workers, progress=not args.no_progress, command=command.strip(),
                        resume=args.resume)
    except StudyInterrupted as e:
        print(f"depth3: interrupted: {e}", file=sys.stderr)
        return 130
    except PlannerError as e:
        print(f"depth3: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    for note in res["notes"]:
        print(f"note: {note}", file=sys.stderr)
    print(f"{res['out']}: {res['cases']} cases, {res['rows']} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
