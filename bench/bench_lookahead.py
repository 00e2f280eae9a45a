"""Speed of the memoised lookahead core against the pure-Python reference.

Usage (from the repository root; about 2-5 minutes on a 2-core machine)::

    python3 bench/bench_lookahead.py                 # writes bench/results/lookahead.{md,csv}
    python3 bench/bench_lookahead.py --quick         # a smoke run (small cases, no files unless --out)

For every generated domain (:func:`planner.study.families.benchmark_domain`:
8, 16, 32 observations x 8, 64 joint states, seed 1) and depth 1-4, at the root node:

- ``search_ms``: one warmed :func:`lookahead.search.expectimax` (memo and
  pruning on), best CPU time of repeats (``*_wall_ms``: best wall time);
  ``decide_ms``: one warmed ``Lookahead(depth).decide(node)`` (the search
  plus the candidate table and the plan);
- ``nodes``: nodes expanded, ``nodes_per_s``, ``hit_rate``: memo hits over
  child look-ups, ``pruned``: observations skipped by the EVPI bound;
- ``nodes_nopru``: nodes expanded with pruning off; ``tree``: the nodes an
  unmemoised, unpruned search expands (counted exactly by the memoised run);
  ``tree_ratio`` = tree / nodes_nopru (what memoisation alone saves);
- ``ref_ms``: :func:`lookahead.reference.expectimax` (pure Python, no memo)
  in the same process, best of up to three runs while a run takes under 2 s,
  ``speedup`` = ref_ms / search_ms; skipped when
  its estimated time (tree nodes times the per-node cost measured on the
  smaller cases) exceeds ``--ref-budget`` seconds; ``numba_tree_ms``: the
  numba search with memo and pruning off (the same algorithm as the
  reference), when the tree has at most 3,000,000 nodes.

Then, each in a fresh process with ``NUMBA_CACHE_DIR`` pointing at an empty
temporary directory (a fresh install has no on-disk cache) and again with the
cache that run filled: the import time, the first and second lookahead
decision on the seed domain, and the wall time of the first ``planner run``.
Finally, a search past the node cap, and how long it takes to fail.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# one BLAS thread: idle OpenBLAS threads spin, and process CPU time would count them
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

import lookahead.search as search  # noqa: E402
import planner  # noqa: E402
from lookahead import reference  # noqa: E402
from planner.model.domain import Domain  # noqa: E402
from planner.policies.lookahead import Lookahead  # noqa: E402
from planner.generators import benchmark_domain  # noqa: E402
from lookahead.jit import ensure_compiled  # noqa: E402

ensure_compiled()  # the compiled tier throughout (small searches would otherwise run in Python)

SEED = 1
SIZES_OBS = (8, 16, 32)
SIZES_STATES = (8, 64)
DEPTHS = (1, 2, 3, 4)
TREE_KERNEL_MAX = 3_000_000

COLUMNS = ["n_obs", "n_states", "depth", "eligible", "search_ms", "search_wall_ms", "decide_ms", "decide_wall_ms",
           "nodes", "nodes_per_s", "hit_rate", "pruned", "table_size", "nodes_nopru", "tree", "tree_ratio", "ref_ms",
           "speedup", "numba_tree_ms", "value"]


def compiled(n_obs: int, n_states: int, *, seed: int = 1, **kw):
    """The compiled benchmark domain (:func:`planner.study.families.benchmark_domain`, validated by the loader)."""
    return planner.compile_domain(Domain.from_dict(benchmark_domain(n_obs, n_states, seed=seed, **kw)))


def _args(node, depth):
    c = node.compiled
    return (node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted, depth, c.lik,
            c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, max(len(v) for v in c.prop_values))


def _timed(fn, *, min_total=0.3, min_reps=3, max_reps=200):
    """Best (CPU seconds, wall seconds) of `fn()` over repeats (at least `min_reps`, about `min_total` s).

    CPU time of this process is the figure the tables use, and the best of the
    repeats (as ``timeit`` advises): on a shared machine both wall time and the
    median also count what other jobs did to the cores and caches meanwhile.
    """
    cpu, wall = [], []
    start = time.perf_counter()
    while len(cpu) < min_reps or (time.perf_counter() - start < min_total and len(cpu) < max_reps):
        w, c = time.perf_counter(), time.process_time()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return min(cpu), min(wall)


def bench_case(node, depth, ref_cost_per_node, ref_budget):
    args = _args(node, depth)
    big = dict(max_nodes=10**9)
    res = search.expectimax(*args, **big)  # warm (and the figures)
    t_search, w_search = _timed(lambda: search.expectimax(*args, **big))
    policy = Lookahead(depth=depth, max_nodes=10**9)
    policy.decide(node)
    t_decide, w_decide = _timed(lambda: policy.decide(node))
    nopru = search.expectimax(*args, prune=False, **big)
    assert nopru.value == res.value
    tree = int(nopru.tree_nodes)
    row = {
        "eligible": int(node.eligible.sum()),
        "search_ms": t_search * 1e3,
        "search_wall_ms": w_search * 1e3,
        "decide_ms": t_decide * 1e3,
        "decide_wall_ms": w_decide * 1e3,
        "nodes": res.nodes,
        "nodes_per_s": res.nodes / t_search,
        "hit_rate": res.hits / max(1, res.hits + res.nodes - 1),
        "pruned": res.pruned,
        "table_size": res.entries,
        "nodes_nopru": nopru.nodes,
        "tree": tree,
        "tree_ratio": tree / nopru.nodes,
        "value": res.value,
    }
    if tree <= TREE_KERNEL_MAX:
        search.expectimax(*args, prune=False, memo=False, **big)
        row["numba_tree_ms"] = _timed(lambda: search.expectimax(*args, prune=False, memo=False, **big),
                                      min_total=0.2, min_reps=1)[0] * 1e3
    else:
        row["numba_tree_ms"] = None
    estimate = None if ref_cost_per_node is None else ref_cost_per_node * tree
    if estimate is None or estimate <= ref_budget:
        # best of up to three runs, as for numba, while a run stays cheap
        t_ref = np.inf
        for _ in range(3):
            t = time.process_time()
            ref = reference.expectimax(*args)
            t_ref = min(t_ref, time.process_time() - t)
            if t_ref > 2.0:
                break
        assert ref.nodes == tree, (ref.nodes, tree)
        assert abs(ref.value - res.value) <= 1e-9, (ref.value, res.value)
        row["ref_ms"] = t_ref * 1e3
        row["speedup"] = t_ref / t_search
        row["ref_cost_per_node"] = t_ref / tree
    else:
        row["ref_ms"] = None
        row["speedup"] = None
        row["ref_skipped"] = f"skipped (est. {estimate:.0f} s)"
    return row


# --------------------------------------------------------------------------
# cold start, in fresh processes


COLD_SNIPPET = r"""
import json, time
t0 = time.perf_counter()
import planner
from planner.policies.lookahead import Lookahead
t1 = time.perf_counter()
s = planner.Session(planner.load_domain(planner.DOMAINS / "identity_registry.yaml"))
node = s.node
t2 = time.perf_counter()
Lookahead(depth=2).decide(node)
t3 = time.perf_counter()
Lookahead(depth=2).decide(node)
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_decision_s": t3 - t2, "second_decision_s": t4 - t3}))
"""

RUN_CMD = ["planner", "run", "identity_registry", "--policy", "lookahead:2",  # the shipped domain by name
           "--world", "approval=approved"]


def cold_start():
    out = {}
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("empty cache", "warm cache"):
            r = subprocess.run([sys.executable, "-c", COLD_SNIPPET], env=env, cwd=ROOT, capture_output=True,
                               text=True, check=True)
            out[("api", label)] = json.loads(r.stdout)
        cache_files = sum(1 for _ in Path(cache).rglob("*.nbc"))
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("empty cache", "warm cache"):
            t = time.perf_counter()
            subprocess.run(RUN_CMD, env=env, cwd=ROOT, capture_output=True, text=True, check=True)
            out[("cli", label)] = {"wall_s": time.perf_counter() - t}
    out["cache_files"] = cache_files
    return out


def cap_demo():
    node = planner.Session(compiled(32, 64, seed=SEED)).node
    t = time.perf_counter()
    try:
        Lookahead(depth=6).decide(node)
        message = "(no error)"
    except planner.SearchCapError as e:
        message = str(e)
    return time.perf_counter() - t, message


# --------------------------------------------------------------------------
# output


def _fmt(x, col):
    if x is None:
        return "-"
    if col in ("search_ms", "search_wall_ms", "decide_ms", "decide_wall_ms", "ref_ms", "numba_tree_ms"):
        return f"{x:.3f}" if x < 10 else f"{x:.1f}"
    if col == "nodes_per_s":
        return f"{x / 1e3:.0f}k"
    if col == "hit_rate":
        return f"{100 * x:.1f}%"
    if col in ("tree_ratio", "speedup"):
        return f"{x:.1f}x"
    if col == "value":
        return f"{x:.4f}"
    return str(x)


def machine() -> str:
    load = os.getloadavg()
    import numba

    cpu = platform.processor() or "?"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
            f"numba {numba.__version__}; load average at start {load[0]:.2f}")


def write(rows, cold, cap, command, out: Path, started: str, machine_text: str, elapsed: float):
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".csv"), "w", newline="", encoding="utf-8") as f:
        f.write(f"# command: {command}\n# {started}; {machine_text}\n")
        w = csv.writer(f)
        w.writerow(COLUMNS + ["ref_note"])
        for r in rows:
            w.writerow([("" if r.get(c) is None else (f"{r[c]:.6g}" if isinstance(r[c], float) else r[c]))
                        for c in COLUMNS] + [r.get("ref_skipped", "")])
    lines = [
        "# Lookahead core: speed, memoisation, pruning",
        "",
        f"Produced by `{command}` ({started}, {elapsed / 60:.1f} min).",
        "",
        f"Machine: {machine_text}.",
        "",
        "A shared machine: other jobs ran at the same time. Times are therefore the best CPU time",
        "of this process (`time.process_time`) over repeats, which does not count the time other",
        "jobs held the cores; the `_wall_ms` columns give the best wall time for comparison.",
        "Speed-ups compare CPU times measured in the same process moments apart; between two runs",
        "of this script on this machine they have moved by up to about a third.",
        "",
        "Domains: `planner.study.families.benchmark_domain(n_obs, n_states, seed=1)`: n_obs",
        "observations (2-3 outcomes, a fifth with a failure rate, a quarter of the later ones",
        "behind a precondition), n_states joint states, 4 actions, one gated. Root node of a",
        "fresh session; `eligible` observations at the root.",
        "",
        "Columns: `search_ms` CPU time of one warmed `lookahead.search.expectimax` (memo and",
        "pruning on); `decide_ms` CPU time of one warmed `Lookahead(depth).decide(node)` (search,",
        "candidate table and plan); `nodes` nodes expanded (root and leaves included); `nodes_per_s`",
        "nodes / search_ms; `hit_rate` memo hits / child look-ups; `pruned` observations skipped by",
        "the EVPI bound; `table_size` memo entries at the end (the largest); `nodes_nopru` nodes",
        "expanded with pruning off; `tree` nodes an unmemoised, unpruned search expands (counted",
        "exactly; equals the reference's count wherever it ran); `tree_ratio` = tree / nodes_nopru,",
        "what memoisation alone saves; `ref_ms` the pure-Python reference (`lookahead.reference`,",
        "plain recursion, no memo; best of up to 3 runs), `speedup` = ref_ms / search_ms;",
        "`numba_tree_ms` the numba search with memo and pruning off (the reference's algorithm),",
        "so ref_ms / numba_tree_ms is the compiled-code gain alone. `-`: not run (reference: its",
        "estimated time exceeds the budget, see the notes; numba tree: more than 3,000,000 nodes).",
        "Every run that has a reference agrees with it to 1e-9 (checked in the script).",
        "",
        "| " + " | ".join(COLUMNS[:-1]) + " |",
        "|" + "---|" * (len(COLUMNS) - 1),
    ]
    for r in rows:
        lines.append("| " + " | ".join(_fmt(r.get(c), c) for c in COLUMNS[:-1]) + " |")
    skipped = [r for r in rows if r.get("ref_skipped")]
    if skipped:
        lines += ["", "Reference not run (too slow for this run's budget): " + "; ".join(
            f"{r['n_obs']} obs x {r['n_states']} states, depth {r['depth']}: {r['ref_skipped']}" for r in skipped)
            + "."]
    acc = {}
    for r in rows:
        acc[(r["n_obs"], r["n_states"], r["depth"])] = r
    lines += ["", "## Acceptance figures", ""]
    for s in SIZES_STATES:
        r = acc.get((16, s, 3))
        if r:
            lines.append(f"- depth 3, 16 observations, {s} states: numba {_fmt(r['search_ms'], 'search_ms')} ms vs "
                         f"reference {_fmt(r['ref_ms'], 'ref_ms')} ms: **{_fmt(r['speedup'], 'speedup')}** faster "
                         f"(target >= 100x); memo expands {r['nodes_nopru']} nodes vs {r['tree']} for the tree: "
                         f"**{_fmt(r['tree_ratio'], 'tree_ratio')}** fewer (target >= 5x); with pruning "
                         f"{r['nodes']} nodes.")
    for s in SIZES_STATES:
        r = acc.get((32, s, 2))
        if r:
            lines.append(f"- depth 2, 32 observations, {s} states: **{_fmt(r['decide_ms'], 'decide_ms')} ms** per "
                         f"warmed decision (wall {_fmt(r['decide_wall_ms'], 'decide_wall_ms')} ms; "
                         f"{_fmt(r['search_ms'], 'search_ms')} ms in the search; target well under 10 ms).")
    lines += ["", "## Cold start", "",
              "Each in a fresh process with `NUMBA_CACHE_DIR` set to an empty temporary directory (what a",
              "fresh install sees: no on-disk cache), then again with the cache that first run wrote",
              f"({cold['cache_files']} cached kernels).", "",
              "| what | empty cache | warm cache |", "|---|---|---|"]
    api_e, api_w = cold[("api", "empty cache")], cold[("api", "warm cache")]
    cli_e, cli_w = cold[("cli", "empty cache")], cold[("cli", "warm cache")]
    lines += [
        f"| import planner + policy | {api_e['import_s']:.2f} s | {api_w['import_s']:.2f} s |",
        f"| first lookahead:2 decision (identity_registry; includes JIT compile or cache load) "
        f"| {api_e['first_decision_s']:.2f} s | {api_w['first_decision_s']:.2f} s |",
        f"| second decision | {1e3 * api_e['second_decision_s']:.2f} ms | {1e3 * api_w['second_decision_s']:.2f} ms |",
        f"| `{' '.join(RUN_CMD)}` (wall) | {cli_e['wall_s']:.2f} s | {cli_w['wall_s']:.2f} s |",
        "",
        "## Node cap",
        "",
        f"`Lookahead(depth=6)` on the 32-observation, 64-state domain fails after {cap[0]:.1f} s with:",
        "",
        f"    planner: error: {cap[1]}",
        "",
    ]
    out.with_suffix(".md").write_text("\n".join(lines), encoding="utf-8")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small cases only, no cold-start runs")
    ap.add_argument("--out", default=None, help="output stem (default bench/results/lookahead; --quick: none)")
    ap.add_argument("--ref-budget", type=float, default=60.0, help="skip a reference run estimated above this (s)")
    args = ap.parse_args(argv)
    command = "python3 bench/bench_lookahead.py" + ("".join(f" {shlex.quote(a)}" for a in (argv or sys.argv[1:])))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    machine_text = machine()
    t_start = time.perf_counter()
    obs_sizes = (8, 16) if args.quick else SIZES_OBS
    depths = (1, 2, 3) if args.quick else DEPTHS
    rows = []
    for n_obs in obs_sizes:
        for n_states in SIZES_STATES:
            node = planner.Session(compiled(n_obs, n_states, seed=SEED)).node
            cost = None
            for depth in depths:
                row = {"n_obs": n_obs, "n_states": n_states, "depth": depth}
                row.update(bench_case(node, depth, cost, args.ref_budget))
                if row.get("ref_cost_per_node") is not None and row["tree"] >= 1000:
                    cost = row["ref_cost_per_node"]
                rows.append(row)
                print(" ".join(f"{c}={_fmt(row.get(c), c)}" for c in COLUMNS), row.get("ref_skipped", ""),
                      flush=True)
    if args.quick and args.out is None:
        return 0
    cold = cold_start()
    print("cold start:", cold, flush=True)
    cap = cap_demo()
    print("cap:", cap, flush=True)
    out = Path(args.out) if args.out else HERE / "results" / "lookahead"
    write(rows, cold, cap, command, out, started, machine_text, time.perf_counter() - t_start)
    print(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
