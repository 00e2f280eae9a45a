"""The expectimax kernel before and after its rewrite (issue 11, item 5), and a bit-identity check.

Usage (from the repository root)::

    python3 bench/bench_kernel.py                 # check + measure; writes bench/results/kernel.{md,csv}
    python3 bench/bench_kernel.py check           # only the bit-identity check (prints, writes nothing)
    python3 bench/bench_kernel.py measure         # only the measurements
    python3 bench/bench_kernel.py --quick check   # a smaller check (a smoke run)

*Old* is :mod:`lookahead.search` at commit :data:`OLD_REV` (the last one before the
rewrite), read with ``git show`` into a module of its own (in a folder under the
temporary directory, so numba caches it between runs); *new* is the working tree's.
Both run in one process on the same arguments.

Measured on the root of :func:`planner.study.families.benchmark_domain` domains
(seed 1) for each case of :data:`CASES`:

- ``ns_per_node``: the best of repeated, alternated searches (old, new, old, ...) in one
  process, wall and CPU time divided by the nodes expanded (the same count for both
  kernels); on a loaded machine read the ratio, not the absolute figure;
- ``instr_per_node``: instructions executed by one warmed search divided by its nodes,
  counted by ``valgrind --tool=callgrind`` (this script re-runs itself under valgrind
  and brackets each search with callgrind client requests from a tiny C helper
  compiled with ``gcc``; instruction counts do not depend on the machine's load). The
  count includes the Python wrapper of one call (a few thousand instructions);
- ``refcounts_per_node``: calls of numba's ``NRT_incref`` and ``NRT_decref`` in one
  warmed search divided by its nodes, counted with ``NUMBA_DEBUG_NRT=1`` (numba then
  prints every call; kernels compiled into an empty ``NUMBA_CACHE_DIR``); includes the
  calls made once per kernel call at the Python boundary and, for the new kernel,
  once per table growth.

Then the JIT compile time of each kernel in a fresh process with an empty
``NUMBA_CACHE_DIR`` (first search minus second search), and the load time with the
cache that run wrote.

The check compares, field by field and bit for bit (``repr`` of floats, bytes of
arrays): value, risk, expected, q, depth, nodes, hits, entries, pruned, tree_nodes,
the cap (raised or not, and its numbers), :func:`lookahead.search.plan_from` for every
root candidate, and :func:`lookahead.search.lookup` at every node of the searched DAG
(up to a limit per search, at the right remaining depth and at a wrong one): on random
domains drawn by ``tests/strategies.py`` (with and without AND/OR preconditions), at
the root and below it, depths 0-4, each combination of ``prune`` and ``memo``; and on
``benchmark_domain`` at several sizes and depths 1-4.
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import importlib
import os
import pickle
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

#: The commit whose lookahead/search.py is the "old" kernel.
OLD_REV = "616d9416f5d07f46e07e9db7f7a2fd94a06b1267"
#: (observations, joint states, depth) measured at the root of benchmark_domain(..., seed=SEED).
CASES = ((16, 8, 3), (16, 8, 4), (32, 8, 3), (16, 64, 3), (32, 8, 4))
SEED = 1
BIG = 10**9  # node cap for the measured searches (none of them comes near it)

COLUMNS = ["n_obs", "n_states", "depth", "nodes", "hits", "leaf_share", "old_ns_per_node", "new_ns_per_node",
           "old_cpu_ns_per_node", "new_cpu_ns_per_node", "speedup", "old_instr_per_node", "new_instr_per_node",
           "instr_ratio", "old_refcounts_per_node", "new_refcounts_per_node"]


# --------------------------------------------------------------------------
# the two kernels


def old_module(rev: str = OLD_REV):
    """lookahead/search.py at `rev`, imported as a module of its own (cached by numba under the temp folder)."""
    folder = Path(tempfile.gettempdir()) / "evidence-planner-kernel-old" / rev[:12]
    name = f"old_search_{rev[:12]}"
    path = folder / f"{name}.py"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        src = subprocess.run(["git", "show", f"{rev}:lookahead/search.py"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout
        path.write_text(src, encoding="utf-8")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return importlib.import_module(name)


def new_module():
    import lookahead.jit
    import lookahead.search
    lookahead.jit.ensure_compiled(["lookahead.search"])  # the compiled tier (small searches would run in Python)
    return lookahead.search


def root_args(n_obs: int, n_states: int, depth: int, seed: int = SEED):
    """The positional arguments of ``expectimax`` at the root of a benchmark domain."""
    import planner
    from planner.model.domain import Domain
    from planner.generators import benchmark_domain

    node = planner.Session(Domain.from_dict(benchmark_domain(n_obs, n_states, seed=seed))).node
    return node_args(node, depth)


def node_args(node, depth):
    c = node.compiled
    return (node.belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted, depth, c.lik,
            c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, c.n_values)


# --------------------------------------------------------------------------
# the bit-identity check


def _bits(x) -> bytes:
    return np.ascontiguousarray(np.asarray(x, dtype=np.float64)).tobytes()


def _run(mod, args, **kw):
    try:
        return mod.expectimax(*args, **kw)
    except mod.SearchCapExceeded as e:
        return ("cap", e.cap, e.depth)


def _dag_pairs(node, depth, limit):
    """Pair sets of the nodes below `node` within `depth` steps (eligible moves, outcomes of positive probability)."""
    out = [((), node)]
    frontier = [((), node)]
    seen = {()}
    for _ in range(depth):
        nxt = []
        for pairs, n in frontier:
            c = n.compiled
            for o in np.flatnonzero(n.eligible):
                p = n.outcome_probs(int(o))
                for y in range(int(c.n_outcomes[o])):
                    if p[y] <= 0.0:
                        continue
                    key = tuple(sorted(pairs + ((int(o), y),)))
                    if key in seen:
                        continue
                    seen.add(key)
                    ch = n.child(int(o), y)
                    out.append((key, ch))
                    nxt.append((key, ch))
                    if len(out) >= limit:
                        return out
        frontier = nxt
    return out


def compare(old, new, node, depth, *, prune=True, memo=True, max_nodes=BIG, dag_limit=200, counts=None) -> list:
    """Differences between the two kernels' results at `node` (an empty list: bit-identical).

    `counts` (a dict), when given, counts the plans and look-ups compared.
    """
    counts = {} if counts is None else counts
    args = node_args(node, depth)
    a = _run(old, args, prune=prune, memo=memo, max_nodes=max_nodes)
    b = _run(new, args, prune=prune, memo=memo, max_nodes=max_nodes)
    capped_a, capped_b = type(a) is tuple, type(b) is tuple  # a SearchResult is a NamedTuple, not a tuple
    if capped_a or capped_b:
        return [] if (capped_a and capped_b and a == b) else [("cap", a if capped_a else "no cap",
                                                               b if capped_b else "no cap")]
    diffs = []
    for f in ("value", "risk", "tree_nodes"):
        if repr(getattr(a, f)) != repr(getattr(b, f)):
            diffs.append((f, getattr(a, f), getattr(b, f)))
    for f in ("depth", "nodes", "hits", "entries", "pruned"):
        if getattr(a, f) != getattr(b, f):
            diffs.append((f, getattr(a, f), getattr(b, f)))
    for f in ("expected", "q"):
        if _bits(getattr(a, f)) != _bits(getattr(b, f)):
            diffs.append((f, getattr(a, f), getattr(b, f)))
    c = node.compiled
    for o in np.flatnonzero(node.eligible):
        pa = old.plan_from(a, int(o), node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts, c.penalty)
        pb = new.plan_from(b, int(o), node.belief, node.outcome_of, c.lik, c.n_outcomes, c.loss, c.facts, c.penalty)
        if repr(pa) != repr(pb):
            diffs.append(("plan_from", int(o), pa, pb))
        counts["plans"] = counts.get("plans", 0) + 1
    for pairs, _ in _dag_pairs(node, a.depth, dag_limit):
        for remaining in (a.depth - len(pairs), a.depth - len(pairs) + 1):
            la, lb = old.lookup(a, pairs, remaining), new.lookup(b, pairs, remaining)
            if repr(la) != repr(lb):
                diffs.append(("lookup", pairs, remaining, la, lb))
            counts["lookups"] = counts.get("lookups", 0) + 1
    return diffs


def check(quick: bool = False) -> dict:
    """Run the bit-identity check; returns the counts (raises AssertionError on the first difference)."""
    import planner
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from planner.model.domain import Domain
    from planner.generators import benchmark_domain

    sys.path.append(str(ROOT / "tests"))  # appended: tests/planner must not shadow planner
    from strategies import domain_dicts

    old, new = old_module(), new_module()
    counts = {"random searches": 0, "benchmark searches": 0, "plans": 0, "lookups": 0}

    def one(node, depth, **kw):
        diffs = compare(old, new, node, depth, counts=counts, **kw)
        assert not diffs, (node.outcome_of.tolist(), depth, kw, [str(d)[:300] for d in diffs[:3]])

    n_random = 60 if quick else 400
    for rich in (False, True):
        @settings(max_examples=n_random, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(raw=domain_dicts(rich_preconditions=rich), seed=st.integers(0, 2**16), steps=st.integers(0, 2),
               depth=st.integers(0, 4), entitled=st.booleans(), tight=st.booleans())
        def random_case(raw, seed, steps, depth, entitled, tight):
            if tight:
                raw["budget"]["limits"] = {"calls": 2.0, "latency": 160.0}
            s = planner.Session(Domain.from_dict(raw),
                                caller=planner.Caller(entitlements=["secret.read"] if entitled else []))
            node = s.node
            rng = np.random.default_rng(seed)
            for _ in range(steps):
                moves = [(int(o), y) for o in np.flatnonzero(node.eligible)
                         for y, p in enumerate(node.outcome_probs(int(o))) if p > 0]
                if not moves:
                    break
                node = node.child(*moves[int(rng.integers(len(moves)))])
            for prune in (False, True):
                for memo in (False, True):
                    one(node, depth, prune=prune, memo=memo)
                    counts["random searches"] += 1
            # the cap: both kernels stop (or not) on the same count
            for cap in (1, 5, 40):
                one(node, depth, max_nodes=cap, dag_limit=0)
            # full depth, as the study's exact optimum searches
            one(node, int((node.outcome_of < 0).sum()), dag_limit=400)
            counts["random searches"] += 4

        random_case()

    sizes = ((8, 4), (8, 8), (12, 8), (16, 4)) if quick else ((8, 4), (8, 8), (12, 8), (16, 4), (16, 8), (16, 16),
                                                                (24, 8), (32, 4))
    seeds = (1, 2) if quick else (1, 2, 3)
    for n_obs, n_states in sizes:
        for seed in seeds:
            d = benchmark_domain(n_obs, n_states, seed=seed)
            node = planner.Session(Domain.from_dict(d)).node
            below = None
            for o in np.flatnonzero(node.eligible):
                p = node.outcome_probs(int(o))
                y = int(np.argmax(p))
                below = node.child(int(o), y)
                break
            for depth in (1, 2, 3, 4):
                if depth == 4 and n_obs > 16:
                    continue
                for n in (node,) if below is None else (node, below):
                    one(n, depth, dag_limit=300)
                    counts["benchmark searches"] += 1
                one(node, depth, prune=False, dag_limit=50)
                counts["benchmark searches"] += 1
    return counts


# --------------------------------------------------------------------------
# measurements


def _timed_pair(fns, *, rounds: int, min_total: float = 1.0):
    """Best wall and CPU seconds of each function, the calls alternated (a, b, a, b, ...)."""
    wall = [np.inf] * len(fns)
    cpu = [np.inf] * len(fns)
    start = time.perf_counter()
    k = 0
    while k < rounds or (time.perf_counter() - start < min_total and k < 50 * rounds):
        for i, fn in enumerate(fns):
            w, c = time.perf_counter(), time.process_time()
            fn()
            cpu[i] = min(cpu[i], time.process_time() - c)
            wall[i] = min(wall[i], time.perf_counter() - w)
        k += 1
    return wall, cpu


def measure_times(cases, rounds: int) -> dict:
    old, new = old_module(), new_module()
    out = {}
    for n_obs, n_states, depth in cases:
        args = root_args(n_obs, n_states, depth)
        a = old.expectimax(*args, max_nodes=BIG)
        b = new.expectimax(*args, max_nodes=BIG)
        assert (a.nodes, a.hits, repr(a.value)) == (b.nodes, b.hits, repr(b.value))
        wall, cpu = _timed_pair([lambda: old.expectimax(*args, max_nodes=BIG),
                                 lambda: new.expectimax(*args, max_nodes=BIG)], rounds=rounds)
        node_tab, leaf_tab = b.table
        out[(n_obs, n_states, depth)] = {
            "nodes": b.nodes, "hits": b.hits,
            "leaf_share": float((leaf_tab["key"] != 0).sum()) / b.nodes,
            "old_ns_per_node": wall[0] / a.nodes * 1e9, "new_ns_per_node": wall[1] / b.nodes * 1e9,
            "old_cpu_ns_per_node": cpu[0] / a.nodes * 1e9, "new_cpu_ns_per_node": cpu[1] / b.nodes * 1e9,
            "speedup": wall[0] / wall[1],
        }
        print(f"  {n_obs} x {n_states} depth {depth}: {b.nodes} nodes, old {out[(n_obs, n_states, depth)]['old_ns_per_node']:.0f}"
              f" ns/node, new {out[(n_obs, n_states, depth)]['new_ns_per_node']:.0f} ns/node", flush=True)
    return out


_CG_C = r"""
#include <valgrind/callgrind.h>
void cg_start(void) { CALLGRIND_START_INSTRUMENTATION; }
void cg_zero(void) { CALLGRIND_ZERO_STATS; }
void cg_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""


