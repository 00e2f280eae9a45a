"""A sampling peer: pomdp_py's POUCT on the study's domains (optional).

The adapter encodes a compiled domain as a POMDP for :class:`pomdp_py.POUCT`:

- state: the hidden joint state ``s`` plus the (observation, outcome) pairs
  seen (``outcome_of`` as a tuple), or the terminal state after a decision;
- actions: ``observe o`` for the observations eligible at the pairs
  (admitted, available, affordable, not taken: the session's own gates) and
  ``decide u`` for the decision actions permitted there; the terminal state
  has one no-op;
- transition: ``observe o`` draws ``y ~ P(y | s, o)`` (failures included) and
  adds ``(o, y)``; ``decide u`` ends the episode;
- observation: ``(o, y)`` after ``observe o``, nothing after a decision;
- reward: ``-C_w(c(o))`` for ``observe o``, ``-L(u, s)`` for ``decide u``
  (undiscounted), so the return is minus the total loss; with
  ``terminal="posterior"`` a decision earns ``-E_b[L(u)]`` under the exact
  posterior b at the pairs seen instead of the sampled state's loss (the same
  expectation, without the state's sampling noise: a rollout or tree path
  that stops on the Bayes action earns ``-min_u E_b[L(u)]``).

The belief handed to POUCT is the exact posterior (a :class:`pomdp_py.Histogram`
over the states of positive probability), recomputed after every real step;
the search tree is kept between steps (``POUCT.update``).

What can be tuned, so that the peer is a fair one (:func:`run_pouct`):

- *rollouts*: ``"random"`` picks uniformly among the legal actions
  (pomdp_py's usual default); ``"one-step"`` plays the one-step EVSI rule
  from the rollout's pairs (observe what it picks, or decide the Bayes action
  where it stops). That choice depends on the pairs only, never on the hidden
  state, so it is computed once per set of pairs and looked up afterwards.
- *the UCB exploration constant*: by default the domain's loss range (the
  returns' scale). Constants are best given as a multiple of that range
  (``exploration_scale``), so one multiplier tuned on some domains
  (:func:`tune_exploration`) transfers to others of another loss scale.
- *the budget per decision*: a wall-clock planning time (POUCT's result then
  depends on the machine's speed, so those figures are not bit-reproducible,
  unlike the rest of the study) or a fixed number of simulations (equal node
  budgets; reproducible for a seed).
- *the final selection*: pomdp_py's value argmax, the best value among the
  actions the search tried (``visited_only``), or the most visited action
  (``most_visited``, the usual UCT choice).
- *model error*: plan on a model, draw the real outcomes and score under the
  truth (``truth=``).

Faithful settings for the third edition: ``terminal="posterior"``,
``most_visited=True``, a UCB multiplier tuned inside its grid
(:func:`tune_exploration_inside`, which widens the grid until the optimum is
not at an edge), and a time-matched budget: :func:`calibrate_num_sims` turns a
measured planning time of a bounded policy per decision into a number of
simulations per decision, so that the run itself (:func:`run_time_matched`) is
seeded and reproducible and its record holds a simulation count, not a clock.

Importing this module does not import pomdp_py; :func:`available` tells
whether it is installed.
"""

from __future__ import annotations

import importlib.util
import math
import random
import time

import attrs
import numpy as np

from planner.node import root_node
from planner.session.simulate import inverse_cdf

__all__ = ["DEFAULT_EXPLORATION_SCALES", "ROLLOUTS", "TERMINALS", "ExplorationTuning", "available", "loss_range",
           "run_pouct", "tune_exploration", "tune_exploration_inside", "sims_for_time", "calibrate_num_sims",
           "run_time_matched", "FAITHFUL", "compare_on"]

#: The rollout policies :func:`run_pouct` knows.
ROLLOUTS = ("random", "one-step")

#: The terminal rewards :func:`run_pouct` knows: the sampled state's loss, or its posterior expectation.
TERMINALS = ("state", "posterior")

#: The default grid of :func:`tune_exploration`: UCB constants as multiples of the loss range.
DEFAULT_EXPLORATION_SCALES = (0.03, 0.1, 0.3, 1.0, 3.0)

# Per-pairs caches (nodes, legal sets, one-step choices) are cleared past this many entries: every
# entry is a deterministic function of its pairs, so clearing costs time, never changes an answer,
# and it bounds the memory of long random rollouts on wide domains.
_CACHE_CAP = 200_000


def available() -> bool:
    """True when pomdp_py can be imported.

    >>> isinstance(available(), bool)
    True
    """
    return importlib.util.find_spec("pomdp_py") is not None


def loss_range(compiled) -> float:
    """``max L - min L`` over actions and states (1 when every loss is equal): the returns' scale.

    The UCB constant of :func:`run_pouct` is this times ``exploration_scale``.

    >>> import planner
    >>> loss_range(planner.compile_domain(planner.load_domain("payment_release")))
    100.0
    """
    return float(compiled.loss.max() - compiled.loss.min()) or 1.0


