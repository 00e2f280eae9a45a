"""Compile a :class:`~planner.model.Domain` into flat, read-only numpy arrays.

This is the only module where names become indices. Axis letters used in every
docstring of the project:

- ``S``: joint states (one value per proposition, then one per lineage variable);
- ``V``: state variables (the ``P`` propositions first, then lineage variables);
- ``P``: propositions; ``A``: decision actions; ``O``: observations;
- ``Y``: outcome slots, ``max_o n_outcomes[o]``; outcome ``k < n_outcomes[o]-1``
  is the k-th declared outcome of o and ``n_outcomes[o]-1`` is ``unavailable``;
  slots past ``n_outcomes[o]`` have probability 0;
- ``D``: budget dimensions; ``N``: fact-expression nodes; ``K``: child links.

Fact tables: :attr:`CompiledDomain.facts` is a :class:`lookahead.layout.Facts`
(named arrays, passed whole to kernels); its codes are named in
:mod:`lookahead.layout`.
"""

from __future__ import annotations

import itertools
import math

import attrs
import numpy as np

from lookahead.layout import (
    EST_ESTABLISH,
    EST_NONE,
    EST_SUPERSEDE,
    EXPR_AND,
    EXPR_ESTABLISHED,
    EXPR_OR,
    EXPR_RETURNED,
    NO_EXPR,
    NO_PROP,
    NO_VALUE,
    Facts,
)
from planner.errors import CallerError
from planner.model import UNAVAILABLE, AllOf, AnyOf, Established, Returned

__all__ = ["CompiledDomain", "compile_domain"]


def _ro(a, dtype):
    a = np.ascontiguousarray(a, dtype=dtype)
    a.setflags(write=False)
    return a


@attrs.frozen(kw_only=True, eq=False)
class CompiledDomain:
    """A domain as arrays (see the module docstring for the axes).

    Attributes
    ----------
    states : int64[S, V]
        Value index of each variable in each joint state.
    prior : float64[S]
    loss : float64[A, S]
    lik : float64[O, Y, S]
        P(outcome y of o | state s), ``unavailable`` included.
    n_outcomes : int64[O]
        Declared outcomes + 1 (``unavailable``).
    cost : float64[O, D]
    weights : float64[D]
    penalty : float64[O]
        ``cost @ weights``: the cost in loss units, C_w(c(o)).
    limits : float64[D]
        Hard limits, ``inf`` where none.
    action_escalate : bool[A]
    relevance : float64[O]
        Static relevance (``nan`` where none declared).
    lineage : int64[O]
        Lineage variable index in ``V`` (-1: none).
    facts : lookahead.layout.Facts
        Fact tables.
    """

    domain: object  # planner.domain.Domain
    prop_names: tuple
    prop_values: tuple
    var_names: tuple
    states: np.ndarray
    prior: np.ndarray
    action_names: tuple
    action_escalate: np.ndarray
    loss: np.ndarray
    obs_names: tuple
    outcome_names: tuple
    n_outcomes: np.ndarray
    lik: np.ndarray
    dims: tuple
    cost: np.ndarray
    weights: np.ndarray
    penalty: np.ndarray
    limits: np.ndarray
    relevance: np.ndarray
    lineage: np.ndarray
    facts: Facts
    _memo: dict = attrs.field(factory=dict, init=False, eq=False, repr=False)

    @property
    def n_states(self) -> int:
        return self.states.shape[0]

    @property
    def n_values(self) -> int:
        """The largest number of values of a proposition (the kernels' reachability table width)."""
        return max(len(v) for v in self.prop_values)

    def with_limits(self, overrides) -> "CompiledDomain":
        """This domain with some hard limits replaced (``((dimension, limit), ...)`` or a mapping).

        Raises :class:`~planner.errors.CallerError` naming an undeclared dimension.

        >>> import planner
        >>> c = compile_domain(planner.load_domain("payment_release"))
        >>> c.with_limits({"calls": 1}).limits.tolist()
        [1.0, 500.0, 500.0, 0.5]
        """
        items = list(overrides.items() if isinstance(overrides, dict) else overrides)
        if not items:
            return self
        new = self.limits.copy()
        for dim, value in items:
            if dim not in self.dims:
                raise CallerError(f"limits.{dim}: unknown budget dimension (declared: {', '.join(self.dims) or 'none'})")
            new[self.dims.index(dim)] = float(value)
        new.setflags(write=False)
        return attrs.evolve(self, limits=new)

    def memo(self, key: str, build):
        """A value derived from this domain alone, built once by ``build(self)`` and kept here.

        The precondition graph is kept this way: every node of a session asks
        for it, and it depends only on the domain.
        """
        try:
            return self._memo[key]
        except KeyError:
            value = self._memo[key] = build(self)
            return value

    def obs_index(self, name: str) -> int:
        """Index of observation `name` (KeyError with the name if unknown)."""
        try:
            return self.obs_names.index(name)
        except ValueError:
            raise KeyError(name) from None

    def outcome_index(self, o: int, outcome: str) -> int:
        """Index of `outcome` of observation `o` (KeyError if it cannot occur)."""
        try:
            return self.outcome_names[o].index(outcome)
        except ValueError:
            raise KeyError(outcome) from None

    def marginals(self, belief) -> dict:
        """Belief over joint states -> ``{proposition: {value: probability}}``."""
        out = {}
        for p, name in enumerate(self.prop_names):
            m = np.zeros(len(self.prop_values[p]))
            np.add.at(m, self.states[:, p], belief)
            out[name] = {v: float(m[i]) for i, v in enumerate(self.prop_values[p])}
        return out


