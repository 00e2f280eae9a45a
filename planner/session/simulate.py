"""Simulate a session against a hidden world (``planner run``), and the one outcome sampler.

The hidden world is given (``{"approval": "pending"}``) or sampled from the
prior with an explicit seed. Outcomes are drawn from the likelihoods with the
seed, or, when the world is given and no seed, the most likely outcome is
returned (ties: the outcome declared first), so a run replays exactly.

:func:`inverse_cdf` is the sampler of replayed episodes: the study's Monte
Carlo replay and its POUCT peer both draw outcomes with it from the same
uniforms, so they see the same outcome of each source.
"""

from __future__ import annotations

import attrs
import numpy as np

from planner.errors import PlannerError, WorldError

__all__ = ["hidden_state", "draw_outcome", "inverse_cdf", "simulate", "simulate_log", "SimulatedLog"]


def hidden_state(compiled, world: dict | None, rng: np.random.Generator | None) -> tuple[int, dict]:
    """Pick the hidden joint state (index into ``compiled.states``) and the world it shows.

    With `world` given (every proposition, or some of them when `rng` is given
    to sample the rest from the prior conditioned on them), lineage variables are
    sampled with `rng` or set to their most likely value.

    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("payment_release"))
    >>> hidden_state(c, {"approval": "pending"}, None)
    (1, {'approval': 'pending'})
    """
    world = dict(world or {})
    P = len(compiled.prop_names)
    mask = np.ones(compiled.n_states, dtype=bool)
    for name, value in world.items():
        if name not in compiled.prop_names:
            raise WorldError(f"{name}={value}: unknown proposition '{name}' "
                             f"(propositions: {', '.join(compiled.prop_names)})")
        p = compiled.prop_names.index(name)
        if value not in compiled.prop_values[p]:
            raise WorldError(f"{name}={value}: unknown value '{value}' of {name} "
                             f"(values: {', '.join(compiled.prop_values[p])})")
        mask &= compiled.states[:, p] == compiled.prop_values[p].index(value)
    missing = [n for n in compiled.prop_names if n not in world]
    if missing and rng is None:
        raise WorldError(f"missing {', '.join(missing)} (give every proposition, or a seed to sample the rest)")
    weights = np.where(mask, compiled.prior, 0.0)
    if weights.sum() <= 0:
        raise WorldError("this world has prior probability 0")
    if rng is None:
        s = int(np.argmax(weights))  # first most likely (lineage variables only differ here)
    else:
        s = int(rng.choice(len(weights), p=weights / weights.sum()))
    shown = {compiled.prop_names[p]: compiled.prop_values[p][compiled.states[s, p]] for p in range(P)}
    return s, shown


def draw_outcome(compiled, o: int, s: int, rng: np.random.Generator | None) -> str:
    """An outcome of observation `o` in hidden state `s` (most likely when no rng)."""
    n = int(compiled.n_outcomes[o])
    p = np.asarray(compiled.lik[o, :n, s], dtype=float)
    y = int(np.argmax(p)) if rng is None else int(rng.choice(n, p=p / p.sum()))
    return compiled.outcome_names[o][y]


def inverse_cdf(lik_o, n_o: int, s: int, u: float) -> int:
    """The outcome of an observation whose uniform draw is `u`, in state `s` (inverse CDF).

    ``lik_o : float64[Y, S]``; the outcomes ``0 .. n_o - 1`` in order; `u` in
    [0, 1). When rounding leaves the cumulative sum just under `u`, the last
    outcome of positive probability.

    >>> lik = np.array([[0.25], [0.0], [0.75]])
    >>> [inverse_cdf(lik, 3, 0, u) for u in (0.0, 0.2499, 0.25, 0.99)]
    [0, 0, 2, 2]
    """
    cdf = 0.0
    for y in range(n_o):
        cdf += lik_o[y, s]
        if u < cdf:
            return y
    return max(y for y in range(n_o) if lik_o[y, s] > 0)


def simulate(session, world: dict | None = None, seed: int | None = None):
    """Run `session` to its stop against a hidden world; return ``(stop, world_shown)``."""
    rng = np.random.default_rng(seed) if seed is not None else None
    s, shown = hidden_state(session.compiled, world, rng)
    c = session.compiled
    tools = {name: (lambda o=o: draw_outcome(c, o, s, rng)) for o, name in enumerate(c.obs_names)}
    return session.run(tools), shown