def _build(compiled, admission, rng: random.Random, rollout: str, terminal: str = "state"):
    """The pomdp_py classes and models of one compiled domain (pomdp_py imported here).

    Returns ``(pomdp_py, State, Action, Obs, Transition, Observation, Reward, rollout policy, stats)``;
    `stats` counts ``rollout_illegal`` (one-step choices outside the legal set: must stay 0).
    """
    import pomdp_py

    c = compiled
    root = root_node(c, admission)
    # keyed on the pairs seen (the `seen` tuple): nodes, legal action lists, one-step rollout actions
    node_cache: dict = {}
    legal_cache: dict = {}
    choice_cache: dict = {}
    stats = {"rollout_illegal": 0}
    policy = None  # the one-step rule, for one-step rollouts (set below)

    class State(pomdp_py.State):
        __slots__ = ("s", "seen", "done", "_h")

        def __init__(self, s, seen, done=False):
            self.s, self.seen, self.done = s, seen, done
            self._h = hash((s, seen, done))

        def __hash__(self):
            return self._h

        def __eq__(self, other):
            return isinstance(other, State) and (self.s, self.seen, self.done) == (other.s, other.seen, other.done)

    class Action(pomdp_py.Action):
        __slots__ = ("kind", "index", "_h")

        def __init__(self, kind, index):
            self.kind, self.index = kind, index
            self._h = hash((kind, index))

        def __hash__(self):
            return self._h

        def __eq__(self, other):
            return isinstance(other, Action) and (self.kind, self.index) == (other.kind, other.index)

        def __repr__(self):
            return f"{self.kind}:{self.index}"

    class Obs(pomdp_py.Observation):
        __slots__ = ("o", "y", "_h")

        def __init__(self, o, y):
            self.o, self.y = o, y
            self._h = hash((o, y))

        def __hash__(self):
            return self._h

        def __eq__(self, other):
            return isinstance(other, Obs) and (self.o, self.y) == (other.o, other.y)

    NOOP = Action("noop", -1)
    NONE = Obs(-1, -1)

    def node_at(seen):
        """The node of the pairs `seen`, reached from the root in index order.

        Built as the node of `seen` without its highest-index pair, then that pair's child: the same
        sequence of :meth:`~planner.node.Node.child` calls as walking from the root in index order,
        so the same bits, with every prefix cached.
        """
        hit = node_cache.get(seen)
        if hit is not None:
            return hit
        last = max((o for o, y in enumerate(seen) if y >= 0), default=-1)
        if last < 0:
            return root
        parent = list(seen)
        parent[last] = -1
        node = node_at(tuple(parent)).child(last, seen[last])
        if len(node_cache) >= _CACHE_CAP:
            node_cache.clear()
        node_cache[seen] = node
        return node

    def legal(seen) -> list:
        hit = legal_cache.get(seen)
        if hit is None:
            node = node_at(seen)
            hit = ([Action("observe", o) for o in range(len(c.obs_names)) if node.eligible[o]]
                   + [Action("decide", a) for a in range(len(c.action_names)) if node.permitted[a]])
            if len(legal_cache) >= _CACHE_CAP:
                legal_cache.clear()
            legal_cache[seen] = hit
        return hit

    def one_step(seen):
        """The one-step rule's action at the pairs `seen` (observe its pick, or decide the Bayes action)."""
        hit = choice_cache.get(seen)
        if hit is None:
            node = node_at(seen)
            o, _ = policy.choose(node)  # the policy contract: exactly decide()'s choice, without the table
            hit = Action("observe", int(o)) if o is not None else Action("decide", int(node.action))
            options = legal(seen)
            if hit not in options:
                # the one-step rule keeps the session's gates, so this is a bug; count it and stay legal
                stats["rollout_illegal"] += 1
                hit = min(options, key=lambda a: (a.kind != "decide", a.index))
            if len(choice_cache) >= _CACHE_CAP:
                choice_cache.clear()
            choice_cache[seen] = hit
        return hit

    class Transition(pomdp_py.TransitionModel):
        def sample(self, state, action):
            if state.done:
                return state  # rollouts pad to the depth limit with no-ops: no new object per step
            if action.kind != "observe":
                return State(state.s, state.seen, True)
            o = action.index
            y = inverse_cdf(c.lik[o], int(c.n_outcomes[o]), state.s, rng.random())
            seen = list(state.seen)
            seen[o] = y
            return State(state.s, tuple(seen))

    class Observation(pomdp_py.ObservationModel):
        def sample(self, next_state, action):
            if action.kind != "observe" or next_state.done:
                return NONE
            return Obs(action.index, next_state.seen[action.index])

    class Reward(pomdp_py.RewardModel):
        def sample(self, state, action, next_state):
            if state.done:
                return 0.0
            if action.kind == "observe":
                return -float(c.penalty[action.index])
            if action.kind == "decide":
                if terminal == "posterior":  # a function of the pairs only: the posterior's expected loss
                    return -float(node_at(state.seen).belief @ c.loss[action.index])
                return -float(c.loss[action.index, state.s])
            return 0.0

    class RandomRollout(pomdp_py.RolloutPolicy):
        def sample(self, state):
            return rng.choice(self.get_all_actions(state))

        def rollout(self, state, history=None):
            return rng.choice(self.get_all_actions(state))

        def get_all_actions(self, state=None, history=None):
            if state is None or state.done:
                return [NOOP]
            return legal(state.seen)

    class OneStepRollout(RandomRollout):
        # no generator draw: the action is a function of the pairs (the outcomes still are random)
        def sample(self, state):
            return NOOP if state.done else one_step(state.seen)

        def rollout(self, state, history=None):
            return NOOP if state.done else one_step(state.seen)

    if rollout == "one-step":
        from planner.policies import parse_policy

        policy = parse_policy("one-step")
        policy_model = OneStepRollout()
    else:
        policy_model = RandomRollout()
    return pomdp_py, State, Action, Obs, Transition, Observation, Reward, policy_model, stats


