"""The POUCT peer in the third edition's case jobs: equal simulations and equal planning time, as counts.

On every case, after the exact rows, pomdp_py's POUCT (:mod:`studies.peer`)
is replayed on :data:`~studies.depth3.design.PEER_EPISODES` episodes drawn
from the case's key (:func:`studies.measure.draw_episodes`, common random
numbers for both variants) with the faithful settings
(:data:`studies.peer.FAITHFUL`: one-step rollouts, the posterior's expected
loss as a decision's reward, the most visited action) and a UCB multiplier
tuned once per run inside its grid on instances outside the study
(:func:`tune`). Two budgets per decision, both derived from ``bounded``'s
*counted* work on the same case (its ``search_nodes_per_episode`` over its
``decisions_per_episode``), so no clock is read in a job:

- ``pouct:nodes`` (equal simulations): one simulation per search node
  ``bounded`` counts per decision (a simulation adds at most one belief node
  to POUCT's tree);
- ``pouct:time`` (equal planning time): ``bounded``'s nodes per decision x
  :data:`~studies.depth3.design.NODE_MS` ms per node (the study's own
  node-to-time conversion) / :data:`~studies.depth3.design.PEER_MS_PER_SIM`
  ms per POUCT simulation (measured once, :func:`calibrate`, and fixed in
  the design).

Both are at least 1 and at most :data:`~studies.depth3.design.PEER_MAX_SIMS`
(the row says ``sims_capped``); where ``bounded`` has no count (its row
capped or failed) both take the maximum and say so. The figures are Monte
Carlo means with a standard error, so the peer's rows stay out of the exact
selection map; the report compares them, paired by case, with ``bounded``
and one-step (section 3).
"""

from __future__ import annotations

import math

from studies.depth3.design import NODE_MS, PEER_EPISODES, PEER_MAX_SIMS, PEER_MS_PER_SIM

__all__ = ["PEERS", "TUNE_CASES", "TUNE_SIMS", "TUNE_EPISODES", "matched_sims", "tune", "peer_rows", "calibrate"]

#: The peer's row names in ``cases.csv``.
PEERS = ("pouct:nodes", "pouct:time")
#: Tuning instances (generator seed 99: not a study seed), simulations and episodes.
TUNE_CASES = ((99, 0), (99, 1), (99, 2), (99, 3))
TUNE_SIMS = 100
TUNE_EPISODES = 20


def matched_sims(nodes_per_decision: float, max_sims: int = PEER_MAX_SIMS) -> dict:
    """Simulations per decision of each peer from ``bounded``'s counted nodes per decision (NaN: no count).

    Returns ``{peer: (sims, capped)}``.

    >>> matched_sims(5000.0, max_sims=2000)["pouct:nodes"], matched_sims(5000.0, max_sims=2000)["pouct:time"][1]
    ((2000, True), False)
    >>> matched_sims(float("nan"), max_sims=2000)["pouct:time"]
    (2000, True)
    """
    if not (isinstance(nodes_per_decision, (int, float)) and math.isfinite(nodes_per_decision)):
        return {p: (int(max_sims), True) for p in PEERS}
    want = {"pouct:nodes": nodes_per_decision, "pouct:time": nodes_per_decision * NODE_MS / PEER_MS_PER_SIM}
    return {p: (max(1, min(int(max_sims), int(round(v)))), bool(round(v) > max_sims)) for p, v in want.items()}


def tune() -> dict:
    """The UCB multiplier, tuned inside its grid on :data:`TUNE_CASES` at :data:`TUNE_SIMS` simulations.

    Seeded and count-budgeted, so the same on every machine; the result
    (``ExplorationTuning.to_dict()``) goes into ``meta.json``.
    """
    from planner.compile import compile_domain
    from planner.gates.admission import admit
    from planner.model.domain import Domain
    from studies import peer
    from studies.depth.run import caller
    from studies.families import stable_seed
    from studies.wide import wide_instance

    who = caller()
    cases = []
    for s, i in TUNE_CASES:
        c = compile_domain(Domain.from_dict(wide_instance(s, i)[1]))
        cases.append((c, admit(c, who)))
    t = peer.tune_exploration_inside(cases, peer.DEFAULT_EXPLORATION_SCALES, num_sims=TUNE_SIMS,
                                     episodes=TUNE_EPISODES, seed=stable_seed("depth3-tune"), **peer.FAITHFUL)
    d = t.to_dict()
    d["table"] = {str(k): v for k, v in d["table"].items()}  # JSON keys
    d["tuning_cases"] = [list(x) for x in TUNE_CASES]
    return d


