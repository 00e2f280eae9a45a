"""A decision as it is lived and recorded: the session, its stop, its receipt, replay and redaction.

- :mod:`planner.session.session`: :class:`~planner.session.session.Session` (belief, facts and budget,
  advanced by a policy; tools called, outcomes recorded);
- :mod:`planner.session.stop`: the typed stop reasons and the one function that derives a stop;
- :mod:`planner.session.receipt`: the replayable JSON receipt and its schema;
- :mod:`planner.session.replay`: re-derive every choice of a receipt;
- :mod:`planner.session.redact`: a receipt as a consumer without some entitlements may see it;
- :mod:`planner.session.simulate`: sessions against a hidden world (outcomes drawn by inverse CDF).
"""

__all__ = ["session", "stop", "receipt", "replay", "redact", "simulate"]
