"""The best-first search's bounds and node cost, measured side by side with a base revision in one run.

``python3 bench/bench_bestfirst.py [--base REV]`` (default ``00fc5fb``, the revision the bounds work
started from) writes ``bench/results/bestfirst.md`` and ``bestfirst.csv``. The base is extracted with
``git archive`` into a temporary folder; every measurement runs in a child process per revision (``base``
and ``ours``), the two children of a section one right after the other, each after a warm-up call so that
no compile is timed. Sections:

- ``node cost``: ``BoundedSearch.plan`` with a node budget of 200,000 on 8 x 16 and 8 x 32 generated
  domains: CPU microseconds per node and nanoseconds per work unit (``BEST_FIRST_UNIT x O x (S + Y + 8)``
  units a node), for the base's default bound, ours with the same bound (``unlock+step``: the effect of
  the kernels without reference counting alone) and ours with the separation bound;
- ``prune``: ours, bound by bound (``evpi``, ``unlock``, ``unlock+step``, ``separation``): the nodes
  ``BoundedSearch`` needs to certify 8 x 12 (3-chain) domains (at most 1,000,000), and the relative gap
  after 300,000 nodes on 8 x 16 and 8 x 32;
- ``certified``: the default policy (``Bounded()``) at the root of the engine benchmark's domains,
  base against ours: certified or not, the relative gap, the work units;
- ``scale x1`` / ``scale x10``: the default policy at 1 and 10 times the default budget on 8 x 32 and
  8 x 40: the relative gap ``(U - L) / U``.

CPU times (``time.process_time``) on a shared machine: only ratios measured moments apart are results;
node and work counts are exact.
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

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results"
CASES = [(12, 3, s) for s in (1, 2, 3, 4, 5, 13)] + [(16, 0, s) for s in (1, 2, 3)] + [(20, 0, s) for s in (1, 2)]
SCALE = [(32, 0, 1), (32, 0, 2), (40, 0, 1)]
BOUND_NAMES = {0: "evpi", 1: "unlock", 2: "unlock+step", 3: "separation"}


# --------------------------------------------------------------------------
# the child: one revision, one section, JSON lines on stdout


def _root(n_obs, chain, seed):
    import planner
    from planner.generators import benchmark_domain

    return planner.Session(planner.Domain.from_dict(benchmark_domain(n_obs, 8, seed=seed, chain=chain))).node


def _bs(node, bound=None):
    from lookahead.bounded import BoundedSearch

    c = node.compiled
    kw = {} if bound is None else {"bound": bound}
    return BoundedSearch(c.prior, c.lik, c.n_outcomes, c.loss, c.cost, c.limits, c.penalty, node.admission.admitted,
                         c.facts, **kw)


def _unit(node):
    from planner.policies import bounded as pb

    c = node.compiled
    S, O, Y = int(c.n_states), len(c.obs_names), int(c.lik.shape[1])
    return O * (S + Y + 8), int(pb.BEST_FIRST_UNIT)


def child(section: str, bounds: list):
    from lookahead import jit
    from planner.warm import KERNEL_MODULES

    jit.ensure_compiled(list(KERNEL_MODULES))
    warm = _root(8, 0, 1)
    for b in bounds:
        _bs(warm, b).plan(warm.outcome_of, budget=2000)
    from planner.policies.bounded import DEFAULT_WORK, Bounded

    Bounded().decide(warm)

    def emit(**row):
        print(json.dumps(row), flush=True)

    if section == "node cost":
        for n_obs in (16, 32):
            node = _root(n_obs, 0, 1)
            terms, unit = _unit(node)
            for b in bounds:
                bs = _bs(node, b)
                t0 = time.process_time()
                r = bs.plan(node.outcome_of, budget=200_000)
                cpu = time.process_time() - t0
                emit(case=f"8x{n_obs} seed 1", bound=BOUND_NAMES.get(b, "default") if b is not None else "default",
                     nodes=r.nodes, us_per_node=round(cpu / r.nodes * 1e6, 3),
                     ns_per_unit=round(cpu / (r.nodes * terms * unit) * 1e9, 3), rel_gap=round(r.gap / r.up, 4))
    elif section == "prune":
        for n_obs, chain, seed in [(12, 3, s) for s in (1, 2, 3, 13)]:
            node = _root(n_obs, chain, seed)
            for b in bounds:
                r = _bs(node, b).plan(node.outcome_of, budget=1_000_000)
                emit(case=f"8x{n_obs} chain {chain} seed {seed}", bound=BOUND_NAMES[b], what="nodes to certify",
                     stopped=r.stopped, nodes=r.nodes, rel_gap=round(r.gap / r.up, 4))
        for n_obs in (16, 32):
            node = _root(n_obs, 0, 1)
            for b in bounds:
                r = _bs(node, b).plan(node.outcome_of, budget=300_000)
                emit(case=f"8x{n_obs} seed 1", bound=BOUND_NAMES[b], what="gap after 300,000 nodes",
                     stopped=r.stopped, nodes=r.nodes, lo=round(r.lo, 6), up=round(r.up, 6),
                     rel_gap=round(r.gap / r.up, 4))
    else:
        mult = {"certified": 1, "scale x1": 1, "scale x10": 10}[section]
        cases = CASES if section == "certified" else SCALE
        pol = Bounded(work=DEFAULT_WORK * mult)
        for n_obs, chain, seed in cases:
            node = _root(n_obs, chain, seed)
            t0 = time.process_time()
            d = pol.decide(node)
            cpu = time.process_time() - t0
            lo, up = d.info["interval"]
            emit(case=f"8x{n_obs} chain {chain} seed {seed}", certified=bool(d.info["certified"]),
                 lo=round(lo, 6), up=round(up, 6), rel_gap=round((up - lo) / max(abs(up), 1e-12), 4),
                 work=int(d.info["work"]), search=d.info["search"], cpu_s=round(cpu, 3))


# --------------------------------------------------------------------------
# the parent


def run_child(tree: Path, section: str, bounds: list) -> list:
    env = dict(os.environ, PYTHONPATH=str(tree))
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", section, "--root", str(tree),
            "--bounds", json.dumps(bounds)]
    p = subprocess.run(argv, env=env, cwd=tree, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"bench child ({tree}, {section}) failed:\n{p.stderr[-3000:]}")
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="00fc5fb", help="the revision to compare with (git rev)")
    ap.add_argument("--skip", default="", help="comma-separated sections to skip")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--bounds", default="[]", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        sys.path.insert(0, args.root)
        child(args.child, json.loads(args.bounds))
        return
    skip = set(filter(None, args.skip.split(",")))
    t0 = time.perf_counter()
    base_tree = Path(tempfile.mkdtemp(prefix="bench-base-"))
    arch = subprocess.run(["git", "archive", args.base], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base_tree)], input=arch, check=True)
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                         text=True).stdout.strip()
    rows = []
    plan = [("node cost", [None], [2, 3]), ("prune", None, [0, 1, 2, 3]), ("certified", [None], [None]),
            ("scale x1", [None], [None]), ("scale x10", [None], [None])]
    for section, base_bounds, our_bounds in plan:
        if section in skip:
            continue
        if section == "node cost":
            # the shared machine's load moves a per-node time by a third from minute to minute: three rounds,
            # base and ours alternating, and the per-round ratios
            for rnd in (1, 2, 3):
                got = {}
                for label, tree, bounds in ((f"base {args.base}", base_tree, base_bounds),
                                            (f"ours {rev}", ROOT, our_bounds)):
                    for r in run_child(tree, section, bounds):
                        rows.append({"section": section, "round": rnd, "kernel": label, **r})
                        got[label, r["case"], r["bound"]] = r["us_per_node"]
                        print(section, rows[-1], flush=True)
                for case in dict.fromkeys(k[1] for k in got):
                    b = got[f"base {args.base}", case, "default"]
                    for bound in ("unlock+step", "separation"):
                        rows.append({"section": "node cost ratio", "round": rnd, "case": case, "bound": bound,
                                     "ours_over_base": round(got[f"ours {rev}", case, bound] / b, 3)})
            continue
        if base_bounds is not None:
            for r in run_child(base_tree, section, base_bounds):
                rows.append({"section": section, "kernel": f"base {args.base}", **r})
                print(section, rows[-1], flush=True)
        for r in run_child(ROOT, section, our_bounds):
            rows.append({"section": section, "kernel": f"ours {rev}", **r})
            print(section, rows[-1], flush=True)
    write(rows, f"python3 bench/bench_bestfirst.py --base {args.base}" + (f" --skip {args.skip}" if args.skip else ""),
          time.perf_counter() - t0)


def write(rows, command, elapsed):
    OUT.mkdir(parents=True, exist_ok=True)
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(OUT / "bestfirst.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    lines = ["# The best-first search: bounds and node cost, base against ours", "",
             f"Produced by `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {elapsed / 60:.1f} min; "
             f"load average {os.getloadavg()[0]:.2f} at the end, on a shared 2-core machine: only ratios measured "
             "moments apart are results). Sections: the docstring of `bench/bench_bestfirst.py`.", ""]
    for section in dict.fromkeys(r["section"] for r in rows):
        sub = [r for r in rows if r["section"] == section]
        cols = [k for k in keys if any(k in r for r in sub) and k != "section"]
        lines += [f"## {section}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(r.get(k, "")) for k in cols) + " |" for r in sub]
        lines.append("")
    (OUT / "bestfirst.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
