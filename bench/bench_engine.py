"""The planning engine's targets (issue 20), measured in one run: ``python3 bench/bench_engine.py``.

Writes ``bench/results/engine.md`` and ``engine.csv``. Sections:

- ``cold start``: the seed case (``planner run payment_release --world approval=pending``, the default
  policy) as whole processes, first with an empty numba cache, then again (warm); wall and CPU seconds,
  and whether the one compile line was printed;
- ``certified``: the default policy (``Bounded()``, the default budget) at the root of generated domains
  (8 states; 12 observations with a 3-step chain, 16 and 20 observations): certified or not, the gap,
  the work units and CPU seconds of the decision, in process (kernels compiled and warm);
- ``invariant``: on the same domains, where ``lookahead:<full depth>`` fits the exhaustive share of the
  budget, the default policy's certified value equals it (counted);
- ``scale``: 32 observations, the relative gap ``(U - L) / U`` at the default budget (about 1 s) and at
  ten times it (about 10 s);
- ``reference``: the pure-Python reference (``lookahead.reference.optimal_value``) against the default
  policy in process on 8 x 10-12 domains it can solve, as a ratio of CPU times;
- ``merge``: the depth-first search with and without merging equivalent beliefs on the STreeD suite
  (``bench/compare_streed.py``'s mapping), at depth 4 and full depth: nodes, merges, CPU ms.
- ``branch and bound``: the full-depth depth-first search without and with branch and bound on the revelation
  bound (the bound's tables as the default policy builds them, :meth:`Bounded._reveal`), side by side in one run:
  nodes, CPU seconds (the tables included), the ratio, and whether the value is the same bits;
- ``root bounds``: at the root of each case, V* (where a search finished) and the lower bounds the tip bound of
  the best-first search gives (the separation bound) and the revelation bound (its allowance as the policy
  settles it, and every acquisition each-once), with the relative gap of each to V*;
- ``v star``: V* of the 32- and 40-observation cases by the branch-and-bound search with a large cap (for the
  ``scale`` rows: the interval holds it), with its nodes and CPU seconds;
- ``unit``: nanoseconds of CPU per work unit of budget-bound default decisions (the calibration of
  :data:`planner.policies.bounded.DEFAULT_WORK`: about one second a decision).
- ``shared`` (``--only shared``, written to ``shared.md``/``shared.csv``): the default policy on the
  budget-bound engine cases (8 x 12 chain 3 seed 13, 8 x 16 seeds 1 and 3, 8 x 20 seeds 1-2) with the
  exhaustive attempt's exact entries shared with the later phases (``Bounded()``) and discarded
  (``Bounded(share=False)``), and, with ``--base PATH``, the base revision's policy from a checkout at PATH
  (run in a child process): per phase nodes and exact entries reused, work, the final interval; and the
  CPU time of a depth-limited node with and without the memo (8 x 12 seed 13, depths 4 and 5).

Times are CPU seconds of this process (``time.process_time``) or of the child (``resource``), on a shared
machine: only ratios measured moments apart are results; node and work counts are exact.
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402

import planner  # noqa: E402
from planner.generators import benchmark_domain  # noqa: E402
from planner.policies.bounded import DEFAULT_WORK, EXHAUSTIVE_SHARE, Bounded, node_work  # noqa: E402

OUT = ROOT / "bench" / "results"


def child_run(argv, env) -> dict:
    """One whole process: wall seconds, CPU seconds (user + system of the child) and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "rc": p.returncode, "stderr": p.stderr.strip()}


def cold_start(rows, log):
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=tempfile.mkdtemp(prefix="numba-empty-"))
    argv = [sys.executable, "-m", "planner.cli", "run", "payment_release", "--world", "approval=pending"]
    for label in ("empty cache", "warm (second run)", "warm (third run)"):
        r = child_run(argv, env)
        compiled = "compiling search kernels" in r["stderr"]
        rows.append({"section": "cold start", "case": "seed payment_release", "what": label,
                     "wall_s": round(r["wall"], 3), "cpu_s": round(r["cpu"], 3), "rc": r["rc"],
                     "compile_line": compiled})
        log(f"cold start {label}: {r['wall']:.2f} s wall, {r['cpu']:.2f} s CPU, rc {r['rc']}, compile line {compiled}")


