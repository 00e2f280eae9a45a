"""The node-to-time constant, re-measured on today's engine (outside every result).

The third edition never reads the clock: a policy's planning time is its counted
search nodes per episode times :data:`studies.depth3.design.NODE_MS`, a constant
taken from the second edition's committed rows (the median wall ms per counted
node over its rows with more than 100 nodes). The engine has changed since
(branch and bound, the revelation bound, a Python tier for small searches), so
the time one counted node stands for may have moved, and not by the same factor
for every policy. This module measures it the way the constant was first
measured, on a sample of the study's generated cases: each searching policy's
root decision (its largest search; the kernels loaded first, the fastest of a few
repeats), its wall ms over its counted search nodes (every phase's
``nodes_expanded``, :func:`studies.measure.search_nodes`), the median over
decisions with more than 100 nodes, per policy and pooled. (The constant itself
came from whole episodes; the root decision keeps the measurement short and
leaves out the small decisions whose fixed per-call cost would dominate.)

It times, so its figures depend on the machine and its load; they are written
to their own folder and never enter ``cases.csv``. The report reads them only
for a sensitivity table (how the pooled map moves if the constant is off by the
measured factor), never for a result.

Run::

    python3 -m studies.depth3.node_ms --workers 2   # studies/results/depth3-node-ms/
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
import sys
import time
from pathlib import Path

__all__ = ["POLICIES", "sample_jobs", "measure_job", "summarise", "main"]

#: The policies whose decisions search (the rest count the eligible observations they value).
POLICIES = ("lookahead:2", "lookahead:3", "lookahead:auto", "bounded:5000000", "bounded:50000000",
            "bounded:auto:1", "bounded:auto:0.1", "bounded")
#: Rows with at most this many counted nodes per episode are left out of the medians (as for NODE_MS).
MIN_NODES = 100
#: The default output folder.
OUT = Path("studies/results/depth3-node-ms")


def sample_jobs(step: int = 4) -> list:
    """The generated cases measured: every `step`-th instance of each generator seed (0-4).

    >>> [j.key for j in sample_jobs(12)][:3]
    ['s0/i000', 's0/i012', 's1/i000']
    """
    from studies.depth3.design import SEEDS
    from studies.depth3.run import CaseJob

    return [CaseJob("wide", seed=s, instance=i) for s in SEEDS for i in range(0, 24, step)]


@functools.cache  # once per process
def _warm() -> None:
    """Switch every kernel to the compiled tier and load it, once per process: a study worker is past the
    Python tier's allowance after its first cases (``lookahead.jit.PYTHON_WORK``, counted per process), so its
    decisions run compiled, and no timed decision should pay numba's start-up."""
    import planner
    from lookahead.jit import ensure_compiled

    ensure_compiled()
    for spec in ("lookahead:2", "bounded"):
        planner.parse_policy(spec).decide(planner.Session(planner.load_domain("payment_release")).node)


def measure_job(args) -> dict:
    """One (case, policy): the root decision's counted search nodes and its wall ms (fastest of `repeats`)."""
    job, spec, repeats = args
    from planner.compile import compile_domain
    from planner.gates.admission import admit
    from planner.model.domain import Domain
    from planner.node import root_node
    from planner.policies import parse_policy
    from studies.measure import search_nodes

    _warm()
    data = job.data()
    who = job.caller(data)
    c = compile_domain(Domain.from_dict(data))
    node = root_node(c, admit(c, who))
    best, nodes = math.inf, math.nan
    for _ in range(int(repeats)):
        policy = parse_policy(spec)  # a fresh policy: nothing shared between repeats
        t0 = time.perf_counter_ns()
        decision = policy.decide(node)
        best = min(best, (time.perf_counter_ns() - t0) / 1e6)
        nodes = float(search_nodes(node, decision))
    return {"case": job.key, "policy": spec, "capped": False, "nodes": nodes, "ms": best}


def summarise(rows, node_ms: float) -> list:
    """Per policy and pooled: rows used (more than :data:`MIN_NODES` nodes), median ms per node and its ratio
    to `node_ms`, the quartiles.

    >>> rows = [{"policy": "p", "capped": False, "nodes": 1000.0, "ms": 2.0},
    ...         {"policy": "p", "capped": False, "nodes": 50.0, "ms": 9.0}]
    >>> [(r["policy"], r["rows"], r["median_ms_per_node"]) for r in summarise(rows, 1e-3)]
    [('p', 1, 0.002), ('all', 1, 0.002)]
    """
    out = []
    groups = list(dict.fromkeys(r["policy"] for r in rows)) + ["all"]
    for p in groups:
        per = sorted(r["ms"] / r["nodes"] for r in rows if (p == "all" or r["policy"] == p) and not r["capped"]
                     and r["nodes"] > MIN_NODES)
        if not per:
            continue
        q = statistics.quantiles(per, n=4) if len(per) > 1 else [per[0]] * 3
        med = statistics.median(per)
        out.append({"policy": p, "rows": len(per), "median_ms_per_node": med, "q1": q[0], "q3": q[2],
                    "ratio_to_node_ms": med / node_ms})
    return out


def main(argv=None) -> int:
    from planner.cli.common import count_int
    from studies.depth3.design import NODE_MS
    from studies.tables import write_csv

    ap = argparse.ArgumentParser(prog="python3 -m studies.depth3.node_ms", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--workers", type=count_int, default=1)
    ap.add_argument("--step", type=count_int, default=4, help="every STEP-th instance of each seed (default 4)")
    ap.add_argument("--repeats", type=count_int, default=3, help="each decision timed this many times, fastest kept")
    a = ap.parse_args(argv)
    try:  # before the measurement, so that a bad folder costs nothing
        a.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"node_ms: --out {a.out}: cannot create the folder ({e.strerror})", file=sys.stderr)
        return 2
    tasks = [(job, spec, a.repeats) for job in sample_jobs(a.step) for spec in POLICIES]
    t0 = time.perf_counter()
    if a.workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(min(a.workers, len(tasks))) as pool:
            rows = list(pool.map(measure_job, tasks))
    else:
        rows = [measure_job(t) for t in tasks]
    wall = time.perf_counter() - t0
    summary = summarise(rows, NODE_MS)
    write_csv(rows, a.out / "rows.csv")
    write_csv(summary, a.out / "summary.csv")
    meta = {"command": "python3 -m studies.depth3.node_ms " + " ".join(argv if argv is not None else sys.argv[1:]),
            "node_ms": NODE_MS, "min_nodes": MIN_NODES, "cases": len(sample_jobs(a.step)), "wall_s": wall}
    (a.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    for r in summary:
        print(f"{r['policy']:>18}  rows {r['rows']:3d}  median {r['median_ms_per_node'] * 1e3:8.2f} us/node  "
              f"x{r['ratio_to_node_ms']:.2f} of NODE_MS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
