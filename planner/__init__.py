"""evidence-planner: plan evidence acquisition under a budget.

The public API: load a domain, open a :class:`Session` with a policy, ask
``next()``, ``record()`` outcomes, read the receipt.

>>> import planner
>>> domain = planner.load_domain(planner.DOMAINS / "payment_release.yaml")
>>> session = planner.Session(domain, "one-step")
>>> session.next().observation
'approval_registry'
"""

from pathlib import Path

from planner.admission import admit
from planner.compile import CompiledDomain, compile_domain
from planner.errors import DomainError, PlannerError, SearchCapError, SessionError
from planner.loader import load_domain
from planner.model import Domain
from planner.node import Candidate, Decision, Node
from planner.policies import NoRetrieval, OneStepEVSI, Policy, StaticTopK, parse_policy
from planner.session import STOP_REASONS, Observe, Session, Stop, StopReason

__version__ = "0.1.0"

#: The domain files shipped in the repository (``domains/`` beside the package).
DOMAINS = Path(__file__).resolve().parent.parent / "domains"

__all__ = [
    "DOMAINS",
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
    "STOP_REASONS",
    "SearchCapError",
    "Session",
    "SessionError",
    "StaticTopK",
    "Stop",
    "StopReason",
    "admit",
    "compile_domain",
    "load_domain",
    "parse_policy",
]