def _best_visited(agent, action):
    """The action of highest value among those the search tried (POUCT's own pick otherwise).

    pomdp_py starts every action's value at 0 while every return here is a
    loss (negative), so with fewer simulations than legal actions its argmax is
    an action it never tried; an unvisited action's value says nothing.
    Ties: the first in the tree's order of the highest value, then POUCT's own.
    """
    tree = getattr(agent, "tree", None)
    if tree is None:
        return action
    tried = [(a, q.value) for a, q in tree.children.items() if q.num_visits > 0]
    if not tried:
        return action
    best = max(v for _, v in tried)
    top = [a for a, v in tried if v == best]
    return action if action in top else min(top, key=lambda a: (a.kind != "decide", a.index))


def _most_visited(agent, action):
    """The action the search visited most (ties: the higher value, then decisions first, then index).

    POUCT's own pick when there is no tree or nothing was tried.
    """
    tree = getattr(agent, "tree", None)
    if tree is None:
        return action
    tried = [(a, q.num_visits, q.value) for a, q in tree.children.items() if q.num_visits > 0]
    if not tried:
        return action
    return min(tried, key=lambda t: (-t[1], -t[2], t[0].kind != "decide", t[0].index))[0]


def _histogram(pp, State, node, seen):
    """The exact belief at `node` as a pomdp_py histogram over the states of positive probability."""
    return pp.Histogram({State(int(s), seen): float(node.belief[s]) for s in np.flatnonzero(node.belief > 0)})


def _check_truth(compiled, truth) -> None:
    """ValueError unless `truth` differs from `compiled` only in its prior and likelihoods."""
    from planner.compile import same_structure
    from planner.errors import PlannerError

    for what in ("lik", "n_outcomes", "prior", "loss", "penalty", "cost"):
        a, b = np.shape(getattr(compiled, what)), np.shape(getattr(truth, what))
        if a != b:
            raise ValueError(f"truth: {what} has shape {b}, the model's {a}: not the same structure")
    try:
        same_structure(compiled, truth)
    except PlannerError as e:
        raise ValueError(str(e)) from e
    # the total is scored with the truth's losses and penalties; they must be the model's
    for what in ("n_outcomes", "loss", "penalty"):
        if not np.array_equal(getattr(compiled, what), getattr(truth, what)):
            raise ValueError(f"truth: its {what} differ from the model's (only prior and likelihoods may)")


