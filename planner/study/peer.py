"""A peer planner at equal planning time: pomdp_py's POUCT on the study's domains (optional).

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
  (undiscounted), so the return is minus the total loss.

The belief handed to POUCT is the exact posterior (a :class:`pomdp_py.Histogram`
over the states of positive probability), recomputed after every real step;
the search tree is kept between steps (``POUCT.update``). Rollouts pick
uniformly among the legal actions (pomdp_py's usual default). The UCB
exploration constant is the domain's loss range, so it is on the scale of the
returns. Planning time per decision is given (the study uses the measured
median of ``lookahead:2`` and ``lookahead:3``); POUCT's result then depends on
the machine's speed, so its figures are not bit-reproducible, unlike the rest
of the study.

Importing this module does not import pomdp_py; :func:`available` tells
whether it is installed.
"""

from __future__ import annotations

import importlib.util
import random

import numpy as np

from planner.node import root_node
from planner.simulate import inverse_cdf

__all__ = ["available", "run_pouct"]


def available() -> bool:
    """True when pomdp_py can be imported.

    >>> isinstance(available(), bool)
    True
    """
    return importlib.util.find_spec("pomdp_py") is not None


def _build(compiled, admission, rng: random.Random):
    """The pomdp_py classes and models of one compiled domain (pomdp_py imported here)."""
    import pomdp_py

    c = compiled
    root = root_node(c, admission)
    legal_cache: dict = {}

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
        """The node of the pairs `seen` (from the root, in index order; only its gates are read)."""
        node = root
        for o, y in enumerate(seen):
            if y >= 0:
                node = node.child(o, y)
        return node

    def legal(seen) -> list:
        hit = legal_cache.get(seen)
        if hit is None:
            node = node_at(seen)
            hit = ([Action("observe", o) for o in range(len(c.obs_names)) if node.eligible[o]]
                   + [Action("decide", a) for a in range(len(c.action_names)) if node.permitted[a]])
            legal_cache[seen] = hit
        return hit

    class Transition(pomdp_py.TransitionModel):
        def sample(self, state, action):
            if state.done or action.kind != "observe":
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
                return -float(c.loss[action.index, state.s])
            return 0.0

    class Rollout(pomdp_py.RolloutPolicy):
        def sample(self, state):
            return rng.choice(self.get_all_actions(state))

        def rollout(self, state, history=None):
            return rng.choice(self.get_all_actions(state))

        def get_all_actions(self, state=None, history=None):
            if state is None or state.done:
                return [NOOP]
            return legal(state.seen)

    return pomdp_py, State, Action, Obs, Transition, Observation, Reward, Rollout


def _histogram(pp, State, node, seen):
    """The exact belief at `node` as a pomdp_py histogram over the states of positive probability."""
    return pp.Histogram({State(int(s), seen): float(node.belief[s]) for s in np.flatnonzero(node.belief > 0)})


def run_pouct(compiled, admission, states, uniforms, planning_ms: float, *, seed: int) -> dict:
    """Replay POUCT on the drawn episodes with `planning_ms` of planning per decision.

    Parameters
    ----------
    compiled, admission
        The session's compiled domain and admission.
    states, uniforms
        The episodes (:func:`planner.study.measure.draw_episodes`): the same
        worlds and outcome draws as the study's own policies.
    planning_ms : float
        Wall-clock planning time per decision.
    seed : int
        Seeds the rollouts and simulated outcomes inside the search.

    Returns
    -------
    dict
        ``total`` (float64[n]: the chosen action's expected loss under the
        belief at the stop, plus penalties), ``realised`` (float64[n]),
        ``sims`` (mean simulations per decision), ``decisions`` (mean per
        episode), ``illegal`` (decisions outside the legal set: must be 0),
        ``one_sim_decisions`` (decisions whose time ran out before POUCT's first
        simulation, planned with exactly one simulation instead).
    """
    import pomdp_py  # noqa: F401 - fail early with ImportError when missing

    c = compiled
    O = len(c.obs_names)
    root = root_node(c, admission)
    rng = random.Random(seed)
    random.seed(seed)  # pomdp_py's own choices (UCB ties, belief sampling) use the global generator
    pp, State, Action, Obs, Transition, Observation, Reward, Rollout = _build(c, admission, rng)
    rollout = Rollout()
    spread = float(c.loss.max() - c.loss.min()) or 1.0
    n = len(states)
    total = np.empty(n)
    realised = np.empty(n)
    sims, decisions, illegal, forced = 0, 0, 0, 0
    for e in range(n):
        s_true = int(states[e])
        node = root
        seen = tuple(int(y) for y in node.outcome_of)
        penalty = 0.0
        agent = pp.Agent(_histogram(pp, State, node, seen), rollout, Transition(), Observation(), Reward())
        planner = pp.POUCT(max_depth=O + 2, planning_time=max(planning_ms, 1e-3) / 1000.0, discount_factor=1.0,
                           exploration_const=spread, rollout_policy=rollout, show_progress=False)
        while True:
            try:
                action = planner.plan(agent)
                sims += int(getattr(planner, "last_num_sims", 0) or 0)
            except AttributeError:
                # the time ran out before a first simulation built the root (pomdp_py then fails on an
                # empty tree): plan this decision with exactly one simulation instead
                one = pp.POUCT(max_depth=O + 2, planning_time=-1, num_sims=1, discount_factor=1.0,
                               exploration_const=spread, rollout_policy=rollout, show_progress=False)
                agent.tree = None
                action = one.plan(agent)
                sims += 1
                forced += 1
            decisions += 1
            legal = rollout.get_all_actions(State(s_true, seen))
            if action not in legal:
                illegal += 1
                action = min(legal, key=lambda a: (a.kind != "decide", a.index))
            if action.kind == "decide":
                u = action.index
                total[e] = float(node.belief @ c.loss[u]) + penalty
                realised[e] = float(c.loss[u, s_true]) + penalty
                break
            o = action.index
            y = inverse_cdf(c.lik[o], int(c.n_outcomes[o]), s_true, float(uniforms[e, o]))
            node = node.child(o, y)
            penalty += float(c.penalty[o])
            seen = tuple(int(x) for x in node.outcome_of)
            obs = Obs(o, y)
            agent.update_history(action, obs)
            try:
                planner.update(agent, action, obs)
            except Exception:  # noqa: BLE001 - the real outcome was never simulated: start a fresh tree
                agent.tree = None
            agent.set_belief(_histogram(pp, State, node, seen))
    return {"total": total, "realised": realised, "sims": sims / max(decisions, 1),
            "decisions": decisions / n, "illegal": illegal, "one_sim_decisions": forced}