def _child_searches(argfile: str, mode: str, lib: str | None):
    """In a child process: warm both kernels on every case, then run each once more between markers."""
    cases = pickle.loads(Path(argfile).read_bytes())
    mods = (("old", old_module()), ("new", new_module()))
    for args in cases.values():
        for _, m in mods:
            m.expectimax(*args, max_nodes=BIG)
    libc = ctypes.CDLL(None)
    cg = ctypes.CDLL(lib) if lib else None
    if cg is not None:
        cg.cg_start()
    for key, args in cases.items():
        for name, m in mods:
            m.expectimax(*args, max_nodes=BIG)  # instrumented code warm too
            label = f"{name}:{key[0]}x{key[1]}x{key[2]}"
            if cg is not None:
                cg.cg_zero()
                res = m.expectimax(*args, max_nodes=BIG)
                cg.cg_dump(f"{label} {res.nodes}".encode())
            else:
                sys.stdout.flush()
                libc.fflush(None)
                os.write(1, f"@@BEGIN {label}\n".encode())
                res = m.expectimax(*args, max_nodes=BIG)
                sys.stdout.flush()
                libc.fflush(None)
                os.write(1, f"@@END {label} {res.nodes}\n".encode())


def _argfile(cases, folder: Path) -> Path:
    path = folder / "cases.pkl"
    path.write_bytes(pickle.dumps({c: root_args(*c) for c in cases}))
    return path


