"""Getting the kernels ready: the work estimate behind the tier choice, and ``planner warm``.

The kernels (:mod:`lookahead`) run as plain Python until the work of a
planning call pays for compiling them (:mod:`lookahead.jit`). A policy asks
:func:`prepare_search` before it searches: the estimate is
:func:`search_work`, the number of distinct nodes the search can reach (sets
of (observation, outcome) pairs within the depth and the hard limits, capped
at the node budget) times the work of one node, ``S x (A + Y x O)``
state-operations. On the seed's payment case that is 16 sets of pairs
(the search meets 9 of them), 448 state-operations: the Python tier answers
in milliseconds and nothing is compiled. Above :data:`lookahead.jit.PYTHON_WORK` (over the whole process) the
kernels are compiled, after one line on stderr.

:func:`warm` compiles every kernel ahead of time into numba's on-disk cache
(``planner warm``, for images and CI): it switches every kernel module to
the compiled tier and runs each planning path once on small generated
domains, with the argument types real calls use, so a later process loads
every kernel from the cache instead of compiling it.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from lookahead import jit

__all__ = ["KERNEL_MODULES", "search_work", "node_work", "prepare_search", "KernelTime", "WarmReport", "warm", "cache_folder"]

#: The kernel modules the planner runs (what a compile switches, and what ``planner warm`` compiles).
KERNEL_MODULES = ("lookahead.core", "lookahead.search", "lookahead.bounded")


def search_work(node, depth: int | None = None, cap: int | None = None) -> float:
    """State-operations a search from `node` does at most: reachable nodes (capped at `cap`) x ``S x (A + Y x O)``.

    The reachable nodes are the sets of at most `K` (observation, outcome)
    pairs over the observations admitted, untaken and affordable at `node`
    (the coefficients of ``prod_o (1 + n_outcomes[o] x)`` up to degree K),
    where K is `depth` (None: no depth limit) and the most acquisitions each
    hard limit leaves room for (its cheapest candidates first).

    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> search_work(n)   # 16 sets of pairs x 2 states x (2 actions + 3 outcome slots x 4 observations)
    448.0
    """
    c = node.compiled
    cand = np.flatnonzero(node.admission.admitted & (node.outcome_of < 0) & node.affordable)
    k = len(cand) if depth is None else min(int(depth), len(cand))
    left = np.asarray(c.limits, dtype=float) - np.asarray(node.spent, dtype=float)
    for d in np.flatnonzero(np.isfinite(left)):
        costs = np.sort(np.asarray(c.cost, dtype=float)[cand, d])
        fits = int(np.searchsorted(np.cumsum(costs), left[d] + 1e-9, side="right"))
        k = min(k, fits)
    coef = np.zeros(k + 1)
    coef[0] = 1.0
    for o in cand:
        coef[1:] = coef[1:] + coef[:-1] * float(c.n_outcomes[o])
    nodes = float(coef.sum())
    if cap is not None:
        nodes = min(nodes, float(cap))
    S, O, Y, A = c.n_states, len(c.obs_names), c.lik.shape[1], c.loss.shape[0]
    return nodes * S * (A + Y * O)


def node_work(node) -> float:
    """State-operations of the per-node kernels one decision runs: the one-step table, ``O x Y x S x (A + 1)``.

    >>> import planner
    >>> node_work(planner.Session(planner.load_domain("payment_release")).node)
    72.0
    """
    c = node.compiled
    return float(len(c.obs_names) * c.lik.shape[1] * c.n_states * (c.loss.shape[0] + 1))


def prepare_search(node, depth: int | None = None, cap: int | None = None) -> str:
    """The tier for a search from `node`: ``"python"``, or ``"compiled"`` after switching the search kernels.

    The per-node kernels (:mod:`lookahead.core`) and the searches
    (:mod:`lookahead.search`, :mod:`lookahead.bounded`) are decided apart
    (:func:`node_work`, :func:`search_work`): a search over 8 states needs
    its kernels compiled long before the one-step table does, and compiling
    only what pays keeps the first run short.

    >>> import planner
    >>> prepare_search(planner.Session(planner.load_domain("payment_release")).node)
    'python'
    """
    jit.prepare(node_work(node), ("lookahead.core",))
    return jit.prepare(search_work(node, depth, cap), ("lookahead.search", "lookahead.bounded"))


@attrs.frozen
class KernelTime:
    """One kernel's compile: its name, the CPU seconds numba spent on it (its callees' excluded), its signatures."""

    name: str
    seconds: float
    signatures: int


@attrs.frozen
class WarmReport:
    """What :func:`warm` did: per-kernel compile CPU seconds (slowest first), their total and the wall time."""

    kernels: tuple
    total: float
    wall: float
    loaded: tuple = ()  # kernels numba loaded from its cache instead of compiling

    def lines(self) -> list:
        """The report as text lines (``planner warm`` prints them)."""
        width = max([len(k.name) for k in self.kernels] + [6])
        out = [f"{k.name:<{width}}  {k.seconds:6.2f} s" + (f"  ({k.signatures} signatures)" if k.signatures > 1 else "")
               for k in self.kernels]  # noqa: E501
        if self.loaded:
            out.append(f"{len(self.loaded)} kernels already in numba's cache (loaded, not compiled)")
        out.append(f"total {self.total:.2f} s of CPU compiling ({self.wall:.2f} s wall, loading and runs included)")
        return out


def _workloads() -> None:
    """Every planning path once, on small generated domains (so every kernel compiles with its real argument types)."""
    from planner.evaluation.evaluate import evaluate_policy
    from planner.generators import benchmark_domain
    from planner.model.domain import Domain
    from planner.session.session import Session

    import lookahead.core as core
    from lookahead.bounded import BoundedSearch

    chained = Domain.from_dict(benchmark_domain(7, 4, seed=3, chain=2))  # preconditions and a gated action
    plain = Domain.from_dict(benchmark_domain(5, 4, seed=5, precondition_rate=0.0))
    for domain in (chained, plain):
        for policy in ("bounded", "one-step", "lookahead:2", "dependency", "confidence:0.9", "decision-region",
                       "lookahead:auto"):
            evaluate_policy(domain, policy)
        s = Session(domain)
        n, c = s.node, s.compiled
        # the best-first search from a tiny graph, so that it grows (its rehash kernel compiles too)
        bs = BoundedSearch(c.prior, c.lik, c.n_outcomes, c.loss, c.cost, c.limits, c.penalty, n.admission.admitted,
                           c.facts)
        bs.plan(n.outcome_of, budget=5_000)
        n.search(3, max_nodes=50_000)
        core.established_status(n.outcome_of, c.facts.est_prop, c.facts.est_kind, c.facts.est_value,
                                c.facts.action_mentions.shape[1])
        core.permitted_actions(n.outcome_of, c.facts)
        core.available_observations(n.outcome_of, c.facts)
        core.evpi(n.belief, n.outcome_of, n.admission.admitted, c.loss, c.facts, c.n_values)


def warm(modules=KERNEL_MODULES) -> WarmReport:
    """Compile every kernel of `modules` into numba's on-disk cache, and time each compile.

    Switches the modules to the compiled tier, then runs every planning path
    once (:func:`_workloads`). A kernel already in the cache is loaded and
    reported as such. Times are CPU seconds (the machine may be shared), from
    numba's own compile events; a kernel's time excludes the kernels it calls
    (each counted once, under its own name).
    """
    from numba.core import event

    times: dict = {}
    stack: list = []

    class _Listener(event.Listener):
        def on_start(self, ev):
            stack.append([ev.data["dispatcher"], time.process_time(), 0.0])

        def on_end(self, ev):
            disp, t0, inner = stack.pop()
            spent = time.process_time() - t0
            name = f"{disp.py_func.__module__}.{disp.py_func.__qualname__}"
            times[name] = times.get(name, 0.0) + spent - inner
            if stack:
                stack[-1][2] += spent

    t0 = time.perf_counter()
    jit.ensure_compiled(list(modules))
    listener = _Listener()
    event.register("numba:compile", listener)
    try:
        with jit.quiet():
            _workloads()
    finally:
        event.unregister("numba:compile", listener)
    wall = time.perf_counter() - t0
    kernels, loaded = [], []
    for m in modules:
        for k in jit.registered()[m]:
            name = f"{k.module}.{k.__qualname__}"
            n_sig = len(k.dispatcher.signatures)
            if name in times:
                kernels.append(KernelTime(name=name, seconds=times[name], signatures=n_sig))
            elif n_sig:
                loaded.append(name)
    kernels.sort(key=lambda k: (-k.seconds, k.name))
    return WarmReport(kernels=tuple(kernels), total=sum(k.seconds for k in kernels), wall=wall, loaded=tuple(loaded))


def cache_folder() -> str:
    """Where numba keeps the compiled kernels (``NUMBA_CACHE_DIR``, else beside the sources or a user folder)."""
    from lookahead.search import _expectimax

    try:
        return str(_expectimax.dispatcher._cache._cache_path)
    except AttributeError:  # no disk cache, or another numba layout
        return "(none)"
