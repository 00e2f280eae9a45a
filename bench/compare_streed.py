"""The planner against STreeD's optimal cost-sensitive decision trees (issue 11).

Usage (from the repository root; pystreed is the optional ``compare`` extra)::

    pip install pystreed                                # or: pip install -e .[compare]
    python3 bench/compare_streed.py                     # writes bench/results/streed/table.{md,csv}
    python3 bench/compare_streed.py --quick             # depth 1-2 and unlimited on two datasets, prints only
    python3 bench/compare_streed.py --extract DIR       # rebuild bench/results/streed/inputs/ from
                                                        # a pystreed checkout's data/cost-sensitive

The problem
-----------
STreeD (van der Linden, Demirovic, de Weerdt) finds optimal cost-sensitive
decision trees: a tree tests binary features; a row pays the test cost of every
test on its path and the misclassification cost ``M[true][predicted]`` of its
leaf; the objective is the total over the training rows. Its repository ships
the Lomax (2013) cost suite over UCI datasets (``data/cost-sensitive/NAME``:
``NAME-train-K.csv``, rows ``label b1 b2 ...`` of binary features, and
``NAME-{low,middle,high}-costs.csv``: the matrix, then one line per original
attribute with its test cost, discount, discount group and binary columns).
The wheel does not contain the data, so the rows and costs used here are
vendored in ``bench/results/streed/inputs/NAME.json`` (CC BY 4.0, UCI; costs
from Lomax 2013; attribution in each file), written by ``--extract``.

The mapping (:func:`domain_dict`)
---------------------------------
- propositions: one per selected binary feature (values ``v0``, ``v1``) and
  ``label`` (values ``c0``...); the prior is the empirical joint of the rows
  (``p = count / N`` per distinct (features, label) row);
- one observation per feature, ``inform``, revealing it exactly (likelihood 1/0),
  cost ``{cost: c}`` in one budget dimension with weight 1 and no limit, so its
  penalty is the test cost;
- one action per class, ``predict_cK``, loss ``M[true][K]``, none gated.

Then the planner's V_d at the root (at most d acquisitions on any branch) is
the optimum of STreeD's objective over trees of depth <= d, divided by N
(a depth-d tree tests at most d features on any branch). Unlimited depth is
``BoundedSearch(...).plan(root, tol_abs=0, tol_rel=0, budget=huge)`` against
STreeD with ``max_depth`` = the number of features (no branch can usefully test
more).

Two simplifications, the same for both solvers, so the optimum is one number:

- *Test costs per binary feature.* Lomax's costs are per attribute: a second
  binary column of an attribute already tested is free, and an attribute in a
  discount group costs its discount once another member was tested. A fixed
  penalty per observation cannot say "free after another test", so every binary
  column is its own test at its attribute's full cost, and STreeD gets the same
  costs through ``CostSpecifier(M, [FeatureCostSpecifier(c, c, unique group, j, j)])``.
- *At most 4,096 joint states.* The planner's belief is dense over all
  ``2^F x C`` states (not the N rows), so a node costs O(2^F C) and the
  bounded search keeps ``8 x 2^F C`` bytes of belief per node. ``--extract``
  keeps the first F columns (file order: cheapest attributes first) that are
  not constant and not equal to, or the complement of, a column kept, with
  ``2^F C <= 4096`` (the issue's 11-test, 4,096-state case is diabetes, all
  11 columns). The loader's own cap (``planner.loader.MAX_JOINT_STATES``) is
  checked too and the table says where a dataset was cut.

Rows come from split 1 (``NAME-train-1.csv``, as pystreed's example), costs from
the ``middle`` file (as the example).

Solvers and timing
------------------
- ``ours``: depth d: :func:`lookahead.search.expectimax` at the root, called as
  ``lookahead:d`` calls it (``planner/policies/lookahead.py``), with an explicit
  node cap; unlimited: a fresh :class:`lookahead.bounded.BoundedSearch` and
  ``plan(tol_abs=0, tol_rel=0)``. The domain is loaded and compiled once
  outside the timing (``load_ms`` reports it).
- ``streed``: a fresh ``STreeDCostSensitiveClassifier(max_depth=d)`` and
  ``fit`` (a fresh object each time: pystreed keeps its branch cache across
  fits of one object). Its value is the tree's cost computed here by walking
  every row through the returned tree (exact, independent of STreeD's
  normalised ``score``), which is also checked against the score.
- ``python``: :func:`python_solve`, plain Python memoising on the set of
  distinct rows still consistent (a bitmask) and the depth left.

In process: CPU time (``time.process_time``) of one solve, best of ``--repeats``
(3) after one warm-up run, all in this process. Whole process: a subprocess
running this script with ``--one SOLVER`` (imports, reading the inputs, building
and compiling the domain, numba loading its on-disk cache, one solve), its CPU
time (user + system, from ``getrusage(RUSAGE_CHILDREN)``), best of ``--repeats``
after one warm-up process that fills numba's cache (a timed process that had
to compile is an error: it would time the compiler). The machine is shared, so
only ratios measured moments apart in one run are reported as results; the
wall times are in the CSV.

The script measures the planner of the tree it lives in (it puts that tree
first on ``sys.path``, whatever an editable install points at), and so do its
child processes. ``--versus DIR`` times another checkout's kernels (``DIR``
first on the path of its children, e.g. ``/work/main``) against this tree's,
side by side: each tree's solver in its own child process, its first solve
reported apart, then each repeat on a freshly built domain and root with no
cached keys (nothing reused that a fresh call would not have), and whole
processes of the two trees alternately; ``--name`` names the output files,
so a subset never overwrites the full table.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "streed"
INPUTS = OUT / "inputs"

#: The datasets compared by default, each at the cost levels LEVELS_RUN.
DATASETS = ("diabetes", "breast", "heart", "hepatitis", "car", "wine")
#: The cost files of the suite (they differ in the misclassification matrix only).
LEVELS = ("low", "middle", "high")
#: The levels compared by default: ``middle`` (pystreed's example) and ``high`` (deeper optimal trees).
LEVELS_RUN = ("middle", "high")
#: Depths compared; None: unlimited.
DEPTHS = (1, 2, 3, 4, None)
#: The kernel modules the solvers run, switched to the compiled tier by name (see :func:`ours_solve`).
KERNEL_MODULES = ("lookahead.core", "lookahead.search", "lookahead.bounded")
#: The joint-state budget of the mapping (see the module docstring).
MAX_STATES = 4096
#: The pystreed commit the vendored inputs were read from (set by --extract).
SOURCE_REPO = "https://github.com/AlgTUDelft/pystreed"
ATTRIBUTION = ("Rows: UCI Machine Learning Repository (Dua and Graff 2019), CC BY 4.0, in the versions of "
               "Lomax (2013) as shipped in pystreed's data/cost-sensitive; test and misclassification costs: "
               "Lomax, S. (2013), Cost-sensitive decision tree learning using a multi-armed bandit framework, "
               "PhD thesis, University of Salford.")


# --------------------------------------------------------------------------
# the data


def read_cost_file(path):
    """``(M, attributes)`` from a Lomax cost file: M[true][pred], and (name, cost, discount, group, begin, end)."""
    lines = [ln.split() for ln in Path(path).read_text().splitlines() if ln.strip()]
    header = next(i for i, ln in enumerate(lines) if ln[0] == "Attribute-name")
    matrix = [[float(v) for v in ln] for ln in lines[:header]]
    attrs = [(ln[0], float(ln[1]), float(ln[2]), ln[3], int(ln[4]), int(ln[5])) for ln in lines[header + 1:]]
    return matrix, attrs


def extract(data_dir, name, *, split=1, max_states=MAX_STATES, commit=None) -> dict:
    """Read one dataset of the suite and select its columns (module docstring): the vendored input dict.

    The three cost files of a dataset differ only in the misclassification matrix (checked), so
    one input holds the rows, the selected columns' test costs and the three matrices.
    """
    d = Path(data_dir) / name
    raw = np.loadtxt(d / f"{name}-train-{split}.csv", dtype=np.int64, ndmin=2)
    y, X = raw[:, 0], raw[:, 1:]
    matrices, attrs = {}, None
    for level in LEVELS:
        matrices[level], a = read_cost_file(d / f"{name}-{level}-costs.csv")
        if attrs is not None and a != attrs:
            raise ValueError(f"{name}: the {level} cost file has other test costs")
        attrs = a
    C = len(matrices[LEVELS[0]])
    col_attr = {}
    for a in attrs:
        for j in range(a[4], a[5] + 1):
            col_attr[j] = a
    f_max = int(math.floor(math.log2(max_states / C)))
    keep, seen = [], set()
    for j in range(X.shape[1]):
        col = X[:, j]
        if len(keep) == f_max:
            break
        if col.min() == col.max() or col.tobytes() in seen or (1 - col).tobytes() in seen:
            continue  # a test that never splits, or the same split as a column kept
        seen.add(col.tobytes())
        keep.append(j)
    usable = sum(1 for j in range(X.shape[1]) if X[:, j].min() != X[:, j].max())
    return {
        "name": name,
        "source": {"repo": SOURCE_REPO, "commit": commit,
                   "rows": f"data/cost-sensitive/{name}/{name}-train-{split}.csv",
                   "costs": [f"data/cost-sensitive/{name}/{name}-{lv}-costs.csv" for lv in LEVELS]},
        "attribution": ATTRIBUTION,
        "binary_columns": int(X.shape[1]),
        "non_constant_columns": int(usable),
        "columns": [int(j) for j in keep],
        "feature_names": [f"{col_attr[j][0]}_{j - col_attr[j][4]}" for j in keep],
        "costs": [col_attr[j][1] for j in keep],
        "matrices": matrices,
        "labels": [int(v) for v in y],
        "rows": [[int(v) for v in X[i, keep]] for i in range(X.shape[0])],
    }


def load_case(name, level) -> dict:
    """The vendored input of dataset `name` with the misclassification matrix of cost level `level`."""
    ds = json.loads((INPUTS / f"{name}.json").read_text())
    ds["level"] = level
    ds["matrix"] = ds["matrices"][level]
    return ds


def _names(ds):
    F = len(ds["costs"])
    safe = ["".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in n) for n in ds["feature_names"]]
    props = [f"x{k:02d}_{safe[k]}" for k in range(F)]
    return props, [f"test_{p}" for p in props]


def domain_dict(ds) -> dict:
    """The planner domain of a dataset (module docstring): features and label as propositions, a test per feature."""
    rows, labels, costs, M = ds["rows"], ds["labels"], ds["costs"], ds["matrix"]
    C = len(M)
    props, obs = _names(ds)
    world = {p: {"values": ["v0", "v1"]} for p in props}
    world["label"] = {"values": [f"c{k}" for k in range(C)]}
    counts = Counter((tuple(r), int(c)) for r, c in zip(rows, labels))
    N = len(rows)
    joint = [{"state": {**{p: f"v{b}" for p, b in zip(props, x)}, "label": f"c{c}"}, "p": n / N}
             for (x, c), n in sorted(counts.items())]
    # a zero cost is left out (the loader counts a cost's amount, not its mention, when it looks for budget
    # dimensions named only once), and without any cost there is no budget at all
    observations = {
        o: {"role": "inform", "bears_on": p, "likelihood": {"v0": {"v0": 1.0}, "v1": {"v1": 1.0}},
            "outcomes": ["v0", "v1"], **({"cost": {"cost": float(c)}} if c > 0 else {})}
        for o, p, c in zip(obs, props, costs)
    }
    actions = {f"predict_c{k}": {"loss": {"label": {f"c{j}": float(M[j][k]) for j in range(C)}}} for k in range(C)}
    name = ds["name"] + (f"_{ds['level']}" if ds.get("level") else "")
    out = {"domain": f"streed_{name}",
           "description": f"STreeD cost-sensitive tree problem {name} mapped to acquisition (bench/compare_streed.py)",
           "world": world, "prior": {"joint": joint}, "actions": actions, "observations": observations}
    if any(c > 0 for c in costs):
        out["budget"] = {"weights": {"cost": 1.0}}
    return out


def n_states(ds) -> int:
    return (2 ** len(ds["costs"])) * len(ds["matrix"])


def full_information_bound(ds) -> float:
    """The expected misclassification cost if every feature were known for free (an admissible lower bound on V*).

    States with the same features are indistinguishable by any test, so any plan's action is the same for all
    of them: sum over feature vectors x of ``min_k sum_j P(x, j) M[j][k]``.
    """
    N, M = len(ds["rows"]), ds["matrix"]
    C = len(M)
    mass = {}
    for x, y in zip(ds["rows"], ds["labels"]):
        mass.setdefault(tuple(x), [0.0] * C)[y] += 1.0 / N
    return sum(min(sum(m[j] * M[j][k] for j in range(C)) for k in range(C)) for m in mass.values())


# --------------------------------------------------------------------------
# the planner


def ours_setup(ds):
    """``(compiled, root node)`` of the mapped domain (loaded with ``Domain.from_dict``)."""
    from planner.gates.admission import admit
    from planner.compile import compile_domain
    from planner.model.domain import Domain
    from planner.node import root_node

    c = compile_domain(Domain.from_dict(domain_dict(ds)))
    return c, root_node(c, admit(c))


def bounded_search(c, n):
    """A fresh :class:`lookahead.bounded.BoundedSearch` for the root `n`."""
    from lookahead.bounded import BoundedSearch

    return BoundedSearch(c.prior, c.lik, c.n_outcomes, c.loss, c.cost, c.limits, c.penalty, n.admission.admitted,
                         c.facts)


def ours_solve(c, n, depth, *, stats=None):
    """The planner's value at the root: ``lookahead:depth`` (expectimax), or BoundedSearch when depth is None."""
    from lookahead.jit import ensure_compiled

    # the compiled tier (a policy would choose it too: these searches are large), named module by module:
    # ensure_compiled() alone switches only the modules imported so far, and where `import planner` is lazy
    # lookahead.bounded is not among them, so the unlimited search ran in the Python tier (40x slower)
    ensure_compiled(KERNEL_MODULES)
    if depth is None:
        from lookahead.bounded import CERTIFIED

        bs = bounded_search(c, n)
        r = bs.plan(n.outcome_of, budget=10 ** 12, tol_abs=0.0, tol_rel=0.0)
        if r.stopped != CERTIFIED or r.lo != r.up:
            raise RuntimeError(f"bounded search did not certify: {r.stopped}, [{r.lo!r}, {r.up!r}]")
        if stats is not None:
            from lookahead.bounded import _graph_bytes

            g = bs.graph
            stats.update(nodes=r.graph_nodes, expansions=r.expansions, merges=r.merges,
                         transpositions=r.transpositions, plan_depth=bs.depth(r.root),
                         graph_mb=_graph_bytes(g) / 1e6, root_lh=float(g.lh[r.root]),
                         pairs=int(g.count[7]), iterations=int(g.count[8]))
        return r.up
    from lookahead.search import expectimax

    res = expectimax(n.belief, n.outcome_of, n.spent, n.eligible, n.admission.admitted, int(depth), c.lik,
                     c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, c.n_values, prune=True,
                     max_nodes=50_000_000)
    if stats is not None:
        stats.update(nodes=res.nodes, hits=res.hits, noops=getattr(res, "noops", ""),
                     certain=getattr(res, "certain", ""))
    return res.value