def peer_rows(compiled, admission, key: str, bounded: dict, base: dict, exploration_scale: float,
              episodes: int = PEER_EPISODES) -> list:
    """The two peer rows of one case (``base``: the case's columns; ``bounded``: its ``bounded`` row)."""
    from studies import peer
    from studies.families import stable_seed
    from studies.measure import draw_episodes

    nodes, dec = bounded.get("search_nodes_per_episode"), bounded.get("decisions_per_episode")
    per = nodes / dec if (bounded.get("capped") is False and not bounded.get("failed") and dec and
                          isinstance(nodes, float) and math.isfinite(nodes)) else math.nan
    budgets = matched_sims(per)
    states, uniforms = draw_episodes(compiled, int(episodes), stable_seed("depth3-peer", "episodes", key))
    seed = stable_seed("depth3-peer", "search", key)
    rows = []
    for p in PEERS:
        sims, capped = budgets[p]
        row = dict(base, policy=p, capped=False, failed=False, error="", estimate="monte carlo",
                   episodes=int(episodes), num_sims=sims, sims_capped=capped, bounded_nodes_per_decision=per)
        try:
            r = peer.run_pouct(compiled, admission, states, uniforms, num_sims=sims, seed=seed,
                               exploration_scale=exploration_scale, **peer.FAITHFUL)
        except (ValueError, RuntimeError) as e:  # a peer that cannot run here says why, the case keeps its rows
            row.update(failed=True, error=f"{type(e).__name__}: {str(e).splitlines()[0][:180]}",
                       loss_lo=math.nan, loss_up=math.nan, mc_se=math.nan)
            rows.append(row)
            continue
        t = r["total"]
        m = float(t.mean())
        row.update(total_loss=m, loss_lo=m, loss_up=m,
                   mc_se=float(t.std(ddof=1) / math.sqrt(len(t))) if len(t) > 1 else math.nan,
                   decisions_per_episode=float(r["decisions"]),
                   search_nodes_per_episode=float(r["sims"]) * float(r["decisions"]),
                   illegal=int(r["illegal"]))
        rows.append(row)
    return rows


def calibrate(probe_sims: int = 200, episodes: int = 10) -> dict:
    """POUCT's milliseconds per simulation on :data:`TUNE_CASES` (wall clock, this machine): run once, by hand.

    The median over the cases of (planning time / simulations) at
    `probe_sims` per decision, faithful settings, multiplier 1. The number is
    written into :data:`~studies.depth3.design.PEER_MS_PER_SIM` by hand;
    no study job calls this (``python3 -m studies.depth3.pouct``).
    """
    import numpy as np

    from planner.compile import compile_domain
    from planner.gates.admission import admit
    from planner.model.domain import Domain
    from studies import peer
    from studies.depth.run import caller
    from studies.measure import draw_episodes
    from studies.wide import wide_instance

    who = caller()
    per = []
    for s, i in TUNE_CASES:
        c = compile_domain(Domain.from_dict(wide_instance(s, i)[1]))
        a = admit(c, who)
        states, uniforms = draw_episodes(c, episodes, 0)
        peer.run_pouct(c, a, states[:1], uniforms[:1], num_sims=10, seed=0, **peer.FAITHFUL)  # warm-up
        r = peer.run_pouct(c, a, states, uniforms, num_sims=probe_sims, seed=0, **peer.FAITHFUL)
        per.append(float(r["decision_ms"].sum()) / float(r["decision_sims"].sum()))
    return {"ms_per_sim": float(np.median(per)), "per_case": per, "probe_sims": probe_sims, "episodes": episodes}


if __name__ == "__main__":
    import json

    print(json.dumps(calibrate(), indent=1))