def run_pouct(compiled, admission, states, uniforms, planning_ms: float | None = None, *, seed: int,
              num_sims: int | None = None, rollout: str = "random", exploration: float | None = None,
              exploration_scale: float | None = None, truth=None, visited_only: bool = False,
              most_visited: bool = False, terminal: str = "state") -> dict:
    """Replay POUCT on the drawn episodes, with a planning time or a number of simulations per decision.

    With only `planning_ms` and `seed` this is the first edition's peer, bit for
    bit: random rollouts, UCB constant = the loss range.

    Parameters
    ----------
    compiled, admission
        The session's compiled domain (the model POUCT plans on) and admission.
    states : ndarray(int64, ndim=1)
        The hidden state of each episode (:func:`studies.measure.draw_episodes`;
        drawn from `truth` when it is given).
    uniforms : ndarray(float64, ndim=2)
        ``[n, O]``: the outcome draws, so POUCT sees the same worlds and outcomes
        as the study's own policies.
    planning_ms : float, optional
        Wall-clock planning time per decision. Exactly one of `planning_ms`
        and `num_sims`.
    seed : int
        Seeds the rollouts and simulated outcomes inside the search (and
        reseeds Python's global generator, which pomdp_py draws from).
    num_sims : int, optional
        Simulations per decision (each adds at most one belief node to the
        tree, which is kept between the decisions of an episode); results are
        then reproducible for a seed.
    rollout : {"random", "one-step"}
        The rollout policy (see the module docstring).
    exploration : float, optional
        The UCB constant itself. At most one of `exploration` and `exploration_scale`.
    exploration_scale : float, optional
        The UCB constant as a multiple of :func:`loss_range` (the default is 1);
        prefer it across domains.
    truth : CompiledDomain, optional
        Model error: the real outcomes come from ``truth.lik`` (the same
        uniforms) and the total is scored under the truth's posterior, while the
        agent plans on, and believes, `compiled`. It must differ from `compiled`
        only in prior and likelihoods.
    visited_only : bool
        Act on the best action among those the search tried
        (:func:`_best_visited`), not pomdp_py's argmax, which prefers an
        untried action (value 0) to every tried one when returns are losses.
        The second edition sets it; the default keeps the first edition's peer.
    most_visited : bool
        Act on the most visited action the search tried (:func:`_most_visited`).
        At most one of `visited_only` and `most_visited`.
    terminal : {"state", "posterior"}
        A decision's reward in the search: minus the sampled state's loss, or
        minus its expectation under the exact posterior at the pairs seen.

    Returns
    -------
    dict
        ``total`` (float64[n]: the chosen action's expected loss under the
        posterior at the stop, the truth's when `truth` is given, plus
        penalties), ``realised`` (float64[n]: the loss in the hidden state plus
        penalties), ``sims`` (mean simulations per decision), ``decisions``
        (mean per episode), ``decision_ms`` (float64[number of decisions]: the
        wall time of every decision's planning, for percentiles),
        ``decision_sims`` (int64[number of decisions]), ``illegal`` (decisions
        outside the legal set: must be 0), ``rollout_illegal`` (one-step
        rollout choices outside it: must be 0), ``one_sim_decisions``
        (decisions whose time ran out before POUCT's first simulation, planned
        with exactly one simulation instead), ``exploration`` (the UCB
        constant used), ``rollout``, and for audits ``action`` (int64[n]: the
        decision taken) and ``paths`` (per episode, the ``(o, y)`` pairs
        acquired, in order).

    Raises
    ------
    ValueError
        On a bad budget, rollout, exploration or episode shape; on a `truth`
        of another structure; on a real outcome the model rules out.
    ImportError
        Without pomdp_py.
    """
    import pomdp_py  # noqa: F401 - fail early with ImportError when missing

    c = compiled
    O = len(c.obs_names)
    if (planning_ms is None) == (num_sims is None):
        raise ValueError("give exactly one of planning_ms and num_sims")
    if num_sims is not None and (isinstance(num_sims, bool) or int(num_sims) != num_sims or num_sims < 1):
        raise ValueError(f"num_sims must be a positive integer, got {num_sims!r}")
    if planning_ms is not None and not planning_ms >= 0:
        raise ValueError(f"planning_ms must be >= 0, got {planning_ms!r}")
    if rollout not in ROLLOUTS:
        raise ValueError(f"rollout must be one of {', '.join(ROLLOUTS)}, got {rollout!r}")
    if terminal not in TERMINALS:
        raise ValueError(f"terminal must be one of {', '.join(TERMINALS)}, got {terminal!r}")
    if visited_only and most_visited:
        raise ValueError("give at most one of visited_only and most_visited")
    if exploration is not None and exploration_scale is not None:
        raise ValueError("give at most one of exploration and exploration_scale")
    for name, v in (("exploration", exploration), ("exploration_scale", exploration_scale)):
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be finite and >= 0, got {v!r}")
    states = np.asarray(states)
    uniforms = np.asarray(uniforms)
    n = len(states)
    if uniforms.shape != (n, O):
        raise ValueError(f"uniforms has shape {uniforms.shape}, expected ({n}, {O}) for {n} episodes")
    if truth is not None:
        _check_truth(c, truth)
    scorer = c if truth is None else truth  # draws the real outcomes and scores the stop

    root = root_node(c, admission)
    truth_root = None if truth is None else root_node(truth, admission)
    rng = random.Random(seed)
    random.seed(seed)  # pomdp_py's own choices (UCB ties, belief sampling) use the global generator
    pp, State, _, Obs, Transition, Observation, Reward, policy_model, stats = _build(c, admission, rng, rollout,
                                                                                      terminal)
    spread = loss_range(c)
    if exploration is not None:
        const = float(exploration)
    elif exploration_scale is not None:
        const = float(exploration_scale) * spread
    else:
        const = spread
    if num_sims is not None:
        budget = {"planning_time": -1, "num_sims": int(num_sims)}
    else:
        budget = {"planning_time": max(planning_ms, 1e-3) / 1000.0}
    total = np.empty(n)
    realised = np.empty(n)
    chosen = np.empty(n, dtype=np.int64)
    paths: list = []
    decision_ms: list = []
    decision_sims: list = []
    decisions, illegal, forced = 0, 0, 0
    for e in range(n):
        s_true = int(states[e])
        node = root
        score_node = truth_root
        seen = tuple(int(y) for y in node.outcome_of)
        penalty = 0.0
        path = []
        agent = pp.Agent(_histogram(pp, State, node, seen), policy_model, Transition(), Observation(), Reward())
        planner = pp.POUCT(max_depth=O + 2, discount_factor=1.0, exploration_const=const,
                           rollout_policy=policy_model, show_progress=False, **budget)
        while True:
            t0 = time.perf_counter()
            try:
                action = planner.plan(agent)
                k = int(getattr(planner, "last_num_sims", 0) or 0)
            except AttributeError:
                # the time ran out before a first simulation built the root (pomdp_py then fails on an
                # empty tree): plan this decision with exactly one simulation instead
                one = pp.POUCT(max_depth=O + 2, planning_time=-1, num_sims=1, discount_factor=1.0,
                               exploration_const=const, rollout_policy=policy_model, show_progress=False)
                agent.tree = None
                action = one.plan(agent)
                k = 1
                forced += 1
            if visited_only:
                action = _best_visited(agent, action)
            elif most_visited:
                action = _most_visited(agent, action)
            decision_ms.append((time.perf_counter() - t0) * 1000.0)
            decision_sims.append(k)
            decisions += 1
            legal = policy_model.get_all_actions(State(s_true, seen))
            if action not in legal:
                illegal += 1
                action = min(legal, key=lambda a: (a.kind != "decide", a.index))
            if action.kind == "decide":
                u = action.index
                if truth is None:
                    total[e] = float(node.belief @ c.loss[u]) + penalty
                else:
                    total[e] = float(score_node.belief @ truth.loss[u]) + penalty
                realised[e] = float(scorer.loss[u, s_true]) + penalty
                chosen[e] = u
                paths.append(tuple(path))
                break
            o = action.index
            y = inverse_cdf(scorer.lik[o], int(c.n_outcomes[o]), s_true, float(uniforms[e, o]))
            if truth is not None:
                if node.outcome_probs(o)[y] <= 0.0 and y != node.unavailable_slot(o):
                    raise ValueError(f"truth gives {c.obs_names[o]} outcome '{c.outcome_names[o][y]}' "
                                     "where the model rules it out: POUCT on the model cannot record it")
                score_node = score_node.child(o, y)
            node = node.child(o, y)
            path.append((o, y))
            penalty += float(scorer.penalty[o])
            seen = tuple(int(x) for x in node.outcome_of)
            obs = Obs(o, y)
            agent.update_history(action, obs)
            try:
                planner.update(agent, action, obs)
            except Exception:  # noqa: BLE001 - the real outcome was never simulated: start a fresh tree
                agent.tree = None
            agent.set_belief(_histogram(pp, State, node, seen))
    sims = np.asarray(decision_sims, dtype=np.int64)
    return {"total": total, "realised": realised, "sims": float(sims.sum()) / max(decisions, 1),
            "decisions": decisions / n, "decision_ms": np.asarray(decision_ms, dtype=np.float64),
            "decision_sims": sims, "illegal": illegal, "rollout_illegal": stats["rollout_illegal"],
            "one_sim_decisions": forced, "action": chosen, "paths": paths, "exploration": const,
            "rollout": rollout, "terminal": terminal}


