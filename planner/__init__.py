"""evidence-planner: plan evidence acquisition under a budget.

The public API: load a domain, open a :class:`Session` with a policy (for a
:class:`Caller`), ask ``next()``, ``record()`` outcomes, read the receipt.

>>> import planner
>>> domain = planner.load_domain("payment_release")     # a shipped domain, or any file path
>>> session = planner.Session(domain, "one-step")
>>> session.next().observation
'approval_registry'
"""

from planner.evaluation import evaluate
from planner.evaluation.evaluate import evaluate_policy
from planner.gates import andor
from planner.gates.admission import Reason, admit
from planner.model.caller import Caller
from planner.compile import CompiledDomain, compile_domain
from planner.model.domain import DOMAINS, Domain, load_domain, shipped_domains
from planner.errors import (
    CallerError,
    DomainError,
    PlannerError,
    PolicyError,
    ReceiptError,
    SearchCapError,
    SessionError,
    WorldError,
)
from planner.node import Candidate, Decision, Node, root_node
from planner.policies import NoRetrieval, OneStepEVSI, Policy, StaticTopK, parse_policy
from planner.session.session import Observe, Session, Step
from planner.session.stop import STOP_REASONS, Stop, StopReason

__version__ = "0.1.0"

__all__ = [
    "DOMAINS",
    "Caller",
    "CallerError",
    "Candidate",
    "CompiledDomain",
    "Decision",
    "Domain",
    "DomainError",
    "NoRetrieval",
    "Node",
    "Observe",
    "OneStepEVSI",
    "PlannerError",
    "Policy",
    "PolicyError",
    "Reason",
    "ReceiptError",
    "STOP_REASONS",
    "SearchCapError",
    "Session",
    "SessionError",
    "StaticTopK",
    "Step",
    "Stop",
    "StopReason",
    "WorldError",
    "admit",
    "andor",
    "compile_domain",
    "evaluate",
    "evaluate_policy",
    "load_domain",
    "parse_policy",
    "root_node",
    "shipped_domains",
]
