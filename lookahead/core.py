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
    "node_facts",
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


# The ``_*_into`` helpers write into caller-owned buffers and are inlined
# (``inline="always"``): the search kernel (lookahead.search) calls them at
# every node, where allocation and per-call array passing would dominate a
# node's cost of a few hundred nanoseconds. The public kernels below wrap them.


@njit(cache=True, inline="always")
def _status_into(outcome_of, est_prop, est_kind, est_value, work):
    """Established status into ``work[2]`` (``work : int64[3, P]``; rows 0, 1 are scratch).

    Row 0 gathers establishing sources, row 1 superseding ones; superseding
    sources take precedence whatever the order they were seen in.
    """
    n_props = work.shape[1]
    for p in range(n_props):
        work[0, p] = -1
        work[1, p] = -1
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
        k = 1 if est_kind[o] == 2 else 0
        if work[k, p] == -1:
            work[k, p] = v
        elif work[k, p] != v:
            work[k, p] = -2
    for p in range(n_props):
        work[2, p] = work[1, p] if work[1, p] != -1 else work[0, p]
    return work


@njit(cache=True, inline="always")
def _combine_row(vals, r, i, expr_kind, expr_start, expr_count, expr_children):
    """AND (kind 2) / OR (kind 3) node `i` of ``vals[r]`` from its children."""
    want = expr_kind[i] == 3  # OR looks for a true child, AND for a false one
    out = not want
    for j in range(expr_start[i], expr_start[i] + expr_count[i]):
        if vals[r, expr_children[j]] == want:
            out = want
            break
    vals[r, i] = out


@njit(cache=True, inline="always")
def _facts_into(outcome_of, work, expr_kind, expr_a, expr_b, expr_start, expr_count, expr_children, vals):
    """Every fact-expression node into ``vals[0]`` (status in ``work[2]``; children precede parents)."""
    for i in range(expr_kind.shape[0]):
        k = expr_kind[i]
        if k == 0:
            vals[0, i] = work[2, expr_a[i]] == expr_b[i]
        elif k == 1:
            vals[0, i] = outcome_of[expr_a[i]] == expr_b[i]
        else:
            _combine_row(vals, 0, i, expr_kind, expr_start, expr_count, expr_children)
    return vals


@njit(cache=True, inline="always")
def _holds_row(root, mentions, row, vals, work):
    """Does expression `root` hold (facts ``vals[0]``, status ``work[2]``)?

    False when it mentions a contradicted proposition (``mentions[row]``).
    """
    if root < 0:
        return True
    for p in range(mentions.shape[1]):
        if mentions[row, p] and work[2, p] == -2:
            return False
    return vals[0, root]


@njit(cache=True, inline="always")
def _reach_into(outcome_of, admitted, est_prop, est_value, ek, ea, eb, es, ec, ech, action_req, work, can, vals,
                flags):
    """Reachable actions into ``flags[1]`` (see :func:`reachable_actions`); status in ``work[2]``."""
    P, n_values = can.shape
    for p in range(P):
        for v in range(n_values):
            can[p, v] = False
        if work[2, p] >= 0:
            can[p, work[2, p]] = True
    for o in range(outcome_of.shape[0]):
        if outcome_of[o] >= 0 or not admitted[o] or est_prop[o] < 0:
            continue
        for y in range(est_value.shape[1]):
            if est_value[o, y] >= 0:
                can[est_prop[o], est_value[o, y]] = True
    for i in range(ek.shape[0]):
        k = ek[i]
        if k == 0:
            vals[1, i] = can[ea[i], eb[i]]
        elif k == 1:
            vals[1, i] = outcome_of[ea[i]] == eb[i] or (outcome_of[ea[i]] < 0 and admitted[ea[i]])
        else:
            _combine_row(vals, 1, i, ek, es, ec, ech)
    for a in range(action_req.shape[0]):
        flags[1, a] = action_req[a] < 0 or vals[1, action_req[a]]
    return flags