@attrs.frozen(kw_only=True)
class ExplorationTuning:
    """What :func:`tune_exploration` measured: the grid, the means, the chosen multiplier.

    Attributes
    ----------
    best_scale : float
        The chosen UCB multiplier (of each domain's :func:`loss_range`).
    grid : tuple of float
        The multipliers tried, in the order given.
    means : tuple of float
        Per multiplier: the mean over cases of the per-case mean total loss.
    case_means : tuple of tuple of float
        ``[multiplier][case]``: the mean total loss of each case.
    episodes, seed, rollout, num_sims, planning_ms
        The settings, for the report.

    Examples
    --------
    >>> t = ExplorationTuning(best_scale=0.3, grid=(0.3, 1.0), means=(1.2, 1.5), case_means=((1.2,), (1.5,)),
    ...                       episodes=10, seed=0, rollout="one-step", num_sims=50, planning_ms=None)
    >>> t.to_dict()["table"], t.rows()[0]["best"]
    ({0.3: 1.2, 1.0: 1.5}, True)
    """

    best_scale: float
    grid: tuple
    means: tuple
    case_means: tuple
    episodes: int
    seed: int
    rollout: str
    num_sims: int | None
    planning_ms: float | None
    interior: bool | None = None

    def constant(self, compiled) -> float:
        """The tuned UCB constant on `compiled`: ``best_scale * loss_range(compiled)``."""
        return self.best_scale * loss_range(compiled)

    def to_dict(self) -> dict:
        """Plain data for a report or JSON: ``best`` (the multiplier), ``table`` ({multiplier: mean total
        loss}), ``cases`` (how many), ``case_means``, ``grid`` and the settings."""
        return {"best": self.best_scale, "table": dict(zip(self.grid, self.means)), "cases": len(self.case_means[0]),
                "case_means": [list(row) for row in self.case_means], "grid": list(self.grid),
                "episodes": self.episodes, "seed": self.seed, "rollout": self.rollout, "num_sims": self.num_sims,
                "planning_ms": self.planning_ms, "interior": self.interior}

    def rows(self) -> list:
        """One dict per multiplier (``exploration_scale``, ``mean_total_loss``, ``case_<i>``), for a CSV."""
        return [{"exploration_scale": g, "mean_total_loss": m, **{f"case_{i}": v for i, v in enumerate(cm)},
                 "best": g == self.best_scale} for g, m, cm in zip(self.grid, self.means, self.case_means)]


