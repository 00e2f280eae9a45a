"""The model: the validated domain (attrs, frozen) and the caller a session plans for.

- :mod:`planner.model.parts`: propositions, actions, observations, likelihoods, fact expressions, roles;
- :mod:`planner.model.domain`: :class:`~planner.model.domain.Domain` (built by the loader) and the shipped domains;
- :mod:`planner.model.caller`: :class:`~planner.model.caller.Caller` (entitlements, purpose, decision time,
  limit overrides).

The compiler (:mod:`planner.compile`) turns a domain into arrays.
"""

__all__ = ["parts", "domain", "caller"]
