"""Probe: would the separation lower bound make the depth-first search's branch-and-bound pay? (issue 20)

Not a benchmark of shipped code: two measurements taken before writing any pruning into
``lookahead/search.py``, kept so that the figures can be re-derived.

``perfect`` (``python3 bench/prune_probe.py perfect 16 0 1``): the exact search's V* at the root and at each
depth-1 node, against ``Q_L(o) = penalty(o) + sum_y P(y) L_h(n + (o, y))`` of each candidate there
(``L_h``: the tip bound of :class:`lookahead.bounded.BoundedSearch`, the separation bound by default). A
candidate with ``Q_L(o) >= V*(n)`` is the most any branch-and-bound can skip at n, even with the best
threshold known in advance.

``alphabeta`` (``python3 bench/prune_probe.py alphabeta 12 3 1 [none]``): a plain-Python fail-soft
branch-and-bound over sets of pairs (exact values memoised, fail-high lower bounds memoised apart),
children thresholds passed down, with that tip bound (or with 0, ``none``); counts nodes. It checks its
value against nothing but the printed V* of the kernel (values only: it ignores the tie rule).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import planner  # noqa: E402
from lookahead import jit  # noqa: E402
from lookahead.bounded import BoundedSearch  # noqa: E402
from lookahead.core import BUDGET_TOL, node_facts  # noqa: E402
from lookahead.search import canonical_belief, lookup  # noqa: E402
from planner.generators import benchmark_domain  # noqa: E402


def _setup(n_obs, chain, seed):
    node = planner.Session(planner.Domain.from_dict(benchmark_domain(n_obs, 8, seed=seed, chain=chain))).node
    c = node.compiled
    bs = BoundedSearch(c.prior, c.lik, c.n_outcomes, c.loss, c.cost, c.limits, c.penalty, node.admission.admitted,
                       c.facts)
    return node, c, bs


def _tip(node, bs, pairs):
    oc = node.outcome_of.copy()
    for o, y in pairs:
        oc[o] = y
    return bs.interval(oc)[0]


def perfect(n_obs, chain, seed):
    node, c, bs = _setup(n_obs, chain, seed)
    res = node.search(64, max_nodes=50_000_000)

    def cands(pairs):
        b = canonical_belief(node.belief, c.lik, pairs)
        taken = {o for o, _ in pairs}
        out = []
        for o in range(len(c.obs_names)):
            if o in taken or not node.eligible[o]:
                continue
            kids = [(y, float(b @ c.lik[o, y])) for y in range(int(c.n_outcomes[o]))]
            kids = [(y, p) for y, p in kids if p > 0.0]
            ql = c.penalty[o] + sum(p * _tip(node, bs, tuple(sorted(pairs + ((o, y),)))) for y, p in kids)
            out.append((o, ql, kids))
        return out

    root = cands(())
    print(f"8x{n_obs} c{chain} s{seed}: V* {res.value:.6f}, {res.nodes:,} nodes; root L_h {_tip(node, bs, ()):.4f}; "
          f"root candidates {len(root)}, Q_L >= V*: {sum(q >= res.value for _, q, _ in root)}")
    total = skip = 0
    gaps = []
    for o, _, kids in root:
        for y, _ in kids:
            v, _ = lookup(res, ((o, y),), res.depth - 1)
            cs = cands(((o, y),))
            total += len(cs)
            skip += sum(q >= v for _, q, _ in cs)
            gaps.append((v - _tip(node, bs, ((o, y),))) / v)
    print(f"  depth 1: candidates {total}, Q_L >= V*(node): {skip}; mean relative gap of L_h {np.mean(gaps):.3f}")


def alphabeta(n_obs, chain, seed, mode="sep"):
    node, c, bs = _setup(n_obs, chain, seed)
    O, lik, loss, pen = len(c.obs_names), c.lik, c.loss, c.penalty
    adm, lim = node.admission.admitted, np.asarray(c.limits) + BUDGET_TOL
    exact, lbm, tipm = {}, {}, {}
    stats = dict(nodes=0, pruned=0, cut=0)

    def lower(pairs):
        if pairs in exact:
            return exact[pairs]
        if pairs not in tipm:
            tipm[pairs] = 0.0 if mode == "none" else _tip(node, bs, pairs)
        return max(tipm[pairs], lbm.get(pairs, -math.inf))

    def value(pairs, alpha):  # (V*, True) where V* < alpha, else (a lower bound >= alpha, False)
        if pairs in exact:
            return exact[pairs], True
        if lbm.get(pairs, -math.inf) >= alpha:
            return lbm[pairs], False
        stats["nodes"] += 1
        oc, sp = node.outcome_of.copy(), node.spent.copy()
        for o, y in pairs:
            oc[o] = y
            sp = sp + c.cost[o]
        b = canonical_belief(node.belief, lik, pairs)
        _, permitted, avail = node_facts(oc, c.facts)
        best = min(float(b @ loss[a]) for a in range(loss.shape[0]) if permitted[a])
        failed = math.inf
        for o in range(O):
            if oc[o] >= 0 or not adm[o] or not avail[o] or (not pairs and not node.eligible[o]):
                continue
            if np.any(sp + c.cost[o] > lim):
                continue
            t = min(alpha, best)
            kids = [(tuple(sorted(pairs + ((o, y),))), float(b @ lik[o, y])) for y in range(int(c.n_outcomes[o]))]
            kids = [(k, p) for k, p in kids if p > 0.0]
            lbs = [lower(k) for k, _ in kids]
            rest = sum(p * lb for (_, p), lb in zip(kids, lbs))
            if pen[o] + rest >= t + 1e-9:
                stats["pruned"] += 1
                failed = min(failed, pen[o] + rest)
                continue
            acc, ok = pen[o], True
            for (k, p), lb in zip(kids, lbs):
                rest -= p * lb
                v, ex = value(k, (t - acc - rest) / p)
                acc += p * v
                if not ex or acc + rest >= t + 1e-9:
                    ok = False
                    stats["cut"] += 1
                    failed = min(failed, acc + rest)
                    break
            if ok and acc < best:
                best = acc
        if best < alpha:
            exact[pairs] = best
            return best, True
        lbm[pairs] = max(lbm.get(pairs, -math.inf), min(best, failed))
        return lbm[pairs], False

    t0 = time.process_time()
    v, _ = value((), math.inf)
    print(f"8x{n_obs} c{chain} s{seed} {mode}: V {v:.6f}, nodes {stats['nodes']:,}, candidates skipped "
          f"{stats['pruned']:,}, cut {stats['cut']:,}, {time.process_time() - t0:.1f} s")


if __name__ == "__main__":
    jit.ensure_compiled()
    what, *rest = sys.argv[1:]
    args = [int(x) for x in rest[:3]]
    perfect(*args) if what == "perfect" else alphabeta(*args, *(rest[3:4] or ["sep"]))