# --------------------------------------------------------------------------
# STreeD


def streed_spec(ds):
    from pystreed.data import CostSpecifier, FeatureCostSpecifier

    return CostSpecifier([list(map(float, r)) for r in ds["matrix"]],
                         [FeatureCostSpecifier(float(c), float(c), f"g{j}", j, j) for j, c in enumerate(ds["costs"])])


def tree_cost(tree, X, y, costs, M) -> float:
    """STreeD's objective of `tree` over the rows, averaged: test costs on each row's path plus ``M[y][leaf]``."""
    total = 0.0
    for x, lab in zip(X, y):
        node, paid = tree, 0.0
        while node.is_branching_node():
            paid += costs[node.feature]
            node = node.right_child if x[node.feature] == 1 else node.left_child
        total += paid + M[lab][node.label]
    return total / len(y)


def streed_solve(ds, depth, *, stats=None, arrays=None):
    """STreeD's optimum over trees of depth <= `depth` (None: the number of features), as an average per row."""
    from pystreed import STreeDCostSensitiveClassifier

    X, y = arrays if arrays is not None else (np.asarray(ds["rows"], dtype=np.int64),
                                              np.asarray(ds["labels"], dtype=np.int64))
    d = len(ds["costs"]) if depth is None else int(depth)
    model = STreeDCostSensitiveClassifier(max_depth=d, time_limit=3600)
    model.fit(X, y, streed_spec(ds))
    if stats is not None:
        stats.update(optimal=bool(model.fit_result.is_optimal()), tree=model.tree_, score=model.fit_result.score(),
                     tree_depth=int(model.fit_result.tree_depth()))
    return model