def measure_instructions(cases) -> dict | str:
    """``{(case, kernel): instructions per node}`` by callgrind, or the reason it could not run."""
    if not (shutil.which("valgrind") and shutil.which("gcc") and Path("/usr/include/valgrind/callgrind.h").exists()):
        return "valgrind, gcc or valgrind/callgrind.h missing"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "cg.c").write_text(_CG_C)
        subprocess.run(["gcc", "-O1", "-shared", "-fPIC", "-o", str(tmp / "libcg.so"), str(tmp / "cg.c")], check=True)
        argfile = _argfile(cases, tmp)
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={tmp}/cg.%p",
               sys.executable, __file__, "_child", "--argfile", str(argfile), "--lib", str(tmp / "libcg.so")]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        if proc.returncode != 0:
            return f"valgrind failed: {proc.stderr[-500:]}"
        out = {}
        for f in tmp.glob("cg.*.*"):
            text = f.read_text(errors="replace")
            m = re.search(r"^desc: Trigger: Client Request: (\S+) (\d+)$", text, re.M)
            t = re.search(r"^totals: (\d+)", text, re.M)
            if m and t:
                name, case = m.group(1).split(":")
                key = tuple(int(x) for x in case.split("x"))
                out[(key, name)] = int(t.group(1)) / int(m.group(2))
        return out


