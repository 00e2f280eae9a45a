"""evidence-planner: plan evidence acquisition under a budget.

The public API: load a domain, open a :class:`Session` with a policy (for a
:class:`Caller`), ask ``next()``, ``record()`` outcomes, read the receipt.

>>> import planner
>>> domain = planner.load_domain("payment_release")     # a shipped domain, or any file path
>>> session = planner.Session(domain, "one-step")
>>> session.next().observation
'approval_registry'

Every public name is imported on first use (PEP 562), so ``import planner``
(and so every ``planner`` command) loads only what it needs: the seed case's
command never imports the evaluator, the calibration or the retrieval code.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

__version__ = "0.1.0"

#: Public name -> the module that defines it (``planner.andor`` and ``planner.evaluate`` are modules).
_SOURCES = {
    "DOMAINS": "planner.model.domain",
    "Caller": "planner.model.caller",
    "CallerError": "planner.errors",
    "Candidate": "planner.node",
    "CompiledDomain": "planner.compile",
    "Decision": "planner.node",
    "Domain": "planner.model.domain",
    "DomainError": "planner.errors",
    "NoRetrieval": "planner.policies",
    "Node": "planner.node",
    "Observe": "planner.session.session",
    "OneStepEVSI": "planner.policies",
    "PlannerError": "planner.errors",
    "Policy": "planner.policies",
    "PolicyError": "planner.errors",
    "Reason": "planner.gates.admission",
    "ReceiptError": "planner.errors",
    "STOP_REASONS": "planner.session.stop",
    "SearchCapError": "planner.errors",
    "Session": "planner.session.session",
    "SessionError": "planner.errors",
    "StaticTopK": "planner.policies",
    "Step": "planner.session.session",
    "Stop": "planner.session.stop",
    "StopReason": "planner.session.stop",
    "WorldError": "planner.errors",
    "admit": "planner.gates.admission",
    "compile_domain": "planner.compile",
    "evaluate_policy": "planner.evaluation.evaluate",
    "load_domain": "planner.model.domain",
    "parse_policy": "planner.policies",
    "root_node": "planner.node",
    "shipped_domains": "planner.model.domain",
}
_MODULES = {"andor": "planner.gates.andor", "evaluate": "planner.evaluation.evaluate"}

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

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports on first use
    from planner.compile import CompiledDomain, compile_domain
    from planner.errors import (CallerError, DomainError, PlannerError, PolicyError, ReceiptError, SearchCapError,
                                SessionError, WorldError)
    from planner.evaluation import evaluate
    from planner.evaluation.evaluate import evaluate_policy
    from planner.gates import andor
    from planner.gates.admission import Reason, admit
    from planner.model.caller import Caller
    from planner.model.domain import DOMAINS, Domain, load_domain, shipped_domains
    from planner.node import Candidate, Decision, Node, root_node
    from planner.policies import NoRetrieval, OneStepEVSI, Policy, StaticTopK, parse_policy
    from planner.session.session import Observe, Session, Step
    from planner.session.stop import STOP_REASONS, Stop, StopReason


def __getattr__(name: str):
    """Import a public name on first use, and keep it (the next look-up is a plain attribute)."""
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name])
    elif name in _SOURCES:
        value = getattr(importlib.import_module(_SOURCES[name]), name)
    elif not name.startswith("_") and importlib.util.find_spec(f"planner.{name}") is not None:
        # A subpackage (``planner.policies``): code written when ``import planner`` imported them all still runs.
        value = importlib.import_module(f"planner.{name}")
    else:
        raise AttributeError(f"module 'planner' has no attribute '{name}'")
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
