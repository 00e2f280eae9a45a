"""``planner warm``: compile every kernel ahead of time into numba's on-disk cache (for images and CI).

:func:`warm` switches every kernel module to the compiled tier
(:mod:`lookahead.jit`) and runs each planning path once on small generated
domains, with the argument types real calls use, so a later process loads
every kernel from the cache instead of compiling it; it reports the CPU
seconds numba spent on each kernel. When the kernels are compiled at all is
:mod:`planner.tiers`'s decision.
"""

from __future__ import annotations

import time

import attrs

from lookahead import jit
from planner.tiers import KERNEL_MODULES


__all__ = ["KernelTime", "WarmReport", "warm", "cache_folder"]

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