def measure_refcounts(cases) -> dict:
    """``{(case, kernel): NRT_incref + NRT_decref calls per node}`` (NUMBA_DEBUG_NRT=1, fresh cache)."""
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        argfile = _argfile(cases, tmp)
        env = dict(os.environ, NUMBA_DEBUG_NRT="1", NUMBA_CACHE_DIR=str(tmp / "cache"))
        out_path = tmp / "nrt.txt"
        with out_path.open("w") as fh:
            subprocess.run([sys.executable, __file__, "_child", "--argfile", str(argfile)], stdout=fh, env=env,
                           check=True, cwd=ROOT)
        out = {}
        label, count = None, 0
        with out_path.open() as fh:
            for line in fh:
                if line.startswith("@@BEGIN"):
                    label, count = line.split()[1], 0
                elif line.startswith("@@END"):
                    _, lab, nodes = line.split()
                    name, case = lab.split(":")
                    out[(tuple(int(x) for x in case.split("x")), name)] = count / int(nodes)
                    label = None
                elif label is not None and ("NRT_Incref" in line or "NRT_Decref" in line):
                    count += 1
        return out


_COMPILE_CHILD = r"""
import pickle, sys, time
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
import bench_kernel
mod = bench_kernel.old_module() if {which!r} == "old" else bench_kernel.new_module()
args = pickle.loads(open({argfile!r}, "rb").read())
t0, c0 = time.perf_counter(), time.process_time()
mod.expectimax(*args)
t1, c1 = time.perf_counter(), time.process_time()
mod.expectimax(*args)
t2, c2 = time.perf_counter(), time.process_time()
print(t1 - t0, c1 - c0, t2 - t1, c2 - c1)
"""