def streed_value(ds, model) -> float:
    X, y = np.asarray(ds["rows"]), np.asarray(ds["labels"])
    return tree_cost(model.tree_, X, y, ds["costs"], ds["matrix"])


def streed_score_value(ds, score) -> float:
    """STreeD's normalised training score turned back into an average cost (``ComputeScore`` in cost_sensitive.cpp)."""
    y = np.asarray(ds["labels"])
    M = np.asarray(ds["matrix"], dtype=float)
    biggest = np.bincount(y, minlength=len(M)).max()
    standard = float(sum(ds["costs"])) + (1.0 - biggest / len(y)) * M.max()
    return score * standard


# --------------------------------------------------------------------------
# the plain Python solver


def python_solve(ds, depth) -> float:
    """Optimal expected cost by recursion on the set of distinct rows still consistent (a bitmask), memoised.

    ``V(rows, d) = min(leaf(rows), min_f [c_f P(rows) + V(rows & f=0, d-1) + V(rows & f=1, d-1)])`` over the
    features that split `rows` (a feature constant on `rows`, tested or not, changes nothing); values are
    joint masses (not conditional), so the root's value is the expected cost.
    """
    rows, labels, costs, M = ds["rows"], ds["labels"], ds["costs"], ds["matrix"]
    N, C, F = len(rows), len(M), len(costs)
    cnt = Counter((tuple(r), int(c)) for r, c in zip(rows, labels))
    distinct = sorted({x for x, _ in cnt})
    per = [[cnt.get((x, k), 0) / N for k in range(C)] for x in distinct]
    ones = [sum(1 << i for i, x in enumerate(distinct) if x[f] == 1) for f in range(F)]
    full = (1 << len(distinct)) - 1
    memo = {}
    D = F if depth is None else int(depth)

    def value(mask, d):
        key = (mask, d)
        v = memo.get(key)
        if v is not None:
            return v
        mass = [0.0] * C
        m = mask
        while m:
            low = m & -m
            p = per[low.bit_length() - 1]
            for k in range(C):
                mass[k] += p[k]
            m ^= low
        best = min(sum(mass[j] * M[j][k] for j in range(C)) for k in range(C))
        if d > 0:
            total = sum(mass)
            for f in range(F):
                m1 = mask & ones[f]
                if m1 == 0 or m1 == mask:
                    continue
                q = costs[f] * total + value(mask ^ m1, d - 1)
                if q < best:
                    q += value(m1, d - 1)
                    if q < best:
                        best = q
        memo[key] = best
        return best

    return value(full, D)