def tune_exploration(cases, grid=DEFAULT_EXPLORATION_SCALES, *, planning_ms: float | None = None,
                     num_sims: int | None = None, episodes: int = 200, seed: int = 0,
                     rollout: str = "one-step", visited_only: bool = False, **run_options) -> ExplorationTuning:
    """Choose POUCT's UCB multiplier on tuning cases, with common random numbers.

    Every multiplier in `grid` is run on the same episodes of each case
    (:func:`studies.measure.draw_episodes`) and with the same search
    seed, so the differences between multipliers are not sampling noise of the
    worlds. The winner has the lowest mean over cases of the mean total loss
    (ties: the smaller multiplier). Multipliers scale each case's
    :func:`loss_range`, so the winner transfers to domains of another loss
    scale; pass it to :func:`run_pouct` as ``exploration_scale``. Tune on
    instances the study does not report on.

    Parameters
    ----------
    cases : sequence of (CompiledDomain, Admission)
    grid : sequence of float
        UCB multipliers (default :data:`DEFAULT_EXPLORATION_SCALES`).
    planning_ms, num_sims
        The budget per decision, exactly one (as for :func:`run_pouct`);
        `num_sims` makes the result reproducible for a seed.
    episodes : int
        Episodes per case.
    seed : int
        Seeds the episodes and the searches (per case, the same for every multiplier).
    rollout : {"random", "one-step"}
    visited_only : bool
        As for :func:`run_pouct`.
    **run_options
        Further :func:`run_pouct` options (``most_visited``, ``terminal``).

    Returns
    -------
    ExplorationTuning

    Raises
    ------
    ValueError
        On no cases, an empty grid, a negative multiplier, fewer than one
        episode, or :func:`run_pouct`'s own errors.
    """
    from studies.families import stable_seed
    from studies.measure import draw_episodes

    cases = list(cases)
    grid = tuple(float(g) for g in grid)
    if not cases:
        raise ValueError("tune_exploration needs at least one (compiled, admission) case")
    if not grid or any(not (math.isfinite(g) and g >= 0) for g in grid):
        raise ValueError(f"grid must be non-empty multipliers, finite and >= 0, got {grid!r}")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes!r}")
    case_means = np.empty((len(grid), len(cases)))
    for i, (c, admission) in enumerate(cases):
        states, uniforms = draw_episodes(c, episodes, stable_seed("tune-exploration", "episodes", seed, i))
        search_seed = stable_seed("tune-exploration", "search", seed, i)
        for g, scale in enumerate(grid):
            res = run_pouct(c, admission, states, uniforms, planning_ms, seed=search_seed, num_sims=num_sims,
                            rollout=rollout, exploration_scale=scale, visited_only=visited_only, **run_options)
            case_means[g, i] = float(res["total"].mean())
    means = case_means.mean(axis=1)
    best = min(range(len(grid)), key=lambda g: (means[g], grid[g]))
    return ExplorationTuning(best_scale=grid[best], grid=grid, means=tuple(float(m) for m in means),
                             case_means=tuple(tuple(float(v) for v in row) for row in case_means),
                             episodes=int(episodes), seed=int(seed), rollout=rollout, num_sims=num_sims,
                             planning_ms=planning_ms)


