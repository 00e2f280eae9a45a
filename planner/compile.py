"""Compile a :class:`~planner.model.domain.Domain` into flat, read-only numpy arrays.

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
from planner.model.parts import ESTABLISHING, UNAVAILABLE, AllOf, AnyOf, Established, Returned

__all__ = ["CompiledDomain", "compile_domain", "case_table", "LikelihoodLayout", "likelihood_layout", "assemble",
           "same_structure"]


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

    domain: object  # planner.model.domain.Domain
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


def case_table(cases, prop_pos: dict, value_pos: list) -> tuple:
    """The first case matching each combination of the values of the propositions the cases mention.

    Parameters
    ----------
    cases : sequence of planner.model.parts.Case
        Matched in order (first match wins); ``when`` pairs ``(proposition, value)``.
    prop_pos : dict
        ``{proposition: index}`` in declaration order.
    value_pos : list of dict
        ``value_pos[p] = {value: index}`` for each proposition.

    Returns
    -------
    axes : list of int
        The propositions the cases mention, in declaration order.
    table : int64 array, one axis per proposition in `axes`
        The index of the first matching case (-1: none).

    Notes
    -----
    Cases are painted last to first, each over the box of combinations it
    matches, so earlier cases win; the work is at most cases x combinations of
    the mentioned propositions (the loader caps it, ``MAX_CASE_CHECKS``), never
    cases x joint states.

    >>> from planner.model.parts import Case
    >>> pos, vals = {"x": 0, "y": 1}, [{"a": 0, "b": 1}, {"u": 0, "v": 1, "w": 2}]
    >>> axes, t = case_table([Case(when={"y": "v"}, value=1), Case(when={}, value=2)], pos, vals)
    >>> axes, t.tolist()
    ([1], [1, 0, 1])
    """
    # A proposition of one value matches every state: no axis (and so at most
    # log2(combinations) axes, far below numpy's 64 dimensions).
    axes = sorted({prop_pos[p] for c in cases for p, _ in c.when if len(value_pos[prop_pos[p]]) > 1})
    where = {a: k for k, a in enumerate(axes)}
    table = np.full([len(value_pos[a]) for a in axes], -1, dtype=np.int64)
    for i in range(len(cases) - 1, -1, -1):
        box = [slice(None)] * len(axes)
        for p, v in cases[i].when:
            a = prop_pos[p]
            if a in where:
                box[where[a]] = value_pos[a][v]
        table[tuple(box)] = i
    return axes, table


def _case_of(cases, world: np.ndarray, sizes, prop_pos: dict, value_pos: list) -> np.ndarray:
    """int64[W]: the first case matching each world state (rows of `world`, value indices)."""
    axes, table = case_table(cases, prop_pos, value_pos)
    if not axes:
        return np.full(len(world), int(table), dtype=np.int64)
    code = np.zeros(len(world), dtype=np.int64)
    for a in axes:  # the mixed-radix index of the mentioned propositions' values
        code = code * sizes[a] + world[:, a]
    first = table.ravel()[code]
    assert (first >= 0).all(), "loader guarantees that cases cover every state"
    return first


def _case_probs(lik, outcomes) -> np.ndarray:
    """float64[C, k]: each case's probability of each declared outcome (0 where the row omits it)."""
    return np.array([[dict(case.value).get(y, 0.0) for y in outcomes] for case in lik.cases],
                    dtype=np.float64).reshape(len(lik.cases), len(outcomes))


class _ExprBuilder:
    def __init__(self, prop_index, value_pos, obs_index, outcome_pos):
        self.kind, self.a, self.b, self.start, self.count, self.children = [], [], [], [], [], []
        self.prop_index, self.value_pos = prop_index, value_pos
        self.obs_index, self.outcome_pos = obs_index, outcome_pos

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
            return self._node(EXPR_ESTABLISHED, p, self.value_pos[p][expr.value])
        assert isinstance(expr, Returned)
        o = self.obs_index[expr.observation]
        return self._node(EXPR_RETURNED, o, self.outcome_pos[o][expr.outcome])

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

    Every table is built with array operations over the joint states (no
    Python loop over states), so a domain under the loader's caps compiles in
    well under a second.

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
    ix = _Index(prop_names, prop_values)
    world, states, prior, world_of = _joint_states(domain, ix, groups)
    loss = np.empty((len(domain.actions), len(states)))
    for a, act in enumerate(domain.actions):
        loss[a] = _world_loss(act.loss, world, ix)[world_of]
    action_escalate = np.array([act.kind == "escalate" for act in domain.actions], dtype=np.bool_)
    outcome_names = tuple(tuple(o.outcomes) + (UNAVAILABLE,) for o in observations)
    n_outcomes = np.array([len(n) for n in outcome_names], dtype=np.int64)
    group_var = {g: len(prop_names) + i for i, g in enumerate(groups)}
    lik, lineage = _likelihoods(observations, n_outcomes, states, world, world_of, ix, group_var)
    dims, cost, weights, penalty, limits = _budget(domain.budget, observations)
    facts = _fact_tables(domain, prop_names, ix, obs_names, outcome_names, lik.shape[1])
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