# --------------------------------------------------------------------------
# timing


def best_cpu(fn, repeats):
    """``(result, best CPU seconds, best wall seconds)`` over `repeats` runs after one warm-up."""
    out = fn()
    cpu, wall = [], []
    for _ in range(repeats):
        t0, w0 = time.process_time(), time.perf_counter()
        out = fn()
        cpu.append(time.process_time() - t0)
        wall.append(time.perf_counter() - w0)
    return out, min(cpu), min(wall)


def _child(args, code=None):
    """``(last stdout line as JSON, CPU seconds, wall seconds, stderr)`` of this script run as a child on `code`."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--code", str(code or ROOT)] + list(args)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    w = time.perf_counter() - w0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stderr}")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    return out, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), w, p.stderr


def _compiled_in(stderr) -> bool:
    """Did the child compile kernels (rather than load them from numba's cache)? The planner says so on stderr."""
    return "compiling search kernels" in stderr


def whole_process(solver, name, level, depth, repeats, code=None):
    """``(value, best CPU seconds, best wall seconds)`` of a fresh process solving once (after a warm-up process).

    A timed process that had to compile kernels (numba's cache was stale: a source file changed since the
    warm-up) is an error, not a figure: it would time the compiler.
    """
    args = ["--one", solver, "--dataset", name, "--level", level, "--depth", "inf" if depth is None else str(depth)]
    cpu, wall, value = [], [], None
    for i in range(repeats + 1):
        out, c, w, err = _child(args, code)
        value = out["value"]
        if i > 0:
            if _compiled_in(err):
                raise RuntimeError(f"{solver} {name} {level} {depth}: a timed process compiled kernels")
            cpu.append(c)
            wall.append(w)
    return value, min(cpu), min(wall)


def _fresh_state():
    """Drop what a solve leaves cached in the process (the Zobrist keys), so every timed solve starts as a fresh one."""
    from lookahead import search

    clear = getattr(search.zobrist_keys, "cache_clear", None)
    if clear is not None:
        clear()


def time_in_process(name, level, depth, repeats) -> dict:
    """The body of a ``--time`` child: ours in process, honestly.

    The first solve of the process (numba loading its cache included) is reported apart; then each of
    `repeats` solves gets a freshly built domain and root (outside the timing) and no cached keys, so
    nothing a previous solve computed is reused. Returns the value, the first solve's CPU ms, the best
    and median of the repeats, the search's counts and the file the kernels came from.
    """
    import lookahead.search

    ds = load_case(name, level)
    c, n = ours_setup(ds)
    t0 = time.process_time()
    value = ours_solve(c, n, depth)
    first = time.process_time() - t0
    cpus = []
    for _ in range(repeats):
        _fresh_state()
        c, n = ours_setup(ds)
        t0 = time.process_time()
        v = ours_solve(c, n, depth)
        cpus.append(time.process_time() - t0)
        if v != value:
            raise RuntimeError(f"{name} {level} {depth}: a repeat gave {v!r}, the first {value!r}")
    stats = {}
    ours_solve(c, n, depth, stats=stats)
    return {"value": value, "first_ms": 1e3 * first, "best_ms": 1e3 * min(cpus), "median_ms": 1e3 * _median(cpus),
            "stats": stats, "kernels": lookahead.search.__file__}


def run_one(solver, name, level, depth):
    """The body of a ``--one`` process: read, build, solve once, print the value as JSON."""
    ds = load_case(name, level)
    if solver == "ours":
        c, n = ours_setup(ds)
        v = ours_solve(c, n, depth)
    elif solver == "streed":
        v = streed_value(ds, streed_solve(ds, depth))
    elif solver == "python":
        v = python_solve(ds, depth)
    else:
        raise SystemExit(f"unknown solver {solver}")
    print(json.dumps({"value": v}))


# --------------------------------------------------------------------------
# the comparison


def machine_note() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from importlib.metadata import version

    import numba

    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
            f"numba {numba.__version__}, pystreed {version('pystreed')}")


def full_lookahead(c, n):
    """``(value or None, CPU seconds, nodes)`` of ``lookahead:F`` (expectimax to full depth, default node cap)."""
    from lookahead.jit import ensure_compiled
    from lookahead.search import SearchCapExceeded, expectimax

    ensure_compiled(KERNEL_MODULES)
    depth = len(c.obs_names)
    t0 = time.process_time()
    try:
        res = expectimax(n.belief, n.outcome_of, n.spent, n.eligible, n.admission.admitted, depth, c.lik,
                         c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, c.n_values)
    except SearchCapExceeded as e:
        return None, time.process_time() - t0, e.cap
    return res.value, time.process_time() - t0, res.nodes