def measure_compile() -> dict:
    """``{kernel: (compile wall s, compile CPU s, cached load wall s)}``: first search minus second, fresh cache."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        argfile = tmp / "args.pkl"
        argfile.write_bytes(pickle.dumps(root_args(8, 8, 2)))
        for which in ("old", "new"):
            cache = tmp / f"cache-{which}"
            env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
            env.pop("NUMBA_DEBUG_NRT", None)
            code = _COMPILE_CHILD.format(root=str(ROOT), bench=str(HERE), which=which, argfile=str(argfile))
            runs = []
            for _ in range(2):  # the first compiles into the empty cache, the second loads from it
                line = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True,
                                      text=True, cwd=ROOT).stdout.split()
                w1, c1, w2, c2 = map(float, line)
                runs.append((w1 - w2, c1 - c2))
            out[which] = (runs[0][0], runs[0][1], runs[1][0])
    return out


# --------------------------------------------------------------------------
# the report


def _fmt(x, nd=0):
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "-"
    if isinstance(x, float):
        return f"{x:,.{nd}f}"
    return f"{x:,}"


def write_results(rows, compile_times, instr_note, out_dir: Path, command: str, load: str):
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "kernel.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{r[k]:.6g}" if isinstance(r.get(k), float) else r.get(k)) for k in COLUMNS})
    L = ["# The expectimax kernel before and after the rewrite (issue 11, item 5)", ""]
    L.append(f"Command: `{command}`. Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}, numba {__import__('numba').__version__}; load average at the start: "
             f"{load}. Old: `lookahead/search.py` at {OLD_REV[:10]}; new: the working tree.")
    L.append("")
    L.append("Each case is the root of `benchmark_domain(n_obs, n_states, seed=1)`; both kernels expand the same "
             "nodes and return bit-identical results (the check below).")
    L.append("")
    L.append("| obs x states, depth | nodes | leaves | old ns/node | new ns/node | speed-up | old instr/node | "
             "new instr/node | instr ratio | old refcounts/node | new refcounts/node |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        L.append(f"| {r['n_obs']} x {r['n_states']}, {r['depth']} | {r['nodes']:,} | {r['leaf_share']:.0%} | "
                 f"{_fmt(r['old_ns_per_node'])} | {_fmt(r['new_ns_per_node'])} | {_fmt(r['speedup'], 2)}x | "
                 f"{_fmt(r.get('old_instr_per_node'))} | {_fmt(r.get('new_instr_per_node'))} | "
                 f"{_fmt(r.get('instr_ratio'), 2)}x | {_fmt(r.get('old_refcounts_per_node'), 1)} | "
                 f"{_fmt(r.get('new_refcounts_per_node'), 2)} |")
    L.append("")
    L.append("Columns: `ns/node` best wall time of one warmed search over alternated repeats in one process, "
             "divided by the nodes expanded (CPU time per node in the CSV); `speed-up` old time / new time; "
             "`instr/node` instructions of one warmed search (callgrind; the Python wrapper of the call "
             "included); `refcounts/node` calls of `NRT_incref` + `NRT_decref` in one warmed search "
             "(`NUMBA_DEBUG_NRT=1`), the ones made once per call (argument boxing) and, in the new kernel, "
             "once per table growth included; `leaves` the share of expanded nodes that are leaves "
             "(remaining depth 0), which the new kernel evaluates inside their parent.")
    if instr_note:
        L.append("")
        L.append(f"Instruction counts: not measured ({instr_note}).")
    if compile_times:
        L.append("")
        L.append("JIT compile time of the kernel (a fresh process with an empty `NUMBA_CACHE_DIR`: the first "
                 "search minus the second, on 8 x 8 at depth 2), and the time to load it from the cache that "
                 "run wrote:")
        L.append("")
        L.append("| kernel | compile wall s | compile CPU s | cached load wall s |")
        L.append("|---|---:|---:|---:|")
        for k, (w, c, lw) in compile_times.items():
            L.append(f"| {k} | {w:.2f} | {c:.2f} | {lw:.3f} |")
    L.append("")
    (out_dir / "kernel.md").write_text("\n".join(L) + "\n", encoding="utf-8")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", nargs="?", default="all", choices=["all", "check", "measure", "_child"])
    p.add_argument("--quick", action="store_true", help="a smaller check and fewer timing rounds")
    p.add_argument("--rounds", type=int, default=7, help="alternated timing rounds per case (at least)")
    p.add_argument("--out", type=Path, default=HERE / "results", help="folder for kernel.md and kernel.csv")
    p.add_argument("--no-valgrind", action="store_true", help="skip the instruction counts")
    p.add_argument("--argfile")
    p.add_argument("--lib")
    a = p.parse_args(argv)
    if a.what == "_child":
        _child_searches(a.argfile, "cg" if a.lib else "nrt", a.lib)
        return 0
    if a.what in ("all", "check"):
        t = time.perf_counter()
        counts = check(quick=a.quick)
        print(f"bit-identity check: no difference ({', '.join(f'{v} {k}' for k, v in counts.items())}; "
              f"{time.perf_counter() - t:.0f} s)", flush=True)
    if a.what in ("all", "measure"):
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        cases = CASES
        print("timing ...", flush=True)
        times = measure_times(cases, rounds=3 if a.quick else a.rounds)
        print("refcounts ...", flush=True)
        refs = measure_refcounts(cases)
        instr, note = {}, None
        if not a.no_valgrind:
            print("instructions (callgrind; several minutes) ...", flush=True)
            got = measure_instructions(cases)
            if isinstance(got, str):
                note = got
            else:
                instr = got
        else:
            note = "--no-valgrind"
        print("compile time ...", flush=True)
        comp = measure_compile()
        rows = []
        for c in cases:
            r = {"n_obs": c[0], "n_states": c[1], "depth": c[2], **times[c]}
            r["old_refcounts_per_node"] = refs.get((c, "old"))
            r["new_refcounts_per_node"] = refs.get((c, "new"))
            r["old_instr_per_node"] = instr.get((c, "old"))
            r["new_instr_per_node"] = instr.get((c, "new"))
            if r["old_instr_per_node"] and r["new_instr_per_node"]:
                r["instr_ratio"] = r["old_instr_per_node"] / r["new_instr_per_node"]
            rows.append(r)
        command = "python3 bench/bench_kernel.py" + (" " + " ".join(argv if argv is not None else sys.argv[1:])
                                                     ).rstrip()
        write_results(rows, comp, note, a.out, command.strip(), load)
        print((a.out / "kernel.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
