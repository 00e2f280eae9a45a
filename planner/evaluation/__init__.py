"""Judging policies and runs: exact evaluation, acquisition harm, the independent audit, scripted checks.

- :mod:`planner.evaluation.evaluate`: a policy's exact expected total loss over every outcome path;
- :mod:`planner.evaluation.harm`: acquisition harm against deciding on the prior;
- :mod:`planner.evaluation.audit`: the independent audit of a receipt, from the raw domain file;
- :mod:`planner.evaluation.check`: the ``checks:`` of a domain file (``planner check``).
"""

__all__ = ["evaluate", "harm", "audit", "check"]