def tune_exploration_inside(cases, grid=DEFAULT_EXPLORATION_SCALES, *, widen: float = 3.0, max_widenings: int = 4,
                            **tune_options) -> ExplorationTuning:
    """:func:`tune_exploration`, widening the grid until the chosen multiplier is not at an edge.

    While the winner is the smallest (or largest) multiplier tried, a new one
    `widen` times smaller (or larger) is added, at most `max_widenings` times
    in all. Every multiplier is run on the same episodes and search seeds (they
    depend on the tuning seed and the case only), so a widened grid gives each
    old multiplier the value it had. The result's ``interior`` says whether the
    winner ended strictly inside the grid; its ``grid`` is sorted.

    Parameters
    ----------
    cases, grid
        As for :func:`tune_exploration` (the grid needs two or more distinct
        positive multipliers).
    widen : float
        The factor of each widening, > 1.
    max_widenings : int
        At most this many multipliers are added.
    **tune_options
        :func:`tune_exploration`'s keywords (budget, episodes, seed, rollout,
        ``most_visited``, ``terminal``, ...).

    Returns
    -------
    ExplorationTuning

    Examples
    --------
    >>> import types
    >>> fake = types.SimpleNamespace(tune_exploration=lambda cases, grid, **kw: ExplorationTuning(
    ...     best_scale=min(grid, key=lambda g: abs(g - 9)), grid=tuple(grid),
    ...     means=tuple(abs(g - 9) for g in grid), case_means=tuple((abs(g - 9),) for g in grid),
    ...     episodes=1, seed=0, rollout="one-step", num_sims=1, planning_ms=None))
    >>> t = tune_exploration_inside([None], (1.0, 3.0), _tune=fake.tune_exploration)
    >>> t.best_scale, t.grid, t.interior
    (9.0, (1.0, 3.0, 9.0, 27.0), True)
    """
    tune = tune_options.pop("_tune", tune_exploration)  # a test seam: the search itself is tested elsewhere
    grid = tuple(sorted({float(g) for g in grid}))
    if len(grid) < 2 or grid[0] <= 0 or not all(math.isfinite(g) for g in grid):
        raise ValueError(f"grid must hold two or more distinct finite multipliers > 0, got {grid!r}")
    if not (math.isfinite(widen) and widen > 1):
        raise ValueError(f"widen must be finite and > 1, got {widen!r}")
    if max_widenings < 0:
        raise ValueError(f"max_widenings must be >= 0, got {max_widenings!r}")
    results = {}

    def run(points):
        t = tune(cases, points, **tune_options)
        for g, m, cm in zip(t.grid, t.means, t.case_means):
            results[float(g)] = (m, cm)
        return t

    last = run(grid)
    for _ in range(max_widenings):
        grid = tuple(sorted(results))
        best = min(grid, key=lambda g: (results[g][0], g))
        if grid[0] < best < grid[-1]:
            break
        run((best / widen,) if best == grid[0] else (best * widen,))
    grid = tuple(sorted(results))
    best = min(grid, key=lambda g: (results[g][0], g))
    return ExplorationTuning(best_scale=best, grid=grid, means=tuple(results[g][0] for g in grid),
                             case_means=tuple(tuple(results[g][1]) for g in grid), episodes=last.episodes,
                             seed=last.seed, rollout=last.rollout, num_sims=last.num_sims,
                             planning_ms=last.planning_ms, interior=bool(grid[0] < best < grid[-1]))


def sims_for_time(policy_ms_per_decision: float, ms_per_sim: float) -> int:
    """The simulations per decision that take as long as the policy's planning: ``round(policy / sim)``, at least 1.

    >>> sims_for_time(12.0, 0.05), sims_for_time(0.001, 0.05)
    (240, 1)
    """
    if not (math.isfinite(policy_ms_per_decision) and policy_ms_per_decision >= 0):
        raise ValueError(f"policy_ms_per_decision must be finite and >= 0, got {policy_ms_per_decision!r}")
    if not (math.isfinite(ms_per_sim) and ms_per_sim > 0):
        raise ValueError(f"ms_per_sim must be finite and > 0, got {ms_per_sim!r}")
    return max(1, int(round(policy_ms_per_decision / ms_per_sim)))


