"""Pure-Python reference of the depth-limited expectimax (the tests' oracle, the speed baseline).

The same recursion as :mod:`lookahead.search`, written as plain loops over
Python lists: no numba, no memo, no pruning::

    V_0(n) = R(n)
    V_d(n) = min(R(n), min_o [penalty(o) + sum_y P(y | n, o) V_{d-1}(n + (o, y))])

`o` ranges over observations admitted, available at `n`, not yet taken and
affordable within the hard limits (the root uses the mask it is given).
Beliefs and spend at a node are computed from the root and the node's set of
pairs in observation-index order, as the numba search does, so both agree to
rounding (in practice bit for bit).

Every node of the tree is evaluated once per path that reaches it, which is
what makes this the baseline the memoised search is measured against.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lookahead.core import BUDGET_TOL, TIE
from lookahead.layout import (
    EST_SUPERSEDE,
    EXPR_AND,
    EXPR_ESTABLISHED,
    EXPR_RETURNED,
    NO_EXPR,
    STATUS_CONTRADICTED,
    STATUS_NONE,
    Facts,
)

__all__ = ["ReferenceResult", "expectimax", "node_risk"]


class ReferenceResult(NamedTuple):
    """``value`` V_d at the root; ``risk`` R at the root; ``expected[o]`` the
    expectation sum_y P(y) V_{d-1} per root candidate (``nan`` elsewhere);
    ``nodes`` the tree nodes evaluated (root and leaves included)."""

    value: float
    risk: float
    expected: np.ndarray
    nodes: int


def _status(oc, est_prop, est_kind, est_value, n_props):
    est = [STATUS_NONE] * n_props
    sup = [STATUS_NONE] * n_props
    for o, y in enumerate(oc):
        if y < 0 or est_prop[o] < 0:  # not taken, or establishes nothing
            continue
        p, v = est_prop[o], est_value[o][y]
        if v < 0:
            continue
        table = sup if est_kind[o] == EST_SUPERSEDE else est
        if table[p] == STATUS_NONE:
            table[p] = v
        elif table[p] != v:
            table[p] = STATUS_CONTRADICTED
    return [sup[p] if sup[p] != STATUS_NONE else est[p] for p in range(n_props)]


def _eval(oc, status, kind, a, b, start, count, children):
    val = [False] * len(kind)
    for i, k in enumerate(kind):
        if k == EXPR_ESTABLISHED:
            val[i] = status[a[i]] == b[i]
        elif k == EXPR_RETURNED:
            val[i] = oc[a[i]] == b[i]
        elif k == EXPR_AND:
            val[i] = all(val[children[j]] for j in range(start[i], start[i] + count[i]))
        else:
            val[i] = any(val[children[j]] for j in range(start[i], start[i] + count[i]))
    return val


def _holds(root, mentions, val, status):
    if root == NO_EXPR:
        return True
    for p, m in enumerate(mentions):
        if m and status[p] == STATUS_CONTRADICTED:
            return False
    return val[root]


def _lists(facts) -> Facts:
    """The fact tables as nested Python lists, by name."""
    return Facts(*(np.asarray(x).tolist() for x in facts))


def _node(oc, f: Facts):
    """Status and expression values at a node, in pure Python."""
    n_props = len(f.action_mentions[0]) if f.action_mentions else 0
    status = _status(oc, f.est_prop, f.est_kind, f.est_value, n_props)
    val = _eval(oc, status, f.expr_kind, f.expr_a, f.expr_b, f.expr_start, f.expr_count, f.expr_children)
    return status, val


def _risk(belief, loss, permitted):
    best = float("inf")
    for a, row in enumerate(loss):
        if not permitted[a]:
            continue
        r = 0.0
        for s, x in enumerate(belief):
            r += x * row[s]
        if r < best - TIE:
            best = r
    return best


def node_risk(belief, outcome_of, loss, facts) -> float:
    """R at a node, in pure Python (``bayes_risk`` under ``permitted_actions``).

    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("payment_release"))
    >>> round(node_risk(c.prior, [-1] * 4, c.loss, c.facts), 3)
    4.85
    """
    f = _lists(facts)
    status, val = _node(list(outcome_of), f)
    permitted = [_holds(f.action_req[a], f.action_mentions[a], val, status) for a in range(len(f.action_req))]
    return _risk([float(x) for x in belief], np.asarray(loss).tolist(), permitted)


def expectimax(belief, outcome_of, spent, root_mask, admitted, depth, lik, n_outcomes, loss, facts, cost,
               limits, penalty, n_values=None) -> ReferenceResult:
    """V_d at the root by plain recursion (same arguments as :func:`lookahead.search.expectimax`).

    Examples
    --------
    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> c = n.compiled
    >>> res = expectimax(n.belief, n.outcome_of, n.spent, n.eligible, n.admission.admitted, 2, c.lik,
    ...                  c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty)
    >>> round(res.value, 3), res.nodes
    (1.193, 13)
    """
    b0 = [float(x) for x in belief]
    oc0 = [int(x) for x in outcome_of]
    sp0 = [float(x) for x in spent]
    mask0 = [bool(x) for x in root_mask]
    adm = [bool(x) for x in admitted]
    L = np.asarray(lik).tolist()
    ny = [int(x) for x in n_outcomes]
    LOSS = np.asarray(loss).tolist()
    f = _lists(facts)
    C = np.asarray(cost).tolist()
    LIM = [float(x) for x in limits]
    PEN = [float(x) for x in penalty]
    O, S, D = len(oc0), len(b0), len(sp0)
    count = [0]
    expected = np.full(O, np.nan)

    def value(pairs, r):
        count[0] += 1
        oc = list(oc0)
        for o, y in pairs:
            oc[o] = y
        order = sorted(pairs)
        # belief and spend from the root and the set, in index order, normalised once
        if order:
            bel = []
            z = 0.0
            for s in range(S):
                v = b0[s]
                for o, y in order:
                    v *= L[o][y][s]
                bel.append(v)
                z += v
            if z > 0.0:
                bel = [v / z for v in bel]
        else:
            bel = b0
        sp = []
        for d in range(D):
            x = sp0[d]
            for o, _ in order:
                x += C[o][d]
            sp.append(x)
        status, val = _node(oc, f)
        permitted = [_holds(f.action_req[a], f.action_mentions[a], val, status) for a in range(len(f.action_req))]
        risk = _risk(bel, LOSS, permitted)
        if r == 0:
            return risk
        best = risk
        for o in range(O):
            if pairs:
                ok = (adm[o] and oc[o] < 0 and _holds(f.obs_req[o], f.obs_mentions[o], val, status)
                      and all(sp[d] + C[o][d] <= LIM[d] + BUDGET_TOL for d in range(D)))
            else:
                ok = mask0[o]
            if not ok:
                continue
            e = 0.0
            for y in range(ny[o]):
                p = 0.0
                for s in range(S):
                    p += bel[s] * L[o][y][s]
                if p <= 0.0:
                    continue
                e += p * value(pairs + [(o, y)], r - 1)
            if not pairs:
                expected[o] = e
            q = PEN[o] + e
            if q < best:
                best = q
        return best

    v = value([], int(depth))
    return ReferenceResult(value=v, risk=node_risk(b0, oc0, loss, facts), expected=expected, nodes=count[0])


def evaluate_receding(belief, outcome_of, spent, admitted, depth, lik, n_outcomes, loss, facts, cost, limits,
                      penalty) -> float:
    """Exact expected total loss of the depth-`depth` receding-horizon policy, in pure Python (no memo).

    At every node the policy takes the candidate with the lowest ``Q_d``
    (:func:`expectimax` values) if it beats stopping by more than TIE (ties:
    the lower penalty, then the first declared), and the expectation runs over
    every outcome of positive probability. The speed baseline of
    ``planner evaluate`` and the oracle its tests compare with.

    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> c = n.compiled
    >>> round(evaluate_receding(n.belief, n.outcome_of, n.spent, n.admission.admitted, 2, c.lik, c.n_outcomes,
    ...                         c.loss, c.facts, c.cost, c.limits, c.penalty), 4)
    1.1925
    """
    f = _lists(facts)
    L = np.asarray(lik).tolist()
    C = np.asarray(cost).tolist()
    LIM = [float(x) for x in limits]
    PEN = [float(x) for x in penalty]
    ny = [int(x) for x in n_outcomes]
    adm = [bool(x) for x in admitted]
    O, D = len(outcome_of), len(spent)

    def visit(bel, oc, sp):
        status, val = _node(oc, f)
        mask = [adm[o] and oc[o] < 0 and _holds(f.obs_req[o], f.obs_mentions[o], val, status)
                and all(sp[d] + C[o][d] <= LIM[d] + BUDGET_TOL for d in range(D)) for o in range(O)]
        res = expectimax(bel, oc, sp, mask, adm, depth, lik, n_outcomes, loss, facts, cost, limits, penalty)
        best, choice = res.risk, None
        for o in range(O):
            if not mask[o]:
                continue
            q = PEN[o] + res.expected[o]
            if choice is None:
                if q < best - TIE:
                    best, choice = q, o
            elif q < best - TIE or (q <= best + TIE and PEN[o] < PEN[choice] - TIE):
                best, choice = q, o
        if choice is None:
            return res.risk
        total = PEN[choice]
        for y in range(ny[choice]):
            p = sum(bel[s] * L[choice][y][s] for s in range(len(bel)))
            if p <= 0.0:
                continue
            post = [bel[s] * L[choice][y][s] / p for s in range(len(bel))]
            child = list(oc)
            child[choice] = y
            total += p * visit(post, child, [sp[d] + C[choice][d] for d in range(D)])
        return total

    return visit([float(x) for x in belief], [int(x) for x in outcome_of], [float(x) for x in spent])


def optimal_value(belief, outcome_of, spent, admitted, lik, n_outcomes, loss, facts, cost, limits, penalty) -> tuple:
    """V* (no depth limit) by plain recursion memoised on the set of pairs, in pure Python: ``(value, nodes)``.

    The speed baseline of the bounded search (:mod:`lookahead.bounded`): the
    same optimum, with no bounds and no equivalence beyond the set of pairs.

    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> c = n.compiled
    >>> v, nodes = optimal_value(n.belief, n.outcome_of, n.spent, n.admission.admitted, c.lik, c.n_outcomes, c.loss,
    ...                          c.facts, c.cost, c.limits, c.penalty)
    >>> round(v, 4), nodes
    (1.1925, 9)
    """
    f = _lists(facts)
    b0 = [float(x) for x in belief]
    L = np.asarray(lik).tolist()
    LOSS = np.asarray(loss).tolist()
    C = np.asarray(cost).tolist()
    LIM = [float(x) for x in limits]
    PEN = [float(x) for x in penalty]
    ny = [int(x) for x in n_outcomes]
    adm = [bool(x) for x in admitted]
    O, S, D = len(outcome_of), len(b0), len(spent)
    memo: dict = {}

    def value(oc):
        key = tuple(oc)
        hit = memo.get(key)
        if hit is not None:
            return hit
        pairs = [(o, y) for o, y in enumerate(oc) if y >= 0 and outcome_of[o] < 0]
        bel = list(b0)
        for o, y in pairs:
            bel = [bel[s] * L[o][y][s] for s in range(S)]
        z = sum(bel)
        bel = [v / z for v in bel] if z > 0 else bel
        sp = [float(spent[d]) + sum(C[o][d] for o, _ in pairs) for d in range(D)]
        status, val = _node(oc, f)
        permitted = [_holds(f.action_req[a], f.action_mentions[a], val, status) for a in range(len(f.action_req))]
        best = _risk(bel, LOSS, permitted)
        for o in range(O):
            if not (adm[o] and oc[o] < 0 and _holds(f.obs_req[o], f.obs_mentions[o], val, status)
                    and all(sp[d] + C[o][d] <= LIM[d] + BUDGET_TOL for d in range(D))):
                continue
            q = PEN[o]
            for y in range(ny[o]):
                p = sum(bel[s] * L[o][y][s] for s in range(S))
                if p > 0.0:
                    child = list(oc)
                    child[o] = y
                    q += p * value(child)
            if q < best:
                best = q
        memo[key] = best
        return best

    v = value([int(x) for x in outcome_of])
    return v, len(memo)