CASES = [(12, 3, s) for s in (1, 2, 3, 4, 5, 13)] + [(16, 0, s) for s in (1, 2, 3)] + [(20, 0, s) for s in (1, 2)]


def _root(n_obs, chain, seed, states=8):
    return planner.Session(planner.Domain.from_dict(benchmark_domain(n_obs, states, seed=seed, chain=chain))).node


def certified(rows, log, budget=None, section="certified", cases=CASES):
    pol = Bounded(work=budget)
    for n_obs, chain, seed in cases:
        node = _root(n_obs, chain, seed)
        t0 = time.process_time()
        d = pol.decide(node)
        cpu = time.process_time() - t0
        lo, up = d.info["interval"]
        rows.append({"section": section, "case": f"8x{n_obs} chain {chain} seed {seed}", "what": pol.spec,
                     "certified": d.info["certified"], "lo": round(lo, 6), "up": round(up, 6),
                     "rel_gap": round((up - lo) / max(abs(up), 1e-12), 4), "work": d.info["work"],
                     "search": d.info["search"], "cpu_s": round(cpu, 3)})
        log(f"{section} 8x{n_obs} c{chain} s{seed}: {d.info['search']}, certified {d.info['certified']}, "
            f"[{lo:.4f}, {up:.4f}], work {d.info['work']:,}, {cpu:.2f} s")


