"""Numba kernels for one decision node: facts, permitted actions, belief, risk, EVSI.

Arrays in, arrays out; no Python objects inside a kernel. Axis letters and the
layout of the ``facts`` tuple are documented once, in :mod:`planner.compile`
(``S`` states, ``A`` actions, ``O`` observations, ``Y`` outcome slots, ``P``
propositions, ``D`` budget dimensions, ``N`` expression nodes).

A *node* is the set of (observation, outcome) pairs seen so far, held as
``outcome_of : int64[O]`` (-1 where not taken). Everything else at a node
(facts, permitted actions, available observations, budget spent, belief) is a
function of that set.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "TIE",
    "BUDGET_TOL",
    "established_status",
    "eval_facts",
    "permitted_actions",
    "available_observations",
    "affordable",
    "bayes_risk",
    "outcome_probs",
    "posterior",
    "evsi",
    "evsi_all",
    "reachable_actions",
    "evpi",
]

#: Values within this distance are tied (design, "Precise rules").
TIE = 1e-12
#: Slack when comparing spent + cost against a hard limit, so that 0.1 + 0.2
#: fits a limit of 0.3. Far below any cost a domain file can mean.
BUDGET_TOL = 1e-9

STATUS_NONE = -1
STATUS_CONTRADICTED = -2


@njit(cache=True)
def established_status(outcome_of, est_prop, est_kind, est_value, n_props):
    """Established value of each proposition at a node.

    Returns ``int64[P]``: the value index, -1 when nothing establishes it, -2
    when current establishing sources disagree (contradicted). Superseding
    sources take precedence over establishing ones whatever the order they were
    seen in (so the status is a function of the set of pairs); two superseding
    sources that disagree contradict each other.
    """
    est = np.full(n_props, -1, dtype=np.int64)
    sup = np.full(n_props, -1, dtype=np.int64)
    for o in range(outcome_of.shape[0]):
        y = outcome_of[o]
        if y < 0:
            continue
        p = est_prop[o]
        if p < 0:
            continue
        v = est_value[o, y]
        if v < 0:
            continue
        if est_kind[o] == 2:
            if sup[p] == -1:
                sup[p] = v
            elif sup[p] != v:
                sup[p] = -2
        else:
            if est[p] == -1:
                est[p] = v
            elif est[p] != v:
                est[p] = -2
    out = np.empty(n_props, dtype=np.int64)
    for p in range(n_props):
        out[p] = sup[p] if sup[p] != -1 else est[p]
    return out


@njit(cache=True)
def _combine(val, expr_kind, expr_start, expr_count, expr_children):
    """Fill the AND (2) / OR (3) nodes of `val` from their children, in index order."""
    for i in range(expr_kind.shape[0]):
        k = expr_kind[i]
        if k < 2:
            continue
        want = k == 3  # OR looks for a true child, AND for a false one
        out = not want
        for j in range(expr_start[i], expr_start[i] + expr_count[i]):
            if val[expr_children[j]] == want:
                out = want
                break
        val[i] = out
    return val


@njit(cache=True)
def eval_facts(outcome_of, status, expr_kind, expr_a, expr_b, expr_start, expr_count, expr_children):
    """Truth of every fact-expression node (``bool[N]``), children first."""
    n = expr_kind.shape[0]
    val = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        if expr_kind[i] == 0:
            val[i] = status[expr_a[i]] == expr_b[i]
        elif expr_kind[i] == 1:
            val[i] = outcome_of[expr_a[i]] == expr_b[i]
    return _combine(val, expr_kind, expr_start, expr_count, expr_children)


@njit(cache=True)
def _holds(root, mentions_row, val, status):
    if root < 0:
        return True
    for p in range(mentions_row.shape[0]):
        if mentions_row[p] and status[p] == -2:
            return False
    return val[root]


@njit(cache=True)
def permitted_actions(outcome_of, facts):
    """``bool[A]``: actions whose evidence requirements hold at the node."""
    (est_prop, est_kind, est_value, ek, ea, eb, es, ec, ech, action_req, obs_req, amen, omen) = facts
    status = established_status(outcome_of, est_prop, est_kind, est_value, amen.shape[1])
    val = eval_facts(outcome_of, status, ek, ea, eb, es, ec, ech)
    A = action_req.shape[0]
    out = np.empty(A, dtype=np.bool_)
    for a in range(A):
        out[a] = _holds(action_req[a], amen[a], val, status)
    return out


@njit(cache=True)
def available_observations(outcome_of, facts):
    """``bool[O]``: observations whose preconditions hold at the node."""
    (est_prop, est_kind, est_value, ek, ea, eb, es, ec, ech, action_req, obs_req, amen, omen) = facts
    status = established_status(outcome_of, est_prop, est_kind, est_value, amen.shape[1])
    val = eval_facts(outcome_of, status, ek, ea, eb, es, ec, ech)
    O = obs_req.shape[0]
    out = np.empty(O, dtype=np.bool_)
    for o in range(O):
        out[o] = _holds(obs_req[o], omen[o], val, status)
    return out


@njit(cache=True)
def affordable(o, spent, cost, limits):
    """True when acquiring `o` keeps every dimension within its hard limit."""
    for d in range(limits.shape[0]):
        if spent[d] + cost[o, d] > limits[d] + BUDGET_TOL:
            return False
    return True


@njit(cache=True)
def bayes_risk(belief, loss, permitted):
    """R(b) = min over permitted u of sum_s b(s) L(u, s), and the minimising action.

    Ties within :data:`TIE` go to the action declared first. Returns
    ``(inf, -1)`` when no action is permitted.
    """
    best = np.inf
    best_a = -1
    A, S = loss.shape
    for a in range(A):
        if not permitted[a]:
            continue
        r = 0.0
        for s in range(S):
            r += belief[s] * loss[a, s]
        if r < best - TIE:
            best = r
            best_a = a
    return best, best_a


@njit(cache=True)
def outcome_probs(belief, lik_o, n_y, out):
    """P(y | b, o) for y < n_y into ``out : float64[Y]``; ``lik_o : float64[Y, S]``."""
    S = belief.shape[0]
    for y in range(n_y):
        p = 0.0
        for s in range(S):
            p += belief[s] * lik_o[y, s]
        out[y] = p
    return out


@njit(cache=True)
def posterior(belief, lik_oy, out):
    """Bayes update b_y(s) ∝ b(s) P(y | s) into `out`; returns the normaliser P(y | b)."""
    z = 0.0
    for s in range(belief.shape[0]):
        v = belief[s] * lik_oy[s]
        out[s] = v
        z += v
    if z > 0.0:
        for s in range(belief.shape[0]):
            out[s] /= z
    return z


@njit(cache=True)
def evsi(o, belief, outcome_of, lik, n_outcomes, loss, facts):
    """EVSI(o | b) = R(b) - sum_y P(y | b, o) R(b_y), facts updated per outcome.

    Returns ``(evsi, expected_posterior_risk)``.
    """
    r0, _ = bayes_risk(belief, loss, permitted_actions(outcome_of, facts))
    S = belief.shape[0]
    post = np.empty(S)
    child = outcome_of.copy()
    expected = 0.0
    for y in range(n_outcomes[o]):
        z = posterior(belief, lik[o, y], post)
        if z <= 0.0:
            continue
        child[o] = y
        r, _ = bayes_risk(post, loss, permitted_actions(child, facts))
        expected += z * r
    return r0 - expected, expected


@njit(cache=True)
def evsi_all(belief, outcome_of, lik, n_outcomes, loss, facts, mask, out):
    """EVSI of every observation where ``mask : bool[O]`` is set (``nan`` elsewhere)."""
    for o in range(mask.shape[0]):
        if mask[o]:
            out[o], _ = evsi(o, belief, outcome_of, lik, n_outcomes, loss, facts)
        else:
            out[o] = np.nan
    return out


@njit(cache=True)
def reachable_actions(outcome_of, admitted, facts, n_values):
    """``bool[A]``: actions that admissible evidence could still permit (an over-approximation).

    A leaf "p established as v" may become true if it holds now or some
    untaken admitted observation can establish v; "o returned y" if it holds
    now or o is untaken and admitted. Preconditions, budgets and contradictions
    are ignored, which only enlarges the set: the EVPI built on it stays an
    upper bound of every EVSI.
    """
    (est_prop, est_kind, est_value, ek, ea, eb, es, ec, ech, action_req, obs_req, amen, omen) = facts
    P = amen.shape[1]
    status = established_status(outcome_of, est_prop, est_kind, est_value, P)
    O = outcome_of.shape[0]
    can = np.zeros((P, n_values), dtype=np.bool_)
    for p in range(P):
        if status[p] >= 0:
            can[p, status[p]] = True
    for o in range(O):
        if outcome_of[o] >= 0 or not admitted[o] or est_prop[o] < 0:
            continue
        for y in range(est_value.shape[1]):
            if est_value[o, y] >= 0:
                can[est_prop[o], est_value[o, y]] = True
    n = ek.shape[0]
    val = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        if ek[i] == 0:
            val[i] = can[ea[i], eb[i]]
        elif ek[i] == 1:
            val[i] = outcome_of[ea[i]] == eb[i] or (outcome_of[ea[i]] < 0 and admitted[ea[i]])
    _combine(val, ek, es, ec, ech)
    A = action_req.shape[0]
    out = np.empty(A, dtype=np.bool_)
    for a in range(A):
        out[a] = action_req[a] < 0 or val[action_req[a]]
    return out


@njit(cache=True)
def evpi(belief, outcome_of, admitted, loss, facts, n_values):
    """EVPI under gates: R(b) - sum_s b(s) min over reachable u of L(u, s)."""
    r0, _ = bayes_risk(belief, loss, permitted_actions(outcome_of, facts))
    reach = reachable_actions(outcome_of, admitted, facts, n_values)
    A, S = loss.shape
    total = 0.0
    for s in range(S):
        m = np.inf
        for a in range(A):
            if reach[a] and loss[a, s] < m:
                m = loss[a, s]
        total += belief[s] * m
    return r0 - total