def _loss_value(loss, state: dict) -> float:
    if loss.constant is not None:
        return loss.constant
    if loss.tables is not None:
        return sum(dict(table)[state[p]] for p, table in loss.tables)
    for case in loss.cases:
        if all(state[p] == v for p, v in case.when):
            return case.value
    raise AssertionError("loader guarantees that cases cover every state")


def _lik_dist(lik, state: dict) -> dict:
    for case in lik.cases:
        if all(state[p] == v for p, v in case.when):
            return dict(case.value)
    raise AssertionError("loader guarantees that cases cover every state")


class _ExprBuilder:
    def __init__(self, prop_index, prop_values, obs_index, outcome_names):
        self.kind, self.a, self.b, self.start, self.count, self.children = [], [], [], [], [], []
        self.prop_index, self.prop_values = prop_index, prop_values
        self.obs_index, self.outcome_names = obs_index, outcome_names

    def add(self, expr, mentions: np.ndarray) -> int:
        if isinstance(expr, (AllOf, AnyOf)):
            kids = [self.add(t, mentions) for t in expr.terms]
            node = self._node(EXPR_AND if isinstance(expr, AllOf) else EXPR_OR, -1, -1)
            self.start[node] = len(self.children)
            self.count[node] = len(kids)
            self.children.extend(kids)
            return node
        if isinstance(expr, Established):
            p = self.prop_index[expr.proposition]
            mentions[p] = True
            return self._node(EXPR_ESTABLISHED, p, self.prop_values[p].index(expr.value))
        assert isinstance(expr, Returned)
        o = self.obs_index[expr.observation]
        return self._node(EXPR_RETURNED, o, self.outcome_names[o].index(expr.outcome))

    def _node(self, kind, a, b) -> int:
        self.kind.append(kind)
        self.a.append(a)
        self.b.append(b)
        self.start.append(0)
        self.count.append(0)
        return len(self.kind) - 1