class _Index:
    """Names -> indices for the propositions and their values (dict look-ups, not list searches)."""

    def __init__(self, prop_names, prop_values):
        self.prop_pos = {p: i for i, p in enumerate(prop_names)}
        self.value_pos = [{v: j for j, v in enumerate(vals)} for vals in prop_values]
        self.sizes = [len(vals) for vals in prop_values]

    def state_code(self, pairs) -> int:
        """The world-state index (C order) of a full assignment ``((proposition, value), ...)``."""
        vi = dict((self.prop_pos[p], self.value_pos[self.prop_pos[p]][v]) for p, v in pairs)
        code = 0
        for a, size in enumerate(self.sizes):
            code = code * size + vi[a]
        return code


def _grid(sizes) -> np.ndarray:
    """int64[prod(sizes), len(sizes)]: every combination of value indices, in C order (the last varies fastest).

    Mixed-radix digits of 0, 1, ...: the order of ``itertools.product``, for
    any number of variables (``numpy.unravel_index`` stops at 64).

    >>> _grid([2, 3]).tolist()
    [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    """
    n = math.prod(sizes)
    out = np.zeros((n, len(sizes)), dtype=np.int64)
    index = np.arange(n, dtype=np.int64)
    stride = 1
    for a in range(len(sizes) - 1, -1, -1):
        if sizes[a] > 1:  # a variable of one value stays 0
            out[:, a] = (index // stride) % sizes[a]
            stride *= sizes[a]
    return out


def _lineage_groups(observations) -> dict:
    """Lineage groups with at least two members (each gets a latent variable): ``{group: [members]}``."""
    members: dict[str, list] = {}
    for o in observations:
        if o.lineage is not None:
            members.setdefault(o.lineage, []).append(o)
    return {g: ms for g, ms in members.items() if len(ms) >= 2}


def _joint_states(domain, ix: _Index, groups: dict):
    """``(world int64[W, P], states int64[S, V], prior float64[S], world_of int64[S])``, lineage variables last.

    World states are in C order of the propositions' values (the order of
    ``itertools.product``); each world state is followed by its lineage
    combinations, also in C order. ``world_of[s]`` is the world state of joint
    state s. Products are taken in the same order, one factor at a time, as a
    loop over states would, so the numbers are the same to the bit.
    """
    sizes = ix.sizes
    W = math.prod(sizes)
    world = _grid(sizes)
    wprior = _world_prior(domain, ix, world)
    firsts = [ms[0] for ms in groups.values()]
    latent_sizes = [len(first.outcomes) for first in firsts]
    L = math.prod(latent_sizes)
    if not firsts:  # no lineage variable: the joint states are the world states
        return world, world, wprior / wprior.sum(), np.arange(W, dtype=np.int64)
    world_of = np.repeat(np.arange(W, dtype=np.int64), L)
    combos = _grid(latent_sizes)
    states = np.concatenate([world[world_of], np.tile(combos, (W, 1))], axis=1)
    prior = wprior[world_of]
    for gi, first in enumerate(firsts):
        probs = _case_probs(first.likelihood, first.outcomes)[_case_of(first.likelihood.cases, world, sizes,
                                                                       ix.prop_pos, ix.value_pos)]  # [W, k]
        prior = prior * probs[world_of, states[:, len(sizes) + gi]]
    return world, states, prior / prior.sum(), world_of


def _world_prior(domain, ix: _Index, world: np.ndarray) -> np.ndarray:
    """float64[W]: the prior of each world state, unnormalised (a product of marginals, or the joint table)."""
    if domain.prior.marginals is not None:
        marg = dict(domain.prior.marginals)
        wprior = None
        for p, name in enumerate(ix.prop_pos):
            dist = dict(marg[name])
            m = np.array([dist[v] for v in ix.value_pos[p]], dtype=np.float64)[world[:, p]]
            wprior = m if wprior is None else wprior * m
        return wprior
    wprior = np.zeros(len(world))
    for c in domain.prior.joint:
        wprior[ix.state_code(c.when)] = c.value
    return wprior


def _world_loss(loss, world: np.ndarray, ix: _Index) -> np.ndarray:
    """float64[W]: an action's loss in each world state (a table form sums in file order)."""
    if loss.constant is not None:
        return np.full(len(world), loss.constant, dtype=np.float64)
    if loss.tables is not None:
        total = None
        for p, table in loss.tables:
            a = ix.prop_pos[p]
            by_value = dict(table)
            row = np.array([by_value[v] for v in ix.value_pos[a]], dtype=np.float64)[world[:, a]]
            total = row if total is None else total + row
        return total
    values = np.array([c.value for c in loss.cases], dtype=np.float64)
    return values[_case_of(loss.cases, world, ix.sizes, ix.prop_pos, ix.value_pos)]


def _likelihoods(observations, n_outcomes, states, world, world_of, ix: _Index, group_var: dict):
    """``(lik float64[O, Y, S], lineage int64[O])``; a lineage member reads its latent variable exactly."""
    O, S = len(observations), len(states)
    Y = int(n_outcomes.max()) if O else 1
    lik = np.zeros((O, Y, S))
    lineage = np.full(O, -1, dtype=np.int64)
    cols = np.arange(S)
    for oi, o in enumerate(observations):
        f = o.failure_rate
        k = len(o.outcomes)
        if o.lineage in group_var:
            v = group_var[o.lineage]
            lineage[oi] = v
            lik[oi, states[:, v], cols] = 1.0 - f
        else:
            probs = _case_probs(o.likelihood, o.outcomes)[_case_of(o.likelihood.cases, world, ix.sizes,
                                                                   ix.prop_pos, ix.value_pos)]  # [W, k]
            lik[oi, :k, :] = ((1.0 - f) * probs).T[:, world_of]
        lik[oi, k, :] = f
    return lik, lineage


def _budget(budget, observations):
    """``(dims, cost float64[O, D], weights float64[D], penalty float64[O], limits float64[D])``."""
    dims = tuple(budget.dimensions)
    O, D = len(observations), len(dims)
    dim_pos = {d: i for i, d in enumerate(dims)}
    lim_map, w_map = dict(budget.limits), dict(budget.weights)
    limits = np.array([lim_map.get(d, np.inf) for d in dims], dtype=np.float64)
    weights = np.array([w_map.get(d, 0.0) for d in dims], dtype=np.float64)
    cost = np.zeros((O, D))
    for oi, o in enumerate(observations):
        for d, c in o.cost:
            cost[oi, dim_pos[d]] = c
    penalty = cost @ weights if D else np.zeros(O)
    return dims, cost, weights, penalty, limits


def _fact_tables(domain, prop_names, ix: _Index, obs_names, outcome_names, Y: int) -> Facts:
    """The establishing tables and the compiled requirement / precondition expressions."""
    observations = domain.observations
    O, A, P = len(observations), len(domain.actions), len(prop_names)
    prop_index = ix.prop_pos
    obs_index = {n: i for i, n in enumerate(obs_names)}
    outcome_pos = [{y: k for k, y in enumerate(names)} for names in outcome_names]
    est_prop = np.full(O, NO_PROP, dtype=np.int64)
    est_kind = np.full(O, EST_NONE, dtype=np.int64)
    est_value = np.full((O, Y), NO_VALUE, dtype=np.int64)
    for oi, o in enumerate(observations):
        if o.role in ESTABLISHING:
            p = prop_index[o.bears_on]
            est_prop[oi] = p
            est_kind[oi] = EST_ESTABLISH if o.role == "establish" else EST_SUPERSEDE
            for y_name, v_name in o.establishes:
                est_value[oi, outcome_pos[oi][y_name]] = ix.value_pos[p][v_name]
    builder = _ExprBuilder(prop_index, ix.value_pos, obs_index, outcome_pos)
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


# --------------------------------------------------------------------------
# Likelihood rows as parameters (calibration re-assembles the arrays from them)


@attrs.frozen(kw_only=True, eq=False)
class LikelihoodLayout:
    """Where each likelihood row (case) of each observation lands in ``prior`` and ``lik``.

    Attributes
    ----------
    case_of : int64[O, S]
        The case (row) of observation o's likelihood that holds in joint state s.
    latent : int64[O]
        The lineage variable (index in ``V``) an observation reads exactly (-1: none).
    groups : tuple of (int, int)
        ``(variable, first member)`` per lineage variable: the first member's
        rows are the variable's distribution given the world.
    world_prior : float64[S]
        The (unnormalised) prior of each joint state's world state, lineage factors excluded.
    """

    case_of: np.ndarray
    latent: np.ndarray
    groups: tuple
    world_prior: np.ndarray


def likelihood_layout(compiled) -> LikelihoodLayout:
    """The :class:`LikelihoodLayout` of a compiled domain (kept in its memo).

    >>> import planner
    >>> lay = likelihood_layout(compile_domain(planner.load_domain("payment_release")))
    >>> lay.case_of.tolist()
    [[0, 1], [0, 1], [0, 1], [0, 1]]
    """
    return compiled.memo("likelihood_layout", _build_layout)


def _build_layout(compiled) -> LikelihoodLayout:
    domain = compiled.domain
    ix = _Index(compiled.prop_names, compiled.prop_values)
    P = len(compiled.prop_names)
    world = _grid(ix.sizes)
    W = len(world)
    states = compiled.states
    L = len(states) // W
    world_of = np.repeat(np.arange(W, dtype=np.int64), L)
    case_of = np.zeros((len(compiled.obs_names), len(states)), dtype=np.int64)
    for oi, o in enumerate(domain.observations):
        case_of[oi] = _case_of(o.likelihood.cases, world, ix.sizes, ix.prop_pos, ix.value_pos)[world_of]
    first = {}
    for oi in range(len(compiled.obs_names)):
        v = int(compiled.lineage[oi])
        if v >= 0 and v not in first:
            first[v] = oi
    groups = tuple((v, first[v]) for v in range(P, len(compiled.var_names)))
    return LikelihoodLayout(case_of=_ro(case_of, np.int64), latent=compiled.lineage, groups=groups,
                            world_prior=_ro(_world_prior(domain, ix, world)[world_of], np.float64))


def assemble(compiled, rows, failure) -> tuple:
    """``(prior float64[S], lik float64[O, Y, S])`` from likelihood rows and failure rates.

    Parameters
    ----------
    rows : sequence of float64[C_o, k_o]
        Per observation, each case's probability of each declared outcome (a
        lineage member's rows are its group's; the first member's are used).
    failure : float64[O]
        The failure rates.

    With the declared rows this gives the compiled arrays back (the same
    operations, in the same order, as :func:`compile_domain`).

    >>> import planner
    >>> c = compile_domain(planner.load_domain("payment_release"))
    >>> rows = [np.array([[0.9, 0.1], [0.2, 0.8]])] + [np.array([[0.5, 0.5], [0.5, 0.5]])] * 3
    >>> prior, lik = assemble(c, rows, np.zeros(4))
    >>> lik[0, :, 1].tolist(), prior.tolist()
    ([0.2, 0.8, 0.0], [0.55, 0.45])
    """
    lay = likelihood_layout(compiled)
    states = compiled.states
    O, S = len(compiled.obs_names), len(states)
    lik = np.zeros((O, compiled.lik.shape[1], S))
    cols = np.arange(S)
    for o in range(O):
        f = float(failure[o])
        k = int(compiled.n_outcomes[o]) - 1
        v = int(lay.latent[o])
        if v >= 0:
            lik[o, states[:, v], cols] = 1.0 - f
        else:
            lik[o, :k, :] = ((1.0 - f) * np.asarray(rows[o], dtype=np.float64)[lay.case_of[o]]).T
        lik[o, k, :] = f
    prior = lay.world_prior.copy()
    for v, first in lay.groups:
        prior = prior * np.asarray(rows[first], dtype=np.float64)[lay.case_of[first], states[:, v]]
    return prior / prior.sum(), lik


def same_structure(model, truth) -> None:
    """Refuse (one-line PlannerError) a `truth` that differs from `model` in more than prior and likelihoods.

    Both are compiled domains: the same propositions and values, observations
    and outcomes, lineage variables and actions (losses, costs and gates are
    read from the model by whoever compares them).

    >>> import planner
    >>> same_structure(compile_domain(planner.load_domain("payment_release")),
    ...                compile_domain(planner.load_domain("kyc_chain")))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    planner.errors.PlannerError: the true domain kyc_chain differs from the model payment_release in its propositions, ...
    """
    from planner.errors import PlannerError

    for what, a, b in (("propositions", model.prop_names, truth.prop_names),
                       ("proposition values", model.prop_values, truth.prop_values),
                       ("observations", model.obs_names, truth.obs_names),
                       ("outcomes", model.outcome_names, truth.outcome_names),
                       ("lineage variables", model.var_names, truth.var_names),
                       ("actions", model.action_names, truth.action_names)):
        if a != b:
            raise PlannerError(f"the true domain {truth.domain.name} differs from the model {model.domain.name} "
                               f"in its {what}, not only in its likelihoods")