@njit(cache=True)
def established_status(outcome_of, est_prop, est_kind, est_value, n_props):
    """Established value of each proposition at a node.

    Returns ``int64[P]``: the value index, -1 when nothing establishes it, -2
    when current establishing sources disagree (contradicted). Superseding
    sources take precedence over establishing ones whatever the order they were
    seen in (so the status is a function of the set of pairs); two superseding
    sources that disagree contradict each other.
    """
    work = np.empty((3, n_props), dtype=np.int64)
    _status_into(outcome_of, est_prop, est_kind, est_value, work)
    return work[2].copy()


@njit(cache=True)
def eval_facts(outcome_of, status, expr_kind, expr_a, expr_b, expr_start, expr_count, expr_children):
    """Truth of every fact-expression node (``bool[N]``), children first."""
    work = np.empty((3, status.shape[0]), dtype=np.int64)
    work[2] = status
    vals = np.zeros((2, expr_kind.shape[0]), dtype=np.bool_)
    _facts_into(outcome_of, work, expr_kind, expr_a, expr_b, expr_start, expr_count, expr_children, vals)
    return vals[0].copy()


@njit(cache=True)
def _node_facts(outcome_of, facts):
    """Status buffer and fact values at a node (the allocation path of the wrappers)."""
    (est_prop, est_kind, est_value, ek, ea, eb, es, ec, ech, action_req, obs_req, amen, omen) = facts
    work = np.empty((3, amen.shape[1]), dtype=np.int64)
    _status_into(outcome_of, est_prop, est_kind, est_value, work)
    vals = np.zeros((2, ek.shape[0]), dtype=np.bool_)
    _facts_into(outcome_of, work, ek, ea, eb, es, ec, ech, vals)
    return work, vals


@njit(cache=True)
def permitted_actions(outcome_of, facts):
    """``bool[A]``: actions whose evidence requirements hold at the node."""
    work, vals = _node_facts(outcome_of, facts)
    action_req, amen = facts[9], facts[11]
    out = np.empty(action_req.shape[0], dtype=np.bool_)
    for a in range(action_req.shape[0]):
        out[a] = _holds_row(action_req[a], amen, a, vals, work)
    return out


@njit(cache=True)
def available_observations(outcome_of, facts):
    """``bool[O]``: observations whose preconditions hold at the node."""
    work, vals = _node_facts(outcome_of, facts)
    obs_req, omen = facts[10], facts[12]
    out = np.empty(obs_req.shape[0], dtype=np.bool_)
    for o in range(obs_req.shape[0]):
        out[o] = _holds_row(obs_req[o], omen, o, vals, work)
    return out


@njit(cache=True)
def node_facts(outcome_of, facts):
    """Status, permitted actions and available observations at a node, in one pass.

    Returns ``(status int64[P], permitted bool[A], available bool[O])``: what
    :func:`established_status`, :func:`permitted_actions` and
    :func:`available_observations` give, with the facts evaluated once.
    """
    work, vals = _node_facts(outcome_of, facts)
    action_req, obs_req, amen, omen = facts[9], facts[10], facts[11], facts[12]
    permitted = np.empty(action_req.shape[0], dtype=np.bool_)
    for a in range(action_req.shape[0]):
        permitted[a] = _holds_row(action_req[a], amen, a, vals, work)
    available = np.empty(obs_req.shape[0], dtype=np.bool_)
    for o in range(obs_req.shape[0]):
        available[o] = _holds_row(obs_req[o], omen, o, vals, work)
    return work[2].copy(), permitted, available


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
    work = np.empty((3, amen.shape[1]), dtype=np.int64)
    _status_into(outcome_of, est_prop, est_kind, est_value, work)
    can = np.zeros((amen.shape[1], n_values), dtype=np.bool_)
    vals = np.zeros((2, ek.shape[0]), dtype=np.bool_)
    flags = np.zeros((2, action_req.shape[0]), dtype=np.bool_)
    _reach_into(outcome_of, admitted, est_prop, est_value, ek, ea, eb, es, ec, ech, action_req, work, can, vals, flags)
    return flags[1].copy()


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
