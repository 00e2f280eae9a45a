"""Whole processes: the pure-Python reference solver against ``planner explain`` (issue 20's "whole process at
least 10x the pure-Python reference on 8x12").

    python3 bench/bench_reference_process.py [--repeats 3]

For each generated case (8 states, 12 observations, a 3-step chain; ``planner.generators.benchmark_domain``;
and one of 8 observations, whose exhaustive search fits the Python tier's allowance, ``planner.tiers``)
the domain is written to a file once; then, alternately, two child processes read it:

- ``ours``: ``planner explain FILE`` (the default policy, at its default budget), on a warm numba cache;
- ``reference``: ``python3 -c`` importing the project, loading and compiling the file and running
  :func:`lookahead.reference.optimal_value` (plain Python, memoised on the set of pairs) at the root.

Each is timed by its child's CPU time (user + system, ``resource.getrusage(RUSAGE_CHILDREN)``), the best of
the repeats; the ratio reference / ours is the result (both run moments apart on the same shared machine).
The reference's value must equal the interval's upper end that ``planner explain --json`` prints where the
policy certifies (checked). Results: ``bench/results/reference_process.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from planner.generators import benchmark_domain  # noqa: E402

OUT = ROOT / "bench" / "results" / "reference_process.md"
CASES = [(8, 3, 1), (12, 3, 1), (12, 3, 3), (12, 3, 13)]  # 8x8: a medium search, planned in Python alone

REFERENCE = """
import sys, planner
from lookahead.reference import optimal_value
node = planner.Session(planner.load_domain(sys.argv[1])).node
c = node.compiled
v, nodes = optimal_value(node.belief, node.outcome_of, node.spent, node.admission.admitted, c.lik, c.n_outcomes,
                         c.loss, c.facts, c.cost, c.limits, c.penalty)
print(repr(v), nodes)
"""


def child_cpu(argv, env) -> tuple:
    """(CPU seconds of the child, its standard output)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.time()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n_obs, chain, seed in CASES:
            path = Path(tmp) / f"g{n_obs}c{chain}s{seed}.yaml"
            path.write_text(yaml.safe_dump(benchmark_domain(n_obs, 8, seed=seed, chain=chain)), encoding="utf-8")
            ours_cmd = [sys.executable, "-m", "planner", "explain", str(path), "--json"]
            ref_cmd = [sys.executable, "-c", REFERENCE, str(path)]
            child_cpu(ours_cmd, env)  # warm-up: the numba cache is loaded (or built) outside the timing
            ours, ref = [], []
            for _ in range(args.repeats):
                t, out = child_cpu(ours_cmd, env)
                ours.append(t)
                info = json.loads(out)
                t, out = child_cpu(ref_cmd, env)
                ref.append(t)
                v_ref = float(out.split()[0])
            pi = info.get("policy_info", info)
            lo, up = pi["interval"]
            same = pi["certified"] and abs(up - v_ref) <= 1e-9
            rows.append((f"8x{n_obs} chain {chain} seed {seed}", min(ours), min(ref), min(ref) / min(ours),
                         pi["certified"], same))
            print(rows[-1], flush=True)
    load = os.getloadavg()[0]
    lines = ["# Whole processes: the pure-Python reference against `planner explain`", "",
             f"Produced by `python3 bench/bench_reference_process.py --repeats {args.repeats}` "
             f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {(time.time() - start) / 60:.1f} min; load "
             f"average {load:.2f} at the end, on a shared 2-core machine: CPU times of the child processes, best of "
             "the repeats, and only the ratios are results). Method: the docstring of the script.", "",
             "| case | ours cpu_s | reference cpu_s | reference / ours | certified | same value |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {c} | {o:.2f} | {r:.2f} | {x:.1f} | {cert} | {s} |" for c, o, r, x, cert, s in rows]
    lines += ["", "Both processes import numpy, PyYAML, jsonschema and attrs and read the same file. Ours runs the "
              "bounded policy's exhaustive search in plain Python for its first `planner.tiers.PYTHON_SEARCH_WORK` "
              "work units and, only where it needs more, goes on compiled from where it paused (the same search, "
              "so the same decision). A compiled process pays a fixed cost first: numba's import and its first "
              "compiled call (its code generator's set-up, about 0.6-0.8 s of CPU measured on this machine, "
              "then 0.05 s for the search kernel itself). The 8x8 case's search (205,056 work units) never pays "
              "it; the 8x12 seed-1 search (1.5 million units, 1.3 s in Python, 6 ms compiled) does, and there the "
              "reference's plain-Python process is still the faster one; the ratio is the search's where the "
              "search is most of the work.", ""]
    OUT.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
