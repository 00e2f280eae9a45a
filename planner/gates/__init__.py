"""The hard gates an observation passes before it is scored, as data, and the precondition graph.

- :mod:`planner.gates.admission`: the caller-fixed gates (entitlement, purpose, freshness) and
  :class:`~planner.gates.admission.Reason`;
- :mod:`planner.gates.budget`: the one affordability rule of the Python side (spent + cost within a
  hard limit) and the dimension that blocks;
- :mod:`planner.gates.andor`: the AND/OR precondition graph (networkx);
- :mod:`planner.gates.prerequisites`: walks over it (the cheapest prerequisite plan, availability warnings).

Nodes (:mod:`planner.node`) apply the budget and precondition gates at each step.
"""

__all__ = ["admission", "budget", "andor", "prerequisites"]