def compare(cases, depths, repeats, whole_repeats, log=print):
    from planner.io.loader import MAX_JOINT_STATES

    rows = []
    for name, level in cases:
        ds = load_case(name, level)
        S = n_states(ds)
        if S > MAX_JOINT_STATES:
            raise SystemExit(f"{name}: {S} states exceed planner.loader.MAX_JOINT_STATES = {MAX_JOINT_STATES}")
        (c, n), load_cpu, _ = best_cpu(lambda: ours_setup(ds), 1)
        arrays = (np.asarray(ds["rows"], dtype=np.int64), np.asarray(ds["labels"], dtype=np.int64))
        for depth in depths:
            label = "inf" if depth is None else str(depth)
            st_ours, st_streed = {}, {}
            v_ours, cpu_ours, wall_ours = best_cpu(lambda: ours_solve(c, n, depth), repeats)
            ours_solve(c, n, depth, stats=st_ours)
            model, cpu_streed, wall_streed = best_cpu(lambda: streed_solve(ds, depth, arrays=arrays), repeats)
            streed_solve(ds, depth, stats=st_streed, arrays=arrays)
            v_streed = streed_value(ds, model)
            v_score = streed_score_value(ds, st_streed["score"])
            v_py, cpu_py, wall_py = best_cpu(lambda: python_solve(ds, depth), repeats)
            row = {
                "dataset": name, "costs": level, "rows": len(ds["rows"]),
                "distinct_rows": len({tuple(r) + (lab,) for r, lab in zip(ds["rows"], ds["labels"])}),
                "features": len(ds["costs"]), "of_columns": ds["non_constant_columns"], "classes": len(ds["matrix"]),
                "states": S, "depth": label,
                "ours_solver": "BoundedSearch" if depth is None else f"lookahead:{depth}",
                "ours_value": v_ours, "streed_value": v_streed, "python_value": v_py,
                "diff": abs(v_ours - v_streed), "diff_python": abs(v_ours - v_py),
                "diff_streed_score": abs(v_score - v_streed),
                "streed_optimal": st_streed["optimal"], "streed_tree_depth": st_streed["tree_depth"],
                "ours_plan_depth": st_ours.get("plan_depth", ""),
                "ours_ms": 1e3 * cpu_ours, "streed_ms": 1e3 * cpu_streed, "python_ms": 1e3 * cpu_py,
                "ours_wall_ms": 1e3 * wall_ours, "streed_wall_ms": 1e3 * wall_streed, "python_wall_ms": 1e3 * wall_py,
                "ratio": cpu_ours / cpu_streed, "python_ratio": cpu_py / cpu_streed,
                "ours_nodes": st_ours.get("nodes", ""), "ours_expansions": st_ours.get("expansions", ""),
                "merges": st_ours.get("merges", ""), "transpositions": st_ours.get("transpositions", ""),
                "pairs": st_ours.get("pairs", ""), "memo_hits": st_ours.get("hits", ""),
                "graph_mb": st_ours.get("graph_mb", ""), "root_lh": st_ours.get("root_lh", ""),
                "load_ms": 1e3 * load_cpu,
            }
            if row["diff"] > 1e-9:
                # STreeD with its lower bound off (slower): does the reference itself agree?
                m2 = STreeD_variant(ds, depth, arrays, use_lower_bound=False)
                row["streed_nolb_value"] = streed_value(ds, m2)
            if depth is None:
                row["info_bound"] = full_information_bound(ds)
                v_full, cpu_full, nodes_full = full_lookahead(c, n)
                row["full_lookahead_value"] = "cap" if v_full is None else v_full
                row["full_lookahead_ms"] = 1e3 * cpu_full
                row["full_lookahead_nodes"] = nodes_full
            if whole_repeats:
                for solver in ("ours", "streed", "python"):
                    v, cpu, wall = whole_process(solver, name, level, depth, whole_repeats)
                    ref = {"ours": v_ours, "streed": v_streed, "python": v_py}[solver]
                    if abs(v - ref) > 1e-9:
                        raise RuntimeError(f"{solver} {name} {label}: the process gave {v!r}, in process {ref!r}")
                    row[f"{solver}_proc_ms"] = 1e3 * cpu
                    row[f"{solver}_proc_wall_ms"] = 1e3 * wall
                row["ratio_process"] = row["ours_proc_ms"] / row["streed_proc_ms"]
            rows.append(row)
            log(f"{name:9s} {level:6s} d={label:3s} ours {v_ours:.12f} streed {v_streed:.12f} diff {row['diff']:.1e} "
                f"py-diff {row['diff_python']:.1e} | ours {row['ours_ms']:8.1f} ms streed {row['streed_ms']:8.1f} ms "
                f"python {row['python_ms']:8.1f} ms ratio {row['ratio']:6.2f}"
                + (f" | process ratio {row['ratio_process']:.2f}" if whole_repeats else "")
                + (f" | merges {row['merges']} transp {row['transpositions']} nodes {row['ours_nodes']}"
                   if depth is None else ""), flush=True)
    return rows


def versus(cases, depths, repeats, whole_repeats, other, log=print):
    """Ours (this tree's kernels) against `other` (another checkout's, e.g. main's) and STreeD, side by side.

    For each case and depth, moments apart: STreeD in this process (best of `repeats` after a warm-up),
    then each tree's solver in its own child process (:func:`time_in_process`: honest repeats, the
    first solve apart), then whole processes of each tree alternately (a warm-up pair, then
    `whole_repeats` pairs; best CPU). Values must agree to 1e-12 between the trees.
    """
    rows = []
    for name, level in cases:
        ds = load_case(name, level)
        arrays = (np.asarray(ds["rows"], dtype=np.int64), np.asarray(ds["labels"], dtype=np.int64))
        for depth in depths:
            label = "inf" if depth is None else str(depth)
            model, cpu_streed, _ = best_cpu(lambda: streed_solve(ds, depth, arrays=arrays), repeats)
            v_streed = streed_value(ds, model)
            targs = ["--time", "ours", "--dataset", name, "--level", level, "--depth", label,
                     "--repeats", str(repeats)]
            theirs, _, _, _ = _child(targs, other)
            ours, _, _, _ = _child(targs, ROOT)
            if abs(ours["value"] - theirs["value"]) > 1e-12:
                raise RuntimeError(f"{name} {level} {label}: ours {ours['value']!r}, theirs {theirs['value']!r}")
            row = {"dataset": name, "costs": level, "depth": label, "value": ours["value"], "streed_value": v_streed,
                   "diff": abs(ours["value"] - v_streed), "value_diff_trees": abs(ours["value"] - theirs["value"]),
                   "streed_ms": 1e3 * cpu_streed,
                   "main_ms": theirs["best_ms"], "ours_ms": ours["best_ms"],
                   "main_median_ms": theirs["median_ms"], "ours_median_ms": ours["median_ms"],
                   "main_first_ms": theirs["first_ms"], "ours_first_ms": ours["first_ms"],
                   "main_ratio": theirs["best_ms"] / (1e3 * cpu_streed), "ratio": ours["best_ms"] / (1e3 * cpu_streed),
                   "speedup": theirs["best_ms"] / ours["best_ms"],
                   "main_nodes": theirs["stats"].get("nodes", ""), "ours_nodes": ours["stats"].get("nodes", ""),
                   "noops": ours["stats"].get("noops", ""), "certain": ours["stats"].get("certain", ""),
                   "main_kernels": theirs["kernels"], "ours_kernels": ours["kernels"]}
            if whole_repeats:
                args = ["--one", "ours", "--dataset", name, "--level", level, "--depth", label]
                cpu = {"main": [], "ours": []}
                for i in range(whole_repeats + 1):
                    for who, code in (("main", other), ("ours", ROOT)):
                        out, c, _, err = _child(args, code)
                        if i == 0:
                            row[f"{who}_proc_first_ms"] = 1e3 * c
                            row[f"{who}_proc_first_compiled"] = _compiled_in(err)
                        elif _compiled_in(err):
                            raise RuntimeError(f"{who} {name} {level} {label}: a timed process compiled kernels")
                        else:
                            cpu[who].append(c)
                row["main_proc_ms"] = 1e3 * min(cpu["main"])
                row["ours_proc_ms"] = 1e3 * min(cpu["ours"])
                row["proc_speedup"] = row["main_proc_ms"] / row["ours_proc_ms"]
            rows.append(row)
            log(f"{name:9s} {level:6s} d={label:3s} value {row['value']:.10f} diff {row['diff']:.1e} | STreeD "
                f"{row['streed_ms']:8.1f} ms main {row['main_ms']:8.1f} ms ours {row['ours_ms']:8.1f} ms | "
                f"ours/STreeD {row['ratio']:6.2f} main/STreeD {row['main_ratio']:6.2f} main/ours {row['speedup']:6.2f}"
                + (f" | process main {row['main_proc_ms']:7.0f} ms ours {row['ours_proc_ms']:7.0f} ms"
                   if whole_repeats else ""), flush=True)
    return rows