@attrs.frozen(kw_only=True)
class SimulatedLog:
    """What :func:`simulate_log` appended: session ids, resolutions and final actions."""

    ids: tuple
    resolved: int
    actions: tuple  # ((action, count), ...) in first-seen order


def simulate_log(truth, log, *, sessions: int, policy, resolve: float = 1.0, resolve_when=None,
                 seed: int = 0, model=None, caller=None, progress=None) -> SimulatedLog:
    """Append `sessions` simulated sessions to `log`: worlds and outcomes from `truth`, decisions on `model`.

    Parameters
    ----------
    truth : Domain or CompiledDomain
        Draws each session's hidden state from its prior and every outcome
        (``unavailable`` included, at its failure rate) from its likelihoods.
    log : planner.io.store.OutcomeLog
        Where the sessions go (several runs and processes may share one).
    policy : str or Policy
        What the sessions run.
    resolve : float
        The probability that a session later learns the truth (every
        proposition's true value is logged as its resolution).
    resolve_when : sequence of str, optional
        Only sessions whose final action is one of these can be resolved
        (for example only released payments learn the truth).
    seed : int
        Seeds worlds, outcomes and resolutions: the same seed appends the same sessions.
    model : Domain or CompiledDomain, optional
        The domain the sessions plan on and log (default: `truth`); it may
        differ from `truth` only in its prior and likelihoods, and must not
        rule out an outcome the truth allows.
    """
    from planner.compile import compile_domain, same_structure
    from planner.session.session import Session

    t = truth if hasattr(truth, "lik") else compile_domain(truth)
    m = t if model is None else (model if hasattr(model, "lik") else compile_domain(model))
    same_structure(m, t)
    if not 0.0 <= resolve <= 1.0:
        raise PlannerError(f"the resolution rate must be in [0, 1], got {resolve:g}")
    if resolve_when is not None:
        unknown = [a for a in resolve_when if a not in m.action_names]
        if unknown:
            raise PlannerError(f"unknown action '{unknown[0]}' to resolve after "
                               f"(actions: {', '.join(m.action_names)})")
    ruled_out = (t.lik[:, :-1, :] > 0) & (m.lik[:, :-1, :] <= 0)  # the unavailable slot is always recordable
    ruled_out &= np.arange(t.lik.shape[1] - 1)[None, :, None] < (m.n_outcomes - 1)[:, None, None]
    if ruled_out.any():
        o, y, s = (int(v[0]) for v in np.nonzero(ruled_out))
        where = ", ".join(f"{t.prop_names[p]}={t.prop_values[p][t.states[s, p]]}" for p in range(len(t.prop_names)))
        raise PlannerError(f"{t.domain.name} gives {t.obs_names[o]} outcome '{t.outcome_names[o][y]}' a positive "
                           f"probability in {where}, where the model rules it out (a session on the model could "
                           "not record it)")
    if sessions > 0:
        # A policy that cannot decide on the model (conservative on an uncalibrated domain, a search
        # past its cap) fails here, before anything is logged, not in the first logged session.
        Session(m, policy, caller=caller).next()
    rng = np.random.default_rng(seed)
    ids, resolved, actions = [], 0, {}
    for _ in range(sessions):
        s = int(rng.choice(t.n_states, p=t.prior))
        session = Session(m, policy, caller=caller, log=log, context={"simulated": {"seed": seed}})
        tools = {name: (lambda o=o: t.outcome_names[o][inverse_cdf(t.lik[o], int(t.n_outcomes[o]), s, rng.random())])
                 for o, name in enumerate(t.obs_names)}
        stop = session.run(tools)
        ids.append(session.log_id)
        actions[stop.action] = actions.get(stop.action, 0) + 1
        u = rng.random()
        if u < resolve and (resolve_when is None or stop.action in resolve_when):
            log.resolve(session.log_id, {t.prop_names[p]: t.prop_values[p][t.states[s, p]]
                                         for p in range(len(t.prop_names))})
            resolved += 1
        if progress is not None:
            progress()
    return SimulatedLog(ids=tuple(ids), resolved=resolved, actions=tuple(actions.items()))
