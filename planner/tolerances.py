"""The tolerances of the Python side: one named constant per concept, each stated once.

Four concepts, and no others, compare floats with a tolerance anywhere in
``planner`` (and in the studies beside it); a test
(``tests/test_architecture.py``) holds that no other module names one or
writes its number:

- :data:`TIE`: two values of a *decision* (net values, plan values, expected
  losses of actions) within it are tied, and the tie rule decides
  (:func:`planner.policies.base.pick_best`). It is the kernels' own constant
  (:data:`lookahead.core.TIE`), so the two worlds break ties alike.
- :data:`BUDGET_TOL`: the slack of a hard limit, for float sums of costs
  (:func:`planner.gates.budget.within`). Also the kernels' own constant
  (:data:`lookahead.core.BUDGET_TOL`).
- :data:`VALUE_TOL`: two *computed* values of the same quantity agree
  (replay against its receipt, a policy against the certified optimum, a
  study's independent recomputation, a certified interval's width).
- :data:`PROB_TOL`: a distribution sums to 1, a probability is 1, a
  calibrated row matches its posterior (the loader's and the receipt's checks).

Iteration constants of one algorithm (EM's convergence in
:mod:`planner.calibration.calibrate`, the score calibrators' Newton steps) are
that algorithm's parameters, named in its module, not tolerances of a
comparison between two modules.

>>> TIE < VALUE_TOL == BUDGET_TOL == PROB_TOL
True
"""

from __future__ import annotations

from lookahead.core import BUDGET_TOL, TIE

__all__ = ["TIE", "BUDGET_TOL", "VALUE_TOL", "PROB_TOL"]

#: Two computed values of one quantity agree within this (absolute).
VALUE_TOL = 1e-9
#: A distribution sums to 1, or a probability is 1, within this.
PROB_TOL = 1e-9