def compile_domain(domain) -> CompiledDomain:
    """Compile `domain` to arrays.

    Lineage groups with two or more members get one latent variable each (the
    shared record's report), whose conditional distribution is the group's
    likelihood; members then read it exactly (subject to their own failure
    rate), so a second copy carries nothing the first did not.

    Examples
    --------
    >>> import planner
    >>> c = compile_domain(planner.load_domain("payment_release"))
    >>> c.lik.shape, c.loss.shape, c.obs_names[0]
    ((4, 3, 2), (2, 2), 'approval_registry')
    >>> round(float(c.penalty[0]), 3)
    0.253
    """
    prop_names = tuple(p.name for p in domain.propositions)
    prop_values = tuple(tuple(p.values) for p in domain.propositions)
    observations = domain.observations
    obs_names = tuple(o.name for o in observations)
    groups = _lineage_groups(observations)
    var_names = prop_names + tuple(f"lineage:{g}" for g in groups)
    states, prior, world_of, worlds = _joint_states(domain, prop_names, prop_values, groups)
    S = len(states)
    loss = np.empty((len(domain.actions), S))
    for a, act in enumerate(domain.actions):
        for s in range(S):
            loss[a, s] = _loss_value(act.loss, worlds[world_of[s]])
    action_escalate = np.array([act.kind == "escalate" for act in domain.actions], dtype=np.bool_)
    outcome_names = tuple(tuple(o.outcomes) + (UNAVAILABLE,) for o in observations)
    n_outcomes = np.array([len(n) for n in outcome_names], dtype=np.int64)
    group_var = {g: len(prop_names) + i for i, g in enumerate(groups)}
    lik, lineage = _likelihoods(observations, n_outcomes, states, world_of, worlds, group_var)
    dims, cost, weights, penalty, limits = _budget(domain.budget, observations)
    facts = _fact_tables(domain, prop_names, prop_values, obs_names, outcome_names, lik.shape[1])
    relevance = np.array([np.nan if o.relevance is None else o.relevance for o in observations], dtype=np.float64)
    return CompiledDomain(
        domain=domain, prop_names=prop_names, prop_values=prop_values, var_names=var_names,
        states=_ro(states, np.int64), prior=_ro(prior, np.float64),
        action_names=tuple(a.name for a in domain.actions), action_escalate=_ro(action_escalate, np.bool_),
        loss=_ro(loss, np.float64), obs_names=obs_names, outcome_names=outcome_names,
        n_outcomes=_ro(n_outcomes, np.int64), lik=_ro(lik, np.float64), dims=dims,
        cost=_ro(cost, np.float64), weights=_ro(weights, np.float64),
        penalty=_ro(penalty, np.float64), limits=_ro(limits, np.float64),
        relevance=_ro(relevance, np.float64), lineage=_ro(lineage, np.int64), facts=facts,
    )


def _lineage_groups(observations) -> dict:
    """Lineage groups with at least two members (each gets a latent variable): ``{group: [members]}``."""
    members: dict[str, list] = {}
    for o in observations:
        if o.lineage is not None:
            members.setdefault(o.lineage, []).append(o)
    return {g: ms for g, ms in members.items() if len(ms) >= 2}


def _joint_states(domain, prop_names, prop_values, groups: dict):
    """``(states int64[S, V], prior float64[S], world_of[S], worlds)``: the joint states, lineage variables last.

    ``worlds[w]`` is world state w as ``{proposition: value}``; ``world_of[s]``
    the world state of joint state s (the propositions' part).
    """
    world_states = list(itertools.product(*(range(len(v)) for v in prop_values)))
    worlds = [{prop_names[p]: prop_values[p][vi] for p, vi in enumerate(ws)} for ws in world_states]
    if domain.prior.marginals is not None:
        marg = {p: dict(dist) for p, dist in domain.prior.marginals}
        wprior = [math.prod(marg[p][st[p]] for p in prop_names) for st in worlds]
    else:
        table = {tuple(sorted(c.when)): c.value for c in domain.prior.joint}
        wprior = [table.get(tuple(sorted(st.items())), 0.0) for st in worlds]
    firsts = [ms[0] for ms in groups.values()]
    latent_dists = [[_lik_dist(first.likelihood, st) for st in worlds] for first in firsts]  # [group][world]
    latent_ranges = [range(len(first.outcomes)) for first in firsts]
    states, prior, world_of = [], [], []
    for w, ws in enumerate(world_states):
        for combo in itertools.product(*latent_ranges):
            p = wprior[w]
            for gi, l in enumerate(combo):
                p *= latent_dists[gi][w].get(firsts[gi].outcomes[l], 0.0)
            states.append(tuple(ws) + tuple(combo))
            prior.append(p)
            world_of.append(w)
    S = len(states)
    states_arr = np.array(states, dtype=np.int64).reshape(S, len(prop_names) + len(groups))
    prior_arr = np.array(prior, dtype=np.float64)
    return states_arr, prior_arr / prior_arr.sum(), world_of, worlds


