"""This tree's depth-first kernel (``lookahead.search.expectimax``) against another checkout's, side by side.

Usage (from the repository root)::

    git archive 00fc5fb | tar -x -C /tmp/old        # the other tree (any checkout with lookahead/)
    python3 bench/bench_search_versus.py --versus /tmp/old            # prints a table
    python3 bench/bench_search_versus.py --versus /tmp/old --out bench/results/search_versus

Each tree runs in its own persistent child process (``--worker DIR``: ``DIR`` first on
``sys.path``, the compiled tier), so the two kernels never share a process, a module or a
numba cache entry. The parent builds every domain dict once with this tree's generators
(``planner.generators.benchmark_domain``: noisy sources; ``bench/compare_streed.py``'s mapping
of a vendored STreeD dataset: exact tests) and hands the same dicts to both children, which
load, compile and root them with their own code. Each child warms every case (numba loads
or compiles the kernel; one search), then the parent asks the two children in turn, case by
case, round by round (the order of the pair alternates between rounds), for a timed
request: the best of ``--reps`` searches back to back, its CPU time (``time.process_time`` in the child), value (as a hex float) and node
count. A ratio is the other tree's best CPU time over this tree's, both taken from the
same rounds (``ratio_best``); ``ratio_median`` is of the medians, and ``ratio_paired`` the median over
rounds of the ratio within a round (the two requests run moments apart, so load that slows both cancels). Values must agree bit for bit (checked).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: (name, kind, n_obs or dataset, n_states or cost level, depth): noisy cases from benchmark_domain (the shapes
#: the slowdown was reported on) and exact ones from the STreeD suite (where the support index pays)
CASES = (
    ("noisy 12x8", "noisy", 12, 8, 6),
    ("noisy 10x16", "noisy", 10, 16, 5),
    ("noisy 20x32", "noisy", 20, 32, 3),
    ("noisy 16x64", "noisy", 16, 64, 3),
    ("exact diabetes", "exact", "diabetes", "middle", 4),
    ("exact breast", "exact", "breast", "middle", 4),
    ("exact heart", "exact", "heart", "high", 4),
)


def domain_dicts(cases):
    """The domain dict of every case, built with this tree's generators."""
    sys.path.insert(0, str(ROOT))
    from planner.generators import benchmark_domain

    sys.path.insert(0, str(HERE))
    import compare_streed

    out = []
    for name, kind, a, b, depth in cases:
        if kind == "noisy":
            d = benchmark_domain(a, b, seed=1)
        else:
            d = compare_streed.domain_dict(compare_streed.load_case(a, b))
        out.append({"name": name, "kind": kind, "depth": depth, "domain": d})
    return out


# --------------------------------------------------------------------------
# the child


def worker(code: str, cases_path: str):
    """Serve timed searches of the cases in `cases_path` with the tree at `code` (one JSON line per request)."""
    sys.path.insert(0, str(Path(code).resolve()))
    import lookahead.search as search
    from lookahead.jit import ensure_compiled
    from planner.compile import compile_domain
    from planner.gates.admission import admit
    from planner.model.domain import Domain
    from planner.node import root_node

    ensure_compiled(("lookahead.core", "lookahead.search"))
    cases = json.loads(Path(cases_path).read_text())
    args = []
    for case in cases:
        c = compile_domain(Domain.from_dict(case["domain"]))
        n = root_node(c, admit(c))
        args.append((n.belief, n.outcome_of, n.spent, n.eligible, n.admission.admitted, int(case["depth"]), c.lik,
                     c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, c.n_values))
    opts = json.loads(os.environ.get("VERSUS_OPTS", "{}"))
    for a in args:  # warm: numba loads (or compiles) the kernel
        search.expectimax(*a, max_nodes=10**9, **opts)
    print(json.dumps({"file": search.__file__}), flush=True)
    for line in sys.stdin:
        i, reps = (int(x) for x in line.split())
        t = float("inf")
        for _ in range(reps):  # the best of `reps` back to back (a shared machine's noise is one-sided)
            t0 = time.process_time()
            r = search.expectimax(*args[i], max_nodes=10**9, **opts)
            t = min(t, time.process_time() - t0)
        print(json.dumps({"cpu": t, "value": float(r.value).hex(), "nodes": int(r.nodes)}), flush=True)


