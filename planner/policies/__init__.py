"""Policies: given a :class:`~planner.node.Node`, observe something or stop.

Every policy returns a :class:`~planner.node.Decision` whose candidate table
lists every observation: rejected ones with their reason (never scored),
admitted ones with the policy's value, penalty and net. A policy only ever
chooses an observation that is ``eligible`` at the node. The contract is
written on :class:`~planner.policies.base.Policy`; the list of policies and
their specs is :mod:`planner.policies.registry`.
"""

from planner.policies.base import Policy, pick_best
from planner.policies.baselines import NoRetrieval, StaticTopK
from planner.policies.onestep import OneStepEVSI
from planner.policies.registry import DEFAULT_POLICY, POLICIES, parse_policy, policy_class, policy_forms

__all__ = ["Policy", "OneStepEVSI", "NoRetrieval", "StaticTopK", "parse_policy", "pick_best", "policy_class",
           "policy_forms", "POLICIES", "DEFAULT_POLICY"]
