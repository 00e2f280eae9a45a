"""The second edition's design: seeds, the policies compared, the models and the frontier's grid.

One module that both the runner (:mod:`planner.study.edition2`) and the
report (:mod:`planner.study.report2`) read, so neither imports the other's
constants.
"""

from __future__ import annotations

__all__ = ["SEEDS", "POLICIES", "CHEAP", "DEPTH", "MODEL_POLICIES", "CONSERVATIVE", "LAMBDAS", "NS", "HISTORICAL",
           "FRONTIER_CALLS", "FRONTIER_WEIGHTS", "FRONTIER_POLICIES"]

#: Generator seeds of the wide families.
SEEDS = (0, 1, 2, 3, 4)

#: Every policy measured on every case, in table order. ``bounded`` at two fixed node budgets, its
#: default budget, and two planning prices (loss units per 1,000 nodes, :class:`planner.policies.bounded.Bounded`).
POLICIES = ("none", "top-k:1", "top-k:3", "confidence:0.9", "one-step", "dependency", "blinkered:2",
            "decision-region", "lookahead:2", "lookahead:3", "lookahead:auto", "bounded:1000", "bounded:10000",
            "bounded:auto:1", "bounded:auto:0.1", "bounded")

#: The cheap policies: static, one-step, rule-based and the two published semi-myopic baselines, plus
#: lookahead:2 (a fixed small depth).
CHEAP = ("top-k:1", "top-k:3", "confidence:0.9", "one-step", "dependency", "blinkered:2", "decision-region",
         "lookahead:2")

#: The multi-step planners.
DEPTH = ("lookahead:2", "lookahead:3", "lookahead:auto", "bounded:1000", "bounded:10000", "bounded:auto:1",
         "bounded:auto:0.1", "bounded")

#: Policies scored under model error (planning on a wrong model).
MODEL_POLICIES = ("none", "one-step", "dependency", "blinkered:2", "decision-region", "lookahead:2", "lookahead:3",
                  "bounded")
#: The conservative rule's bases, on estimated models (it needs a calibration's posterior).
CONSERVATIVE = ("one-step", "bounded")
#: Logit scaling factors of the scaled models.
LAMBDAS = (0.5, 0.75, 1.5, 2.0)
#: Logged sessions of the estimated models.
NS = (10, 20, 50, 100, 500)
#: The historical rule whose sessions fill the log.
HISTORICAL = "top-k:3"

#: Frontier: calls limits (None: no limit), penalty-weight multipliers and policies.
FRONTIER_CALLS = (1, 2, 3, 4, 6, 8, 12, None)
FRONTIER_WEIGHTS = (0.25, 1.0, 4.0)
FRONTIER_POLICIES = ("none", "top-k:3", "one-step", "dependency", "blinkered:2", "decision-region", "lookahead:2",
                     "lookahead:3", "bounded")
