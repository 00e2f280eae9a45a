"""The third edition's design: splits, prices, the node-to-time conversion, caps and verdict rules.

One module the runner, the selection and the report all read. Every
number a result depends on is here, so ``docs/depth-study.md`` and the
report can state it.
"""

from __future__ import annotations

from planner.policies.registry import study_specs

__all__ = ["POLICIES", "BASELINE", "SELECT_SEEDS", "TEST_SEEDS", "SEEDS", "PRICES", "ANCHORED", "NODE_MS", "NODE_MS_MEASURED",
           "EVAL_CAP", "EVAL_WORK", "LEVEL", "ALPHA", "N_BOOT", "BOOT_SEED", "EQ", "MIN_N", "budget_level", "structure",
           "BUDGET_LEVELS", "STRUCTURES", "MIXES", "PEER_EPISODES", "PEER_MAX_SIMS", "PEER_MS_PER_SIM"]

#: Every policy the study measures, on every case (the registry's study specs, in its order).
POLICIES = study_specs()
#: The reference policy: every gain is over it.
BASELINE = "one-step"

#: Generator seeds the selection map is chosen on, and the held-out seeds its regret is measured on.
SELECT_SEEDS = (0, 1, 2)
TEST_SEEDS = (3, 4)
SEEDS = SELECT_SEEDS + TEST_SEEDS

#: The price sweep, in loss units per millisecond of planning time; besides it every case is priced at its
#: own latency weight (``budget.weights.latency_ms``: what the domain charges per ms of tool latency).
PRICES = (0.0, 1e-5, 1e-4, 1e-3, 1e-2)
#: The label of the anchored price in tables.
ANCHORED = "anchored"

#: Milliseconds of planning per counted search node. Planning time is never measured in this edition: it
#: is the counted search nodes per episode (:func:`studies.measure.search_nodes`, every search phase's
#: ``nodes_expanded``; rules that report no search count the eligible observations they value) times
#: this constant, the median of ``planning_ms_per_episode / search_nodes_per_episode`` over the second
#: edition's committed rows with more than 100 nodes (748 rows of ``studies/results/depth/cases.csv``).
NODE_MS = 2.3e-3
#: Milliseconds per counted search node of each searching policy, re-measured on the engine of the committed
#: run by :mod:`studies.depth3.node_ms` (figures frozen here, so no run reads a clock). Only the report's
#: sensitivity section reads them; every table prices nodes at :data:`NODE_MS`. Measured 2026-12-07 on an idle
#: 2-core machine (``python3 -m studies.depth3.node_ms --workers 1``, studies/results/depth3-node-ms/: 30 cases,
#: the root decision, fastest of 3; a second run agreed to within 12% per policy), 3 significant figures.
NODE_MS_MEASURED: dict = {"lookahead:2": 1.12e-3, "lookahead:3": 0.527e-3, "lookahead:auto": 0.719e-3,
                          "bounded:5000000": 2.60e-3, "bounded:50000000": 1.68e-3, "bounded:auto:1": 1.57e-3,
                          "bounded:auto:0.1": 2.17e-3, "bounded": 2.15e-3}

#: Distinct policy-tree nodes and search nodes one policy's exact evaluation may use on one case (the
#: second edition's caps, counts, never the clock). Past either the row keeps bounds on its loss
#: (:func:`studies.measure.loss_bounds`: the tree decided best first up to the same caps, the rest bounded
#: by :func:`studies.measure.cut_bounds`) and is flagged ``capped``. Kept, not raised: on the 64 capped rows
#: of the committed run (engine 2a14f40; 37 re-measured) the new bounds at these caps narrow the median width
#: from 27.5 to 2.1 (largest upper bound 192 -> 21.9) at the same counts (docs/depth-study.md); a work cap of
#: 20,000,000 made one root-bound row exact (s0/i014 ``bounded:auto:1``, 17 s) but cost 3.5x on another
#: for a width of 7.2 instead of 9.2 (s1/i014 ``bounded:auto:1``, 48 s against 13 s): not worth it.
EVAL_CAP = 30_000
EVAL_WORK = 5_000_000

#: Interval level, verdict A's adjusted-p threshold, bootstrap resamples and seed.
LEVEL = 0.90
ALPHA = 0.10
N_BOOT = 2000
BOOT_SEED = 24
#: Fewest cases a cell needs for an interval, a p-value (and so verdict A), and for the ``fallback`` rule to
#: trust it over the pooled cell.
MIN_N = 5
#: Two losses closer than this are equal (a case "gains" when its net gain exceeds it).
EQ = 1e-9

BUDGET_LEVELS = ("tight", "medium", "loose", "none")
STRUCTURES = ("gated+chain", "gated", "chain", "plain")

#: Structural mixes the generated cases are reweighted to: (gated share, chain share), every pair of the
#: gated shares 0.25, 0.5, 0.75 and the chain shares 0.2, 0.5, 0.8 (:func:`studies.depth3.select.reweighted`).
MIXES = tuple((g, c) for g in (0.25, 0.5, 0.75) for c in (0.2, 0.5, 0.8))

#: The POUCT peer (:mod:`studies.depth3.pouct`): episodes per case (common random numbers for both
#: budgets), and the most simulations per decision either budget may take.
PEER_EPISODES = 20
PEER_MAX_SIMS = 500
#: Milliseconds of wall time per POUCT simulation (faithful settings), measured once by
#: ``python3 -m studies.depth3.pouct`` (the median over its four tuning instances at 200 simulations per
#: decision, on the study's 2-core machine; see docs/depth-study.md) and fixed here, so that the
#: time-matched budget is a count: ``bounded``'s nodes per decision x NODE_MS / PEER_MS_PER_SIM.
PEER_MS_PER_SIM = 0.84


def budget_level(data: dict) -> str:
    """A domain's budget level from its calls limit: the wide generator's bands (1-3, 4-6, 7+, none).

    >>> budget_level({"budget": {"limits": {"calls": 2}}}), budget_level({"budget": {"limits": {}}})
    ('tight', 'none')
    """
    calls = ((data.get("budget") or {}).get("limits") or {}).get("calls")
    if calls is None:
        return "none"
    return "tight" if calls <= 3 else "medium" if calls <= 6 else "loose"


def structure(data: dict) -> str:
    """A domain's structural class: gated (an action ``requires`` evidence), chain (an observation ``requires`` another).

    >>> structure({"actions": {"a": {"requires": {"x": "y"}}}, "observations": {"o": {}}})
    'gated'
    """
    gated = any("requires" in (a or {}) for a in (data.get("actions") or {}).values())
    chain = any("requires" in (o or {}) for o in (data.get("observations") or {}).values())
    return {(True, True): "gated+chain", (True, False): "gated", (False, True): "chain"}.get((gated, chain), "plain")