def invariant(rows, log):
    from lookahead.search import SearchCapExceeded

    held = fits = 0
    for n_obs, chain, seed in CASES[:9]:
        node = _root(n_obs, chain, seed)
        unit = node_work(node.compiled)[0]
        try:
            full = node.search(len(node.compiled.obs_names), max_nodes=int(DEFAULT_WORK * EXHAUSTIVE_SHARE) // unit)
        except SearchCapExceeded:
            continue
        fits += 1
        d = Bounded().decide(node)
        if d.info["certified"] and abs(d.info["interval"][0] - full.value) <= 1e-12:
            held += 1
    rows.append({"section": "invariant", "case": f"{fits} of {len(CASES[:9])} domains fit", "what": "bounded == lookahead:full",
                 "held": held, "fits": fits})
    log(f"invariant: held on {held} of the {fits} domains where lookahead:full fits the exhaustive share")


def scale(rows, log):
    cases = [(32, 0, s) for s in (1, 2)] + [(40, 0, 1)]
    for mult in (1, 10):
        certified(rows, log, budget=DEFAULT_WORK * mult, section=f"scale x{mult}", cases=cases)


def reference(rows, log):
    from lookahead.reference import optimal_value

    for n_obs, chain, seed in [(10, 2, 1), (10, 2, 2), (12, 3, 1)]:
        node = _root(n_obs, chain, seed)
        c = node.compiled
        t0 = time.process_time()
        v_ref, nodes = optimal_value(node.belief, node.outcome_of, node.spent, node.admission.admitted, c.lik,
                                     c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty)
        t_ref = time.process_time() - t0
        t0 = time.process_time()
        d = Bounded().decide(node)
        t_ours = time.process_time() - t0
        rows.append({"section": "reference", "case": f"8x{n_obs} chain {chain} seed {seed}", "what": "ref / ours",
                     "ref_s": round(t_ref, 3), "cpu_s": round(t_ours, 4), "ratio": round(t_ref / max(t_ours, 1e-9), 1),
                     "same": abs(v_ref - d.info["interval"][1]) <= 1e-9})
        log(f"reference 8x{n_obs} s{seed}: ref {t_ref:.2f} s vs ours {t_ours:.3f} s ({t_ref / max(t_ours, 1e-9):.0f}x), "
            f"same value {abs(v_ref - d.info['interval'][1]) <= 1e-9}")


def branch_and_bound(rows, log):
    from planner.policies.bounded import EXHAUSTIVE_SHARE

    for n_obs, chain, seed in CASES:
        node = _root(n_obs, chain, seed)
        c = node.compiled
        t0 = time.process_time()
        plain = node.search(n_obs, max_nodes=50_000_000)
        t_plain = time.process_time() - t0
        t0 = time.process_time()
        rb, _ = Bounded()._reveal(node, int(DEFAULT_WORK * EXHAUSTIVE_SHARE))
        bnb = node.search(n_obs, max_nodes=50_000_000, reveal=rb, bnb_root=True)
        t_bnb = time.process_time() - t0
        same = bnb.value == plain.value
        rows.append({"section": "branch and bound", "case": f"8x{n_obs} chain {chain} seed {seed}",
                     "what": "plain / branch and bound", "v_star": round(plain.value, 6), "nodes_plain": plain.nodes,
                     "nodes_bnb": bnb.nodes, "bound_work": bnb.bound_work, "allowance": rb.allowance,
                     "cpu_plain_s": round(t_plain, 3), "cpu_bnb_s": round(t_bnb, 3),
                     "ratio": round(t_plain / max(t_bnb, 1e-9), 1), "same": same})
        log(f"branch and bound 8x{n_obs} c{chain} s{seed}: {plain.nodes:,} -> {bnb.nodes:,} nodes, "
            f"{t_plain:.2f} -> {t_bnb:.3f} s ({t_plain / max(t_bnb, 1e-9):.0f}x), same bits {same}")


V_STAR_CASES = [(32, 0, 1), (32, 0, 2), (40, 0, 1)]


def v_star(rows, log):
    from lookahead.reveal import RevealBound
    from lookahead.search import SearchCapExceeded

    out = {}
    for n_obs, chain, seed in V_STAR_CASES:
        node = _root(n_obs, chain, seed)
        c = node.compiled
        t0 = time.process_time()
        rb = RevealBound(c.states, len(c.prop_names), c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits,
                         c.penalty, node.admission.admitted, node.outcome_of, node.spent, entries=1_000_000)
        rb.settle(node.outcome_of, node.belief, node.spent, 5e8)
        try:
            r = node.search(n_obs, max_nodes=40_000_000, reveal=rb, bnb_root=True)
            value, nodes = r.value, r.nodes
        except SearchCapExceeded:
            value, nodes = float("nan"), 40_000_000
        cpu = time.process_time() - t0
        out[(n_obs, chain, seed)] = value
        rows.append({"section": "v star", "case": f"8x{n_obs} chain {chain} seed {seed}", "what": "branch and bound",
                     "v_star": round(value, 6), "nodes": nodes, "allowance": rb.allowance, "cpu_s": round(cpu, 2)})
        log(f"v star 8x{n_obs} s{seed}: {value:.6f} ({nodes:,} nodes, allowance {rb.allowance}, {cpu:.1f} s)")
    return out


def root_bounds(rows, log, stars=None):
    from lookahead.bounded import BoundedSearch
    from lookahead.reveal import FULL, RevealBound
    from planner.policies.bounded import EXHAUSTIVE_SHARE

    stars = stars or {}
    for n_obs, chain, seed in CASES + V_STAR_CASES:
        node = _root(n_obs, chain, seed)
        c = node.compiled
        star = stars.get((n_obs, chain, seed))
        if star is None and n_obs <= 20:
            rb, _ = Bounded()._reveal(node, int(DEFAULT_WORK * EXHAUSTIVE_SHARE))
            star = node.search(n_obs, max_nodes=50_000_000, reveal=rb, bnb_root=True).value
        bs = BoundedSearch(c.prior, c.lik, c.n_outcomes, c.loss, c.cost, c.limits, c.penalty,
                           node.admission.admitted, c.facts)
        sep = bs.interval(node.outcome_of)[0]
        rb, _ = Bounded()._reveal(node, int(DEFAULT_WORK * EXHAUSTIVE_SHARE))
        settled = rb.value(node.outcome_of, node.belief, node.spent)
        row = {"section": "root bounds", "case": f"8x{n_obs} chain {chain} seed {seed}", "v_star": star,
               "separation": round(sep, 4), "reveal": round(settled, 4), "allowance": rb.allowance}
        if n_obs <= 20:
            full = RevealBound(c.states, len(c.prop_names), c.lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits,
                               c.penalty, node.admission.admitted, node.outcome_of, node.spent, entries=1_000_000,
                               allowance=FULL).value(node.outcome_of, node.belief, node.spent)
            row["reveal_full"] = round(full, 4)
        if star is not None and star == star:
            row["v_star"] = round(star, 6)
            row["gap_separation"] = round((star - sep) / star, 4)
            row["gap_reveal"] = round((star - settled) / star, 4)
        rows.append(row)
        log(f"root bounds 8x{n_obs} s{seed}: V* {star}, separation {sep:.4f}, reveal {settled:.4f} "
            f"(allowance {rb.allowance})")


def unit(rows, log):
    cases = [(32, 0, s) for s in (1, 2, 3)] + [(40, 0, s) for s in (1, 2)] + [(24, 0, s) for s in (1, 2)]
    rates = []
    for n_obs, chain, seed in cases:
        node = _root(n_obs, chain, seed)
        t0 = time.process_time()
        d = Bounded().decide(node)
        cpu = time.process_time() - t0
        ns = cpu / max(1, d.info["work"]) * 1e9
        if not d.info["certified"]:
            rates.append(ns)
        rows.append({"section": "unit", "case": f"8x{n_obs} chain {chain} seed {seed}", "what": "bounded",
                     "certified": d.info["certified"], "work": d.info["work"], "cpu_s": round(cpu, 3),
                     "ns_per_unit": round(ns, 3)})
        log(f"unit 8x{n_obs} s{seed}: {d.info['work']:,} units in {cpu:.3f} s ({ns:.2f} ns a unit)")
    if rates:
        rows.append({"section": "unit", "case": "median of the budget-bound ones", "what": "bounded",
                     "ns_per_unit": round(float(np.median(rates)), 3)})


def merge(rows, log):
    import compare_streed as cs
    from lookahead.search import expectimax

    for name, level in [("diabetes", "high"), ("breast", "middle"), ("heart", "high"), ("hepatitis", "middle")]:
        ds = cs.load_case(name, level)
        c, n = cs.ours_setup(ds)
        for depth in (4, len(c.obs_names)):
            out = {}
            for m in (False, True):
                t0 = time.process_time()
                r = expectimax(n.belief, n.outcome_of, n.spent, n.eligible, n.admission.admitted, depth, c.lik,
                               c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, c.n_values, merge=m,
                               max_nodes=5_000_000)
                out[m] = (r.value, r.nodes, r.merged, time.process_time() - t0)
            same = out[True][0] == out[False][0]
            rows.append({"section": "merge", "case": f"{name} {level}", "what": f"depth {depth}",
                         "nodes_off": out[False][1], "nodes_on": out[True][1], "merges": out[True][2],
                         "ms_off": round(out[False][3] * 1e3, 1), "ms_on": round(out[True][3] * 1e3, 1),
                         "same": same})
            log(f"merge {name} {level} d{depth}: nodes {out[False][1]} -> {out[True][1]} ({out[True][2]} merges), "
                f"{out[False][3] * 1e3:.0f} -> {out[True][3] * 1e3:.0f} ms, same value {same}")


SHARED_CASES = [(12, 3, 13), (16, 0, 1), (16, 0, 3), (20, 0, 1), (20, 0, 2)]

_BASE_CHILD = '''
import json, sys, time
import planner
from planner.generators import benchmark_domain
from planner.policies.bounded import Bounded
from lookahead import jit
from planner.warm import KERNEL_MODULES
jit.ensure_compiled(list(KERNEL_MODULES))
Bounded().decide(planner.Session(planner.Domain.from_dict(benchmark_domain(8, 8, seed=1))).node)  # (load them)
Bounded(work=20_000_000).decide(planner.Session(planner.Domain.from_dict(benchmark_domain(12, 8, seed=13,
                                                                                          chain=3))).node)
for n_obs, chain, seed in json.loads(sys.argv[1]):
    node = planner.Session(planner.Domain.from_dict(benchmark_domain(n_obs, 8, seed=seed, chain=chain))).node
    t0 = time.process_time()
    d = Bounded().decide(node)
    print(json.dumps({"case": [n_obs, chain, seed], "cpu": time.process_time() - t0, "info": {
        k: d.info[k] for k in ("interval", "work", "phases", "certified", "search", "plan_source")}}), flush=True)
'''


def _shared_row(case, what, info, cpu):
    n_obs, chain, seed = case
    lo, up = info["interval"]
    ph = {p["search"]: p for p in info["phases"]}
    row = {"section": "shared", "case": f"8x{n_obs} chain {chain} seed {seed}", "what": what,
           "lo": round(lo, 6), "up": round(up, 6), "rel_gap": round((up - lo) / max(abs(up), 1e-12), 4),
           "certified": info["certified"], "work": info["work"]}
    for name, short in (("exhaustive", "ex"), ("best-first", "bf"), ("depth-limited", "dl")):
        p = ph.get(name, {})
        row[f"{short}_nodes"] = p.get("nodes", "")
        if short != "ex":
            row[f"{short}_reused"] = p.get("reused", "")
    row["plan_source"] = info.get("plan_source")
    row["cpu_s"] = round(cpu, 3)
    return row


def shared(rows, log, base=None):
    """The exact entries shared or not, side by side (and the base revision's policy, from a checkout)."""
    for case in SHARED_CASES:
        node = _root(*case)
        for what, pol in (("shared", Bounded()), ("not shared", Bounded(share=False))):
            t0 = time.process_time()
            d = pol.decide(node)
            cpu = time.process_time() - t0
            rows.append(_shared_row(case, what, d.info, cpu))
            r = rows[-1]
            log(f"shared 8x{case[0]} s{case[2]} {what}: [{r['lo']:.5f}, {r['up']:.5f}] rel gap {r['rel_gap']}, "
                f"work {r['work']:,}, reused bf {r['bf_reused']} dl {r['dl_reused']}, {cpu:.2f} s")
    # the cost of a depth-limited node that reads the memo: one more probe per child, in a large table
    from lookahead.search import SearchCapExceeded

    node = _root(12, 3, 13)
    try:
        node.search(12, max_nodes=600_961)  # the exhaustive attempt at the default budget
    except SearchCapExceeded as stop:
        memo = stop.memo
    for d in (4, 5):
        for rnd in range(3):  # alternating rounds
            for what, m in (("not shared", None), ("shared", memo)):
                t0 = time.process_time()
                r = node.search(d, exact=m)
                cpu = time.process_time() - t0
                rows.append({"section": "depth-limited node cost", "case": "8x12 chain 3 seed 13",
                             "what": f"depth {d} {what} round {rnd + 1}", "nodes": r.nodes, "reused": r.reused,
                             "value": round(r.value, 6), "cpu_ms": round(cpu * 1e3, 2),
                             "ns_per_node": round(cpu / r.nodes * 1e9)})
                log(f"depth {d} {what}: {r.nodes} nodes, {r.reused} reused, {cpu * 1e3:.1f} ms, "
                    f"{cpu / r.nodes * 1e9:.0f} ns a node")
    if base is None:
        return
    import json

    env = dict(os.environ, PYTHONPATH=str(Path(base).resolve()))
    p = subprocess.run([sys.executable, "-c", _BASE_CHILD, json.dumps(SHARED_CASES)], env=env, cwd=base,
                       capture_output=True, text=True, check=True)
    for line in p.stdout.splitlines():
        out = json.loads(line)
        rows.append(_shared_row(tuple(out["case"]), "base revision", out["info"], out["cpu"]))
        r = rows[-1]
        log(f"shared {r['case']} base: [{r['lo']:.5f}, {r['up']:.5f}] rel gap {r['rel_gap']}, work {r['work']:,}")


def write(rows, command, elapsed, name="engine"):
    OUT.mkdir(parents=True, exist_ok=True)
    keys = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(OUT / f"{name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    load = os.getloadavg()[0]
    title = {"engine": "The planning engine (issue 20's targets)",
             "shared": "One memo for the decision: exact entries shared or not (issue 20, point 2)"}[name]
    lines = [f"# {title}", "",
             f"Produced by `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"{elapsed / 60:.1f} min; load average {load:.2f} at the end, on a shared 2-core machine: "
             "CPU times, and only ratios measured moments apart are results). "
             "Sections: the docstring of `bench/bench_engine.py`.", ""]
    for section in dict.fromkeys(r["section"] for r in rows):
        sub = [r for r in rows if r["section"] == section]
        cols = [k for k in keys if any(k in r for r in sub) and k != "section"]
        lines += [f"## {section}", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(r.get(k, "")) for k in cols) + " |" for r in sub]
        lines.append("")
    (OUT / f"{name}.md").write_text("\n".join(lines))


def splice_cold(rows, command):
    """Replace only the cold-start section of ``engine.md`` and its rows of ``engine.csv`` (``--only cold``)."""
    with open(OUT / "engine.csv", newline="") as f:
        reader = csv.DictReader(f)
        keys, old = list(reader.fieldnames), [r for r in reader if r["section"] != "cold start"]
    with open(OUT / "engine.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows + old)
    cols = [k for k in keys if any(k in r for r in rows) and k != "section"]
    section = ["## cold start", "",
               f"Rows from `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
               f"{os.getloadavg()[0]:.2f}); the other sections are from the run named above.", "",
               "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    section += ["| " + " | ".join(str(r.get(k, "")) for k in cols) + " |" for r in rows]
    text = (OUT / "engine.md").read_text()
    head, rest = text.split("## cold start", 1)
    nxt = rest.find("\n## ")
    (OUT / "engine.md").write_text(head + "\n".join(section) + "\n" + (rest[nxt:] if nxt >= 0 else ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip", default="", help="comma-separated sections to skip (cold, certified, invariant, "
                                              "scale, reference, merge, bnb, vstar, bounds, unit)")
    ap.add_argument("--only", choices=("cold", "shared"),
                    help="cold: measure only the cold start and replace that section in the results, keeping the "
                         "rest; shared: only the shared-memo section, written to shared.md")
    ap.add_argument("--base", help="with --only shared: a checkout of the base revision to run beside this one")
    args = ap.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    t0 = time.perf_counter()
    rows: list = []

    def log(msg):
        print(msg, flush=True)

    if args.only == "cold":
        cold_start(rows, log)
        splice_cold(rows, "python3 bench/bench_engine.py --only cold")
        return
    from lookahead import jit
    from planner.warm import KERNEL_MODULES
    if "cold" not in skip and args.only != "shared":
        cold_start(rows, log)
    jit.ensure_compiled(list(KERNEL_MODULES))  # the in-process sections measure the compiled tier
    _root(8, 0, 1).search(3)  # load the kernels before any timing
    Bounded().decide(_root(8, 0, 1))
    if args.only == "shared":
        Bounded(work=20_000_000).decide(_root(12, 3, 13))  # and the kernels that read an exact memo
        shared(rows, log, args.base)
        write(rows, "python3 bench/bench_engine.py --only shared" + (f" --base {args.base}" if args.base else ""),
              time.perf_counter() - t0, name="shared")
        return
    stars = {}
    for name, fn in (("certified", certified), ("invariant", invariant), ("scale", scale),
                     ("reference", reference), ("merge", merge), ("bnb", branch_and_bound), ("vstar", v_star),
                     ("bounds", root_bounds), ("unit", unit)):
        if name in skip:
            continue
        if name == "vstar":
            stars = fn(rows, log)
        elif name == "bounds":
            fn(rows, log, stars)
        else:
            fn(rows, log)
    write(rows, "python3 bench/bench_engine.py" + (f" --skip {args.skip}" if args.skip else ""),
          time.perf_counter() - t0)


if __name__ == "__main__":
    main()