def calibrate_num_sims(compiled, admission, states, uniforms, *, policy: str = "bounded", seed: int,
                       probe_sims: int = 200, **run_options) -> dict:
    """A time-matched budget: the simulations per decision POUCT runs in the policy's planning time per decision.

    Measures (wall clock, this machine) the mean planning time per decision
    of `policy` (:meth:`~planner.policies.base.Policy.choose`) along the given
    episodes (timed on a second pass: the first loads its compiled kernels),
    and POUCT's mean time per simulation on the same episodes at
    `probe_sims` simulations per decision; :func:`sims_for_time` turns the
    two into a count. The times are used here and discarded: the record holds
    the count and the sizes of the two measurements, so the run it budgets
    (:func:`run_time_matched`) is reproducible for its seed whatever the
    machine, and the calibration itself is the one clock-dependent step.

    Returns
    -------
    dict
        ``num_sims`` (int), ``policy``, ``policy_decisions`` and
        ``probe_decisions`` (how many decisions each timing averaged),
        ``probe_sims``.
    """
    from planner.policies import parse_policy

    c = compiled
    pol = parse_policy(policy)
    def walk():
        spent, decisions = 0.0, 0
        for e in range(len(states)):
            node, s = root_node(c, admission), int(states[e])
            while True:
                t0 = time.perf_counter()
                o, _ = pol.choose(node)
                spent += time.perf_counter() - t0
                decisions += 1
                if o is None:
                    break
                y = inverse_cdf(c.lik[o], int(c.n_outcomes[o]), s, float(uniforms[e, o]))
                node = node.child(o, y)
        return spent, decisions

    # an untimed first pass: numba compiles or loads a kernel the first time a path needs it, a one-off
    # cost that is no part of the policy's planning time per decision
    walk()
    spent, decisions = walk()
    probe = run_pouct(c, admission, states, uniforms, num_sims=int(probe_sims), seed=seed, **run_options)
    per_sim = float(probe["decision_ms"].sum()) / float(probe["decision_sims"].sum())
    n = sims_for_time(1000.0 * spent / decisions, per_sim)
    return {"num_sims": n, "policy": pol.spec, "policy_decisions": decisions,
            "probe_decisions": int(len(probe["decision_sims"])), "probe_sims": int(probe_sims)}


def run_time_matched(compiled, admission, states, uniforms, *, policy: str = "bounded", seed: int,
                     calibration_episodes: int = 20, probe_sims: int = 200, **run_options) -> dict:
    """POUCT at the planning time per decision of `policy`, as a calibrated number of simulations.

    :func:`calibrate_num_sims` on the first `calibration_episodes` episodes,
    then :func:`run_pouct` on all of them with that ``num_sims`` and `seed`
    (so the run, given the count, is reproducible). The result is
    :func:`run_pouct`'s with ``calibration`` (the calibration record) added;
    its ``decision_ms`` is dropped, so that nothing in it is a clock reading.
    """
    m = max(1, min(int(calibration_episodes), len(states)))
    cal = calibrate_num_sims(compiled, admission, states[:m], uniforms[:m], policy=policy, seed=seed,
                             probe_sims=probe_sims, **run_options)
    res = run_pouct(compiled, admission, states, uniforms, num_sims=cal["num_sims"], seed=seed, **run_options)
    res.pop("decision_ms")
    res["calibration"] = cal
    return res


#: The faithful settings of the third edition's peer (module docstring), for :func:`run_pouct` and its callers.
FAITHFUL = {"rollout": "one-step", "most_visited": True, "terminal": "posterior"}


def compare_on(compiled, admission, *, episodes: int, seed: int, exploration_scale: float, num_sims: int = 1000,
               policy: str = "bounded") -> dict:
    """POUCT on one case at equal simulations and at `policy`'s planning time, beside the exact figures.

    Returns ``{"exact": {spec: expected total loss}, "pouct": {label: (mean, standard error)},
    "time_matched_sims": int}``: the exact expected total loss of one-step,
    ``bounded:<num_sims>`` and `policy`; the episode means of POUCT with the
    second edition's settings (``visited_only``, sampled-state terminal
    reward) and with :data:`FAITHFUL`, at `num_sims` simulations, and with
    :data:`FAITHFUL` time-matched to `policy` (:func:`run_time_matched`, on
    10 calibration episodes), all on the same episodes and search seed.
    """
    from planner.evaluation.evaluate import evaluate_policy
    from studies.families import stable_seed
    from studies.measure import draw_episodes

    c = compiled
    specs = ("one-step", f"bounded:{num_sims}", policy)
    exact = {p: float(evaluate_policy(c, p).expected_total_loss) for p in specs}
    states, uniforms = draw_episodes(c, episodes, stable_seed("peer-compare", "episodes", seed))
    s = stable_seed("peer-compare", "search", seed)

    def mean_se(res):
        t = res["total"]
        return float(t.mean()), float(t.std(ddof=1) / math.sqrt(len(t))) if len(t) > 1 else float("nan")

    kw = {"seed": s, "exploration_scale": exploration_scale}
    second = run_pouct(c, admission, states, uniforms, num_sims=num_sims, rollout="one-step", visited_only=True, **kw)
    faithful = run_pouct(c, admission, states, uniforms, num_sims=num_sims, **FAITHFUL, **kw)
    matched = run_time_matched(c, admission, states, uniforms, policy=policy, calibration_episodes=10, **FAITHFUL,
                               **kw)
    return {"exact": exact,
            "pouct": {f"{num_sims} sims, visited-only, state reward": mean_se(second),
                      f"{num_sims} sims, faithful": mean_se(faithful),
                      f"time-matched to {policy}, faithful": mean_se(matched)},
            "time_matched_sims": matched["calibration"]["num_sims"]}