# --------------------------------------------------------------------------
# the parent


class Child:
    def __init__(self, code, cases_path, opts=None):
        env = dict(os.environ)
        if opts:
            env["VERSUS_OPTS"] = json.dumps(opts)
        self.p = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", str(code), cases_path],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=str(code), env=env)
        self.file = self._read()["file"]

    def _read(self):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("a worker died (see its stderr above)")
        return json.loads(line)

    def run(self, i, reps):
        self.p.stdin.write(f"{i} {reps}\n")
        self.p.stdin.flush()
        return self._read()

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def versus(other, rounds, cases=CASES, opts=None, reps=3, log=print):
    dicts = domain_dicts(cases)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(dicts, f)
        path = f.name
    try:
        them, us = Child(other, path), Child(ROOT, path, opts)
        log(f"other: {them.file}\nours:  {us.file}")
        times = {i: ([], []) for i in range(len(cases))}
        info = {}
        for r in range(rounds):
            for i in range(len(cases)):
                pair = (them, us) if (r + i) % 2 == 0 else (us, them)
                res = {id(ch): ch.run(i, reps) for ch in pair}
                a, b = res[id(them)], res[id(us)]
                if a["value"] != b["value"]:
                    raise AssertionError(f"{cases[i][0]}: values differ: {a['value']} against {b['value']}")
                times[i][0].append(a["cpu"])
                times[i][1].append(b["cpu"])
                info[i] = (a, b)
        them.close()
        us.close()
    finally:
        os.unlink(path)
    rows = []
    for i, (name, kind, _a, _b, depth) in enumerate(cases):
        ta, tb = times[i]
        a, b = info[i]
        rows.append({"case": name, "kind": kind, "depth": depth, "value": float.fromhex(a["value"]),
                     "nodes_other": a["nodes"], "nodes_ours": b["nodes"], "other_ms": min(ta) * 1e3,
                     "ours_ms": min(tb) * 1e3, "ratio_best": min(ta) / min(tb),
                     "ratio_median": _median(ta) / _median(tb),
                     "ratio_paired": _median([x / y for x, y in zip(ta, tb)])})
    return rows


COLUMNS = ["case", "kind", "depth", "value", "nodes_other", "nodes_ours", "other_ms", "ours_ms", "ratio_best",
           "ratio_median", "ratio_paired"]


def table(rows) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = []
        for c in COLUMNS:
            v = r[c]
            cells.append(f"{v:.3f}" if isinstance(v, float) and c.endswith(("ms", "best", "median", "paired")) else
                         f"{v:.10f}" if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--versus", help="the other checkout (a directory holding lookahead/ and planner/)")
    ap.add_argument("--rounds", type=int, default=7, help="timed searches per case and tree (best and median)")
    ap.add_argument("--reps", type=int, default=3, help="searches per request, back to back (its best is reported)")
    ap.add_argument("--opts", default="{}", help="JSON keyword options for this tree's expectimax")
    ap.add_argument("--kinds", default="noisy,exact", help="which cases: noisy, exact or both (comma-separated)")
    ap.add_argument("--out", help="write STEM.csv and print the table (the .md is written by hand)")
    ap.add_argument("--worker", nargs=2, metavar=("DIR", "CASES"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(*a.worker)
        return 0
    if not a.versus or not (Path(a.versus) / "lookahead" / "search.py").is_file():
        print(f"bench_search_versus: --versus {a.versus!r}: not a checkout with lookahead/search.py", file=sys.stderr)
        return 2
    kinds = set(a.kinds.split(","))
    rows = versus(a.versus, a.rounds, cases=[c for c in CASES if c[1] in kinds], opts=json.loads(a.opts), reps=a.reps)
    print(table(rows))
    if a.out:
        with open(f"{a.out}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS)
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