VERSUS_COLUMNS = ["dataset", "costs", "depth", "value", "streed_value", "diff", "value_diff_trees", "streed_ms",
                  "main_ms", "ours_ms", "main_median_ms", "ours_median_ms", "main_first_ms", "ours_first_ms",
                  "main_ratio", "ratio", "speedup", "main_nodes", "ours_nodes", "noops", "certain",
                  "main_proc_first_ms", "main_proc_first_compiled", "ours_proc_first_ms", "ours_proc_first_compiled",
                  "main_proc_ms", "ours_proc_ms", "proc_speedup", "main_kernels", "ours_kernels"]


def write_versus(rows, path, *, command, machine, load_start, load_end, elapsed, other):
    """``path``.md and ``path``.csv: the side-by-side table of :func:`versus`."""
    with open(f"{path}.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=VERSUS_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt(r.get(k, "")) for k in VERSUS_COLUMNS})
    has_proc = any("ours_proc_ms" in r for r in rows)
    L = []
    add = L.append
    add("# This tree's kernels against another checkout's and STreeD, side by side (a subset of the suite)\n")
    add(f"Produced by `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {elapsed / 60:.1f} min); "
        f"`main` is the checkout at `{other}`, `ours` this tree.\n")
    add(f"Machine: {machine}; load average {load_start:.2f} at the start, {load_end:.2f} at the end (shared: only "
        "ratios measured moments apart are results).\n")
    add("In process: each tree's solver runs in its own child process; the first solve of the process (numba "
        "loading its cache) is reported apart (`first`), then each timed solve (best of the repeats; the median "
        "is in the CSV) gets a freshly built domain and root, outside the timing, and no cached Zobrist keys, "
        "so nothing a previous solve computed is reused. STreeD: a fresh classifier per fit, in the driving "
        "process. Depth d: `lookahead:d` (`expectimax`); inf: `BoundedSearch`, certified (not changed by "
        "this tree's kernels). Whole process: `--one ours` (imports, reading, building, one solve), CPU time, "
        "best of the repeats after a warm-up pair, the two trees alternately; a timed process that compiled "
        "kernels is an error.\n")
    head = ["dataset", "costs", "depth", "value", "diff STreeD", "STreeD ms", "main ms", "ours ms", "main/STreeD",
            "ours/STreeD", "main/ours", "nodes main", "nodes ours", "no-ops", "certain", "first main ms",
            "first ours ms"] + (["proc main ms", "proc ours ms", "proc main/ours"] if has_proc else [])
    add("| " + " | ".join(head) + " |")
    add("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        cells = [r["dataset"], r["costs"], r["depth"], f"{r['value']:.10f}", f"{r['diff']:.1e}", f"{r['streed_ms']:.1f}",
                 f"{r['main_ms']:.1f}", f"{r['ours_ms']:.1f}", f"{r['main_ratio']:.2f}", f"{r['ratio']:.2f}",
                 f"{r['speedup']:.2f}", str(r["main_nodes"]), str(r["ours_nodes"]), str(r["noops"]), str(r["certain"]),
                 f"{r['main_first_ms']:.0f}", f"{r['ours_first_ms']:.0f}"]
        if has_proc:
            cells += [f"{r['main_proc_ms']:.0f}", f"{r['ours_proc_ms']:.0f}", f"{r['proc_speedup']:.2f}"]
        add("| " + " | ".join(cells) + " |")
    add("")
    add("## Summary\n")
    add(f"- Values: the trees agree to {max(r['value_diff_trees'] for r in rows):.1e}; "
        f"{sum(r['diff'] <= 1e-9 for r in rows)} of {len(rows)} equal STreeD's to 1e-9.")
    for d in dict.fromkeys(r["depth"] for r in rows):
        sel = [r for r in rows if r["depth"] == d]
        add(f"- depth {d}: ours / STreeD in process {_range([r['ratio'] for r in sel], '{:.2f}')}; main / STreeD "
            f"{_range([r['main_ratio'] for r in sel], '{:.2f}')}; main / ours {_range([r['speedup'] for r in sel], '{:.2f}')}"
            + (f"; whole process main / ours {_range([r['proc_speedup'] for r in sel], '{:.2f}')}, ours "
               f"{_range([r['ours_proc_ms'] / 1e3 for r in sel], '{:.2f}').replace('x', ' s')}" if has_proc else "")
            + ".")
    Path(f"{path}.md").write_text("\n".join(L) + "\n")


def STreeD_variant(ds, depth, arrays, **options):
    """STreeD with non-default options (a fresh solver)."""
    from pystreed import STreeDCostSensitiveClassifier

    d = len(ds["costs"]) if depth is None else int(depth)
    model = STreeDCostSensitiveClassifier(max_depth=d, time_limit=3600, **options)
    model.fit(*arrays, streed_spec(ds))
    return model


COLUMNS = ["dataset", "costs", "rows", "distinct_rows", "features", "of_columns", "classes", "states", "depth",
           "ours_solver", "ours_value", "streed_value", "python_value", "diff", "diff_python", "diff_streed_score",
           "streed_nolb_value", "streed_optimal", "streed_tree_depth", "ours_plan_depth", "ours_ms", "streed_ms",
           "python_ms", "ratio", "python_ratio", "ours_proc_ms", "streed_proc_ms", "python_proc_ms", "ratio_process",
           "ours_wall_ms", "streed_wall_ms", "python_wall_ms", "ours_proc_wall_ms", "streed_proc_wall_ms",
           "python_proc_wall_ms", "ours_nodes", "ours_expansions", "merges", "transpositions", "pairs", "memo_hits",
           "graph_mb", "root_lh", "info_bound", "full_lookahead_value", "full_lookahead_ms",
           "full_lookahead_nodes", "load_ms"]


def _fmt(v):
    if isinstance(v, float):
        return repr(v)
    return str(v)


def write_csv(rows, path):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: _fmt(r.get(k, "")) for k in COLUMNS})


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def _range(xs, fmt="{:.1f}"):
    return f"median {fmt.format(_median(xs))}x, range {fmt.format(min(xs))}-{fmt.format(max(xs))}x"