def _likelihoods(observations, n_outcomes, states, world_of, worlds, group_var: dict):
    """``(lik float64[O, Y, S], lineage int64[O])``; a lineage member reads its latent variable exactly."""
    O, S = len(observations), len(states)
    Y = int(n_outcomes.max()) if O else 1
    lik = np.zeros((O, Y, S))
    lineage = np.full(O, -1, dtype=np.int64)
    for oi, o in enumerate(observations):
        f = o.failure_rate
        k = len(o.outcomes)
        if o.lineage in group_var:
            v = group_var[o.lineage]
            lineage[oi] = v
            for s in range(S):
                lik[oi, states[s, v], s] = 1.0 - f
        else:
            for s in range(S):
                dist = _lik_dist(o.likelihood, worlds[world_of[s]])
                for y, name in enumerate(o.outcomes):
                    lik[oi, y, s] = (1.0 - f) * dist.get(name, 0.0)
        lik[oi, k, :] = f
    return lik, lineage


def _budget(budget, observations):
    """``(dims, cost float64[O, D], weights float64[D], penalty float64[O], limits float64[D])``."""
    dims = tuple(budget.dimensions)
    O, D = len(observations), len(dims)
    lim_map, w_map = dict(budget.limits), dict(budget.weights)
    limits = np.array([lim_map.get(d, np.inf) for d in dims], dtype=np.float64)
    weights = np.array([w_map.get(d, 0.0) for d in dims], dtype=np.float64)
    cost = np.zeros((O, D))
    for oi, o in enumerate(observations):
        for d, c in o.cost:
            cost[oi, dims.index(d)] = c
    penalty = cost @ weights if D else np.zeros(O)
    return dims, cost, weights, penalty, limits


def _fact_tables(domain, prop_names, prop_values, obs_names, outcome_names, Y: int) -> Facts:
    """The establishing tables and the compiled requirement / precondition expressions."""
    observations = domain.observations
    O, A, P = len(observations), len(domain.actions), len(prop_names)
    prop_index = {n: i for i, n in enumerate(prop_names)}
    obs_index = {n: i for i, n in enumerate(obs_names)}
    est_prop = np.full(O, NO_PROP, dtype=np.int64)
    est_kind = np.full(O, EST_NONE, dtype=np.int64)
    est_value = np.full((O, Y), NO_VALUE, dtype=np.int64)
    for oi, o in enumerate(observations):
        if o.role in ("establish", "supersede"):
            p = prop_index[o.bears_on]
            est_prop[oi] = p
            est_kind[oi] = EST_ESTABLISH if o.role == "establish" else EST_SUPERSEDE
            for y_name, v_name in o.establishes:
                est_value[oi, o.outcomes.index(y_name)] = prop_values[p].index(v_name)
    builder = _ExprBuilder(prop_index, prop_values, obs_index, outcome_names)
    action_mentions = np.zeros((A, P), dtype=np.bool_)
    obs_mentions = np.zeros((O, P), dtype=np.bool_)
    action_req = np.array([builder.add(act.requires, action_mentions[a]) if act.requires is not None else NO_EXPR
                           for a, act in enumerate(domain.actions)], dtype=np.int64)
    obs_req = np.array([builder.add(o.requires, obs_mentions[oi]) if o.requires is not None else NO_EXPR
                        for oi, o in enumerate(observations)], dtype=np.int64)
    i64 = np.int64
    return Facts(
        est_prop=_ro(est_prop, i64), est_kind=_ro(est_kind, i64), est_value=_ro(est_value, i64),
        expr_kind=_ro(builder.kind, i64), expr_a=_ro(builder.a, i64), expr_b=_ro(builder.b, i64),
        expr_start=_ro(builder.start, i64), expr_count=_ro(builder.count, i64),
        expr_children=_ro(np.array(builder.children, dtype=i64), i64),
        action_req=_ro(action_req, i64), obs_req=_ro(obs_req, i64),
        action_mentions=_ro(action_mentions, np.bool_), obs_mentions=_ro(obs_mentions, np.bool_),
    )
