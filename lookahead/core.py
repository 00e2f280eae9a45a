"""Numba kernels for one decision node: facts, permitted actions, belief, risk, EVSI.

Arrays in, arrays out; no Python objects inside a kernel. The fact tables and
their codes are named once, in :mod:`lookahead.layout` (:class:`~lookahead.layout.Facts`);
axis letters: ``S`` states, ``A`` actions, ``O`` observations, ``Y`` outcome
slots, ``P`` propositions, ``D`` budget dimensions, ``N`` expression nodes.

A *node* is the set of (observation, outcome) pairs seen so far, held as
``outcome_of : int64[O]`` (-1 where not taken). Everything else at a node
(facts, permitted actions, available observations, budget spent, belief) is a
function of that set.
"""

from __future__ import annotations

import numpy as np
from lookahead.jit import kernel

from lookahead.layout import (
    EST_SUPERSEDE,
    EXPR_ESTABLISHED,
    EXPR_OR,
    EXPR_RETURNED,
    NO_EXPR,
    NOT_TAKEN,
    STATUS_CONTRADICTED,
    STATUS_NONE,
)

__all__ = [
    "TIE",
    "BUDGET_TOL",
    "established_status",
    "permitted_actions",
    "available_observations",
    "node_facts",
    "affordable",
    "limit_tol",
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


# The ``_*_into`` helpers write into caller-owned buffers: the search kernels (lookahead.search,
# lookahead.bounded) call them at every node, where allocation would dominate a node's cost of a few
# hundred nanoseconds. The three large ones are kernels of their own (``nrt=False``: they allocate and
# return nothing), compiled once and called, not ``inline="always"``: numba inlines at the level of its
# own IR and types every inlined copy again, which made ``search._search`` (two copies of each) the
# largest compile of ``planner warm``; called, its compile fell from about 21 to 12 s of CPU, with
# depth-first and bounded searches within the machine's noise (0.96-1.12x, bench/results/compile.md).
# The small ``_combine_row`` and ``_holds_row`` stay inlined. The public kernels below wrap them.


@kernel(nrt=False)
def _status_into(outcome_of, est_prop, est_kind, est_value, work):
    """Established status into ``work[2]`` (``work : int64[3, P]``; rows 0, 1 are scratch).

    Row 0 gathers establishing sources, row 1 superseding ones; superseding
    sources take precedence whatever the order they were seen in.
    """
    n_props = work.shape[1]
    for p in range(n_props):
        work[0, p] = STATUS_NONE
        work[1, p] = STATUS_NONE
    for o in range(outcome_of.shape[0]):
        y = outcome_of[o]
        if y < 0:  # not taken
            continue
        p = est_prop[o]
        if p < 0:  # establishes nothing
            continue
        v = est_value[o, y]
        if v < 0:  # this outcome establishes no value
            continue
        k = 1 if est_kind[o] == EST_SUPERSEDE else 0
        if work[k, p] == STATUS_NONE:
            work[k, p] = v
        elif work[k, p] != v:
            work[k, p] = STATUS_CONTRADICTED
    for p in range(n_props):
        work[2, p] = work[1, p] if work[1, p] != STATUS_NONE else work[0, p]


# The AND / OR combination is written without a `break`, and the helpers return nothing: inlined
# into the search loops, an early exit from a loop (or a returned array) makes numba's
# reference-count pruning give up, which costs about six increfs and decrefs of the array
# arguments a node. Written this way they prune to none.


@kernel(inline="always")
def _combine_row(vals, r, i, expr_kind, expr_start, expr_count, expr_children):
    """AND / OR node `i` of ``vals[r]`` from its children."""
    want = expr_kind[i] == EXPR_OR  # OR looks for a true child, AND for a false one
    out = not want
    j = expr_start[i]
    end = j + expr_count[i]
    while j < end and out != want:
        if vals[r, expr_children[j]] == want:
            out = want
        j += 1
    vals[r, i] = out


@kernel(nrt=False)
def _facts_into(outcome_of, work, expr_kind, expr_a, expr_b, expr_start, expr_count, expr_children, vals):
    """Every fact-expression node into ``vals[0]`` (status in ``work[2]``; children precede parents)."""
    for i in range(expr_kind.shape[0]):
        k = expr_kind[i]
        if k == EXPR_ESTABLISHED:
            vals[0, i] = work[2, expr_a[i]] == expr_b[i]
        elif k == EXPR_RETURNED:
            vals[0, i] = outcome_of[expr_a[i]] == expr_b[i]
        else:
            _combine_row(vals, 0, i, expr_kind, expr_start, expr_count, expr_children)


@kernel(inline="always")
def _holds_row(root, mentions, row, vals, work):
    """Does expression `root` hold (facts ``vals[0]``, status ``work[2]``)?

    False when it mentions a contradicted proposition (``mentions[row]``).
    """
    if root == NO_EXPR:
        return True
    for p in range(mentions.shape[1]):
        if mentions[row, p] and work[2, p] == STATUS_CONTRADICTED:
            return False
    return vals[0, root]


@kernel(nrt=False)
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
        if outcome_of[o] != NOT_TAKEN or not admitted[o] or est_prop[o] < 0:
            continue
        for y in range(est_value.shape[1]):
            if est_value[o, y] >= 0:
                can[est_prop[o], est_value[o, y]] = True
    for i in range(ek.shape[0]):
        k = ek[i]
        if k == EXPR_ESTABLISHED:
            vals[1, i] = can[ea[i], eb[i]]
        elif k == EXPR_RETURNED:
            vals[1, i] = outcome_of[ea[i]] == eb[i] or (outcome_of[ea[i]] == NOT_TAKEN and admitted[ea[i]])
        else:
            _combine_row(vals, 1, i, ek, es, ec, ech)
    for a in range(action_req.shape[0]):
        flags[1, a] = action_req[a] == NO_EXPR or vals[1, action_req[a]]


@kernel(writable=("outcome_of",))
def established_status(outcome_of, est_prop, est_kind, est_value, n_props):
    """Established value of each proposition at a node.

    Returns ``int64[P]``: the value index, :data:`~lookahead.layout.STATUS_NONE`
    when nothing establishes it, :data:`~lookahead.layout.STATUS_CONTRADICTED`
    when current establishing sources disagree. Superseding
    sources take precedence over establishing ones whatever the order they were
    seen in (so the status is a function of the set of pairs); two superseding
    sources that disagree contradict each other.
    """
    work = np.empty((3, n_props), dtype=np.int64)
    _status_into(outcome_of, est_prop, est_kind, est_value, work)
    return work[2].copy()


@kernel
def _node_facts(outcome_of, facts):
    """Status buffer and fact values at a node (the allocation path of the wrappers)."""
    work = np.empty((3, facts.action_mentions.shape[1]), dtype=np.int64)
    _status_into(outcome_of, facts.est_prop, facts.est_kind, facts.est_value, work)
    vals = np.zeros((2, facts.expr_kind.shape[0]), dtype=np.bool_)
    _facts_into(outcome_of, work, facts.expr_kind, facts.expr_a, facts.expr_b, facts.expr_start, facts.expr_count,
                facts.expr_children, vals)
    return work, vals


@kernel(inline="always")
def _holds_all(req, mentions, vals, work):
    """``bool[len(req)]``: which of the expressions rooted at `req` hold (status ``work[2]``, facts ``vals[0]``)."""
    out = np.empty(req.shape[0], dtype=np.bool_)
    for i in range(req.shape[0]):
        out[i] = _holds_row(req[i], mentions, i, vals, work)
    return out


@kernel(writable=("outcome_of",))
def permitted_actions(outcome_of, facts):
    """``bool[A]``: actions whose evidence requirements hold at the node."""
    work, vals = _node_facts(outcome_of, facts)
    return _holds_all(facts.action_req, facts.action_mentions, vals, work)


@kernel(writable=("outcome_of",))
def available_observations(outcome_of, facts):
    """``bool[O]``: observations whose preconditions hold at the node."""
    work, vals = _node_facts(outcome_of, facts)
    return _holds_all(facts.obs_req, facts.obs_mentions, vals, work)


@kernel(writable=("outcome_of",))
def node_facts(outcome_of, facts):
    """Status, permitted actions and available observations at a node, in one pass.

    Returns ``(status int64[P], permitted bool[A], available bool[O])``: what
    :func:`established_status`, :func:`permitted_actions` and
    :func:`available_observations` give, with the facts evaluated once.
    """
    work, vals = _node_facts(outcome_of, facts)
    permitted = _holds_all(facts.action_req, facts.action_mentions, vals, work)
    available = _holds_all(facts.obs_req, facts.obs_mentions, vals, work)
    return work[2].copy(), permitted, available


@kernel(writable=("spent",))
def affordable(o, spent, cost, limits):
    """True when acquiring `o` keeps every dimension within its hard limit."""
    for d in range(limits.shape[0]):
        if spent[d] + cost[o, d] > limit_tol(limits[d]):
            return False
    return True


@kernel(inline="always")
def limit_tol(limit):
    """A hard limit with the budget tolerance: what ``spent + cost`` may reach (``inf`` stays ``inf``).

    >>> limit_tol(0.3) >= 0.1 + 0.2
    True
    """
    return limit + BUDGET_TOL


@kernel(writable=("belief", "permitted"))
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


@kernel(writable=("belief",))
def outcome_probs(belief, lik_o, n_y, out):
    """P(y | b, o) for y < n_y into ``out : float64[Y]``; ``lik_o : float64[Y, S]``."""
    S = belief.shape[0]
    for y in range(n_y):
        p = 0.0
        for s in range(S):
            p += belief[s] * lik_o[y, s]
        out[y] = p
    return out


@kernel(writable=("belief",))
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


@kernel(writable=("belief", "outcome_of"))
def evsi(o, belief, outcome_of, lik, n_outcomes, loss, facts):
    """EVSI(o | b) = R(b) - sum_y P(y | b, o) R(b_y), facts updated per outcome.

    Returns ``(evsi, expected_posterior_risk)``.
    """
    # writable copies, whatever the caller's: the kernels it calls then compile for one signature
    child = outcome_of.copy()
    post = belief.copy()
    r0, _ = bayes_risk(post, loss, permitted_actions(child, facts))
    expected = 0.0
    for y in range(n_outcomes[o]):
        z = posterior(belief, lik[o, y], post)
        if z <= 0.0:
            continue
        child[o] = y
        r, _ = bayes_risk(post, loss, permitted_actions(child, facts))
        expected += z * r
    return r0 - expected, expected


@kernel(writable=("belief", "outcome_of", "mask"))
def evsi_all(belief, outcome_of, lik, n_outcomes, loss, facts, mask, out):
    """EVSI of every observation where ``mask : bool[O]`` is set (``nan`` elsewhere)."""
    for o in range(mask.shape[0]):
        if mask[o]:
            out[o], _ = evsi(o, belief, outcome_of, lik, n_outcomes, loss, facts)
        else:
            out[o] = np.nan
    return out


@kernel(writable=("outcome_of", "admitted"))
def reachable_actions(outcome_of, admitted, facts, n_values):
    """``bool[A]``: actions that admissible evidence could still permit (an over-approximation).

    A leaf "p established as v" may become true if it holds now or some
    untaken admitted observation can establish v; "o returned y" if it holds
    now or o is untaken and admitted. Preconditions, budgets and contradictions
    are ignored, which only enlarges the set: the EVPI built on it stays an
    upper bound of every EVSI.
    """
    f = facts
    n_props = f.action_mentions.shape[1]
    work = np.empty((3, n_props), dtype=np.int64)
    _status_into(outcome_of, f.est_prop, f.est_kind, f.est_value, work)
    can = np.zeros((n_props, n_values), dtype=np.bool_)
    vals = np.zeros((2, f.expr_kind.shape[0]), dtype=np.bool_)
    flags = np.zeros((2, f.action_req.shape[0]), dtype=np.bool_)
    _reach_into(outcome_of, admitted, f.est_prop, f.est_value, f.expr_kind, f.expr_a, f.expr_b, f.expr_start,
                f.expr_count, f.expr_children, f.action_req, work, can, vals, flags)
    return flags[1].copy()


@kernel(writable=("belief", "outcome_of", "admitted"))
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