def write_md(rows, path, *, command, machine, load_start, load_end, elapsed):
    L = []
    add = L.append
    add("# The planner against STreeD (optimal cost-sensitive decision trees)\n")
    add(f"Produced by `{command}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {elapsed / 60:.1f} min).\n")
    add(f"Machine: {machine}; load average {load_start:.2f} at the start, {load_end:.2f} at the end. A shared "
        "machine: other jobs ran at the same time, so times are CPU times of the measuring process (in process) "
        "or of the child process (whole process), and only their ratios, measured moments apart in this run, "
        "are results.\n")
    add("Mapping, datasets, simplifications and solvers: the docstring of `bench/compare_streed.py`. Inputs: "
        "`bench/results/streed/inputs/NAME.json` (pystreed's `data/cost-sensitive`, split 1; `F/cols`: the "
        "features kept, of the non-constant binary columns, so that 2^F x classes <= 4,096 states); `costs`: "
        "which of the suite's misclassification matrices (`middle` is pystreed's example; `high` gives deeper "
        "optimal trees).\n")
    add("Columns: `ours` the planner's value at the root (`lookahead:d` = `lookahead.search.expectimax` at depth d; "
        "`inf` = `BoundedSearch.plan(tol_abs=0, tol_rel=0)`, certified); "
        "`STreeD` the cost of STreeD's tree (default options; depth <= d, inf: d = F) averaged over the rows; "
        "`diff` |ours - STreeD|; `py diff` |ours - plain Python|; `*_ms` CPU ms of one solve in process (best "
        "of 3 after a warm-up); `ratio` ours / STreeD in process; `proc ratio` ours / STreeD as whole processes "
        "(imports, reading, building, one solve; CPU time, best of 3 after a warm-up process); `py/STreeD` the "
        "plain Python solver (memo on the set of consistent rows) / STreeD in process.\n")
    has_proc = any("ratio_process" in r for r in rows)
    head = ["dataset", "costs", "F/cols", "states", "depth", "ours", "STreeD", "diff", "py diff", "ours ms",
            "STreeD ms", "python ms", "ratio"] + (["proc ratio"] if has_proc else []) + ["py/STreeD"]
    add("| " + " | ".join(head) + " |")
    add("|" + "|".join("---" for _ in head) + "|")
    for r in rows:
        cells = [r["dataset"], r["costs"], f"{r['features']}/{r['of_columns']}", str(r["states"]), r["depth"],
                 f"{r['ours_value']:.10f}", f"{r['streed_value']:.10f}", f"{r['diff']:.1e}", f"{r['diff_python']:.1e}",
                 f"{r['ours_ms']:.1f}", f"{r['streed_ms']:.1f}", f"{r['python_ms']:.1f}", f"{r['ratio']:.2f}"]
        if has_proc:
            cells.append(f"{r['ratio_process']:.2f}")
        cells.append(f"{r['python_ratio']:.2f}")
        add("| " + " | ".join(cells) + " |")
    add("")
    diffs = [r["diff"] for r in rows]
    equal = [r for r in rows if r["diff"] <= 1e-9]
    off = [r for r in rows if r["diff"] > 1e-9]
    inf = [r for r in rows if r["depth"] == "inf"]
    add("## Summary\n")
    add(f"- Values: {len(equal)} of {len(rows)} cases equal STreeD's value to 1e-9 (largest difference among them "
        f"{max([r['diff'] for r in equal], default=0):.1e}); the largest |ours - plain Python| over all cases is "
        f"{max(r['diff_python'] for r in rows):.1e}. STreeD reported every tree optimal: "
        f"{all(r['streed_optimal'] for r in rows)}.")
    for r in off:
        add(f"  - {r['dataset']} / {r['costs']} depth {r['depth']}: STreeD {r['streed_value']:.10f} (reported optimal: "
            f"{r['streed_optimal']}), ours {r['ours_value']:.10f}, plain Python {r['python_value']:.10f}; STreeD with "
            f"`use_lower_bound=False` gives {r.get('streed_nolb_value', float('nan')):.10f}: "
            + ("STreeD's default options return a suboptimal tree here." if r["ours_value"] < r["streed_value"]
               else "ours is worse."))
    ratios = [r["ratio"] for r in rows]
    add(f"- In process, ours / STreeD over all cases: {_range(ratios)}; by depth: "
        + "; ".join(f"{d}: {_range([r['ratio'] for r in rows if r['depth'] == d])}"
                    for d in dict.fromkeys(r["depth"] for r in rows)) + ".")
    if has_proc:
        add(f"- Whole process, ours / STreeD: {_range([r['ratio_process'] for r in rows], '{:.2f}')}; at unlimited "
            f"depth {_range([r['ratio_process'] for r in inf], '{:.2f}')}.")
    add(f"- Plain Python (memo on consistent rows) / STreeD in process: {_range([r['python_ratio'] for r in rows], '{:.2f}')}; "
        f"ours / plain Python: {_range([r['ours_ms'] / r['python_ms'] for r in rows])}, at unlimited depth "
        f"{_range([r['ours_ms'] / r['python_ms'] for r in inf])}.")
    if inf:
        within = [r for r in inf if r["ratio"] <= 10]
        add(f"- Aim (within 10x of STreeD in process at unlimited depth): {len(within)} of {len(inf)} cases within "
            f"10x: {'met' if len(within) == len(inf) else 'not met'}.")
    add("")
    if inf:
        add("## Bounded search at unlimited depth\n")
        add("| dataset | costs | nodes | expansions | merges | transpositions | merge rate | pairs | "
            "graph MB | L_h(root) | full-info bound | V* | plan depth | STreeD depth | ours ms | python ms | "
            "STreeD ms | lookahead:F ms |")
        add("|" + "|".join("---" for _ in range(18)) + "|")
        for r in inf:
            looked = r["ours_nodes"] + r["merges"] + r["transpositions"]
            full = (f"cap {r['full_lookahead_nodes']:,} nodes ({r['full_lookahead_ms']:.0f} ms)"
                    if r["full_lookahead_value"] == "cap" else f"{r['full_lookahead_ms']:.0f}")
            add(f"| {r['dataset']} | {r['costs']} | {r['ours_nodes']} | {r['ours_expansions']} | "
                f"{r['merges']} | {r['transpositions']} | {r['merges'] / looked:.0%} | {r['pairs']} | "
                f"{r['graph_mb']:.0f} | {r['root_lh']:.3f} | {r['info_bound']:.3f} | {r['ours_value']:.3f} | "
                f"{r['ours_plan_depth']} | {r['streed_tree_depth']} | {r['ours_ms']:.1f} | {r['python_ms']:.1f} | "
                f"{r['streed_ms']:.1f} | {full} |")
        add("")
        add("`nodes`: decision nodes in the graph; `merges`: look-ups that found an equivalent node reached by a "
            "different set of (observation, outcome) pairs (the same belief bits: the same rows still consistent); "
            "`transpositions`: the same set reached in another order; `merge rate` = merges / (nodes + merges + "
            "transpositions); `pairs`: pair-table entries (nodes + merges). `L_h(root)`: the search's tip lower bound at the root; `full-info bound`: the expected "
            "misclassification cost if every feature were free (also admissible). `lookahead:F`: expectimax to "
            "full depth with its default node cap (one run; `cap`: it stops at the cap).\n")
    Path(path).write_text("\n".join(L) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--levels", default=",".join(LEVELS_RUN), help="cost levels: low, middle, high")
    ap.add_argument("--depths", default="1,2,3,4,inf")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--whole-repeats", type=int, default=3, help="0: skip the whole-process timing")
    ap.add_argument("--quick", action="store_true", help="depth 1, 2 and inf on diabetes and wine; prints only")
    ap.add_argument("--out", type=Path, default=None, help="folder for table.md/.csv (default bench/results/streed)")
    ap.add_argument("--extract", type=Path, default=None, metavar="DIR",
                    help="a pystreed checkout's data/cost-sensitive: rebuild the vendored inputs and stop")
    ap.add_argument("--commit", default=None, help="with --extract: the pystreed commit the data is from")
    ap.add_argument("--versus", type=Path, default=None, metavar="DIR",
                    help="another checkout (e.g. main): time its kernels and this tree's side by side")
    ap.add_argument("--name", default=None, help="file stem under --out (default: table, or versus with --versus)")
    ap.add_argument("--code", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--time", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--dataset", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--level", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--depth", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    # the planner this run measures: this tree (not whatever an editable install points at), or --code's
    sys.path.insert(0, str((a.code or ROOT).resolve()))
    if a.time:
        print(json.dumps(time_in_process(a.dataset, a.level, None if a.depth == "inf" else int(a.depth), a.repeats)))
        return
    if a.one:
        run_one(a.one, a.dataset, a.level, None if a.depth == "inf" else int(a.depth))
        return
    names = [s for s in a.datasets.split(",") if s]
    if a.extract is not None:
        INPUTS.mkdir(parents=True, exist_ok=True)
        for name in names:
            ds = extract(a.extract, name, commit=a.commit)
            (INPUTS / f"{name}.json").write_text(json.dumps(ds, separators=(",", ":")) + "\n")
            print(f"{name}: {len(ds['rows'])} rows, {len(ds['costs'])} of {ds['non_constant_columns']} non-constant "
                  f"columns, {(2 ** len(ds['costs'])) * len(ds['matrices']['middle'])} states")
        return
    levels = [s for s in a.levels.split(",") if s]
    depths = [None if s == "inf" else int(s) for s in a.depths.split(",")]
    if a.quick:
        names, levels, depths, a.repeats, a.whole_repeats = ["diabetes", "wine"], ["middle"], [1, 2, None], 1, 1
    cases = [(name, level) for name in names for level in levels]
    machine = machine_note()
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    out = a.out if a.out is not None else (None if a.quick else OUT)
    args = sys.argv[1:] if argv is None else list(argv)
    cmd = "python3 bench/compare_streed.py" + ("".join(" " + x for x in args))
    if a.versus is not None:
        rows = versus(cases, depths, a.repeats, a.whole_repeats, a.versus.resolve())
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            write_versus(rows, out / (a.name or "versus"), command=cmd, machine=machine, load_start=load0,
                         load_end=os.getloadavg()[0], elapsed=time.perf_counter() - t0, other=a.versus)
            print(f"wrote {out / (a.name or 'versus')}.md and .csv")
        return
    rows = compare(cases, depths, a.repeats, a.whole_repeats)
    elapsed = time.perf_counter() - t0
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        stem = a.name or "table"
        write_csv(rows, out / f"{stem}.csv")
        write_md(rows, out / f"{stem}.md", command=cmd, machine=machine, load_start=load0,
                 load_end=os.getloadavg()[0], elapsed=elapsed)
        print(f"wrote {out / (stem + '.md')} and {out / (stem + '.csv')}")


if __name__ == "__main__":
    main()
