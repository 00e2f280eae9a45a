"""The depth study's design: seeds, the policies compared, the models and the frontier's grid.

One module that both the runner (:mod:`studies.depth.run`) and the
report (:mod:`studies.depth.report`) read, so neither imports the other's
constants. The policy lists are the registry's
(:func:`planner.policies.registry.study_specs`): each policy class declares
its specs and their groups (``study``), so adding a policy
to the study is a line in its own class.
"""

from __future__ import annotations

from planner.policies.registry import study_specs

__all__ = ["SEEDS", "POLICIES", "CHEAP", "DEPTH", "MODEL_POLICIES", "CONSERVATIVE", "LAMBDAS", "NS", "HISTORICAL",
           "FRONTIER_CALLS", "FRONTIER_WEIGHTS", "FRONTIER_POLICIES"]

#: Generator seeds of the wide families.
SEEDS = (0, 1, 2, 3, 4)

#: Every policy measured on every case, in table order (``bounded`` at two fixed node budgets, two planning
#: prices and its default budget: :class:`planner.policies.bounded.Bounded`).
POLICIES = study_specs()

#: The cheap policies: static, one-step, rule-based and the two published semi-myopic baselines, plus
#: lookahead:2 (a fixed small depth).
CHEAP = study_specs("cheap")

#: The multi-step planners.
DEPTH = study_specs("depth")

#: Policies scored under model error (planning on a wrong model).
MODEL_POLICIES = study_specs("model")
#: The conservative rule's bases, on estimated models (it needs a calibration's posterior).
CONSERVATIVE = study_specs("conservative")
#: Logit scaling factors of the scaled models.
LAMBDAS = (0.5, 0.75, 1.5, 2.0)
#: Logged sessions of the estimated models.
NS = (10, 20, 50, 100, 500)
#: The historical rule whose sessions fill the log.
HISTORICAL = "top-k:3"

#: Frontier: calls limits (None: no limit), penalty-weight multipliers and policies.
FRONTIER_CALLS = (1, 2, 3, 4, 6, 8, 12, None)
FRONTIER_WEIGHTS = (0.25, 1.0, 4.0)
FRONTIER_POLICIES = study_specs("frontier")
