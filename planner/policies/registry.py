"""The registry of policies: the one list that the spec parser, the help text and the study read.

Adding a policy is one file (a :class:`~planner.policies.base.Policy`
subclass with its class attributes: name, arg, summary, study, ...) and one
line in :data:`POLICIES` below. The order of :data:`POLICIES` is the order of
help texts and of the depth study's tables.
"""

from __future__ import annotations

from planner.errors import PolicyError
from planner.policies.base import Policy
from planner.policies.baselines import NoRetrieval, StaticTopK
from planner.policies.blinkered import Blinkered, BlinkeredRepeat
from planner.policies.bounded import Bounded
from planner.policies.confidence import ConfidenceGate
from planner.policies.conservative import Conservative
from planner.policies.decision_region import DecisionRegion
from planner.policies.dependency import DependencyRule
from planner.policies.explore import Explore
from planner.policies.hec import HEC
from planner.policies.lookahead import Lookahead
from planner.policies.onestep import OneStepEVSI
from planner.policies.postfilter import PostFilteredTopK

__all__ = ["POLICIES", "DEFAULT_POLICY", "parse_policy", "policy_class", "policy_forms", "policy_help",
           "study_specs", "policy_table"]

#: Every policy, in help and study order.
POLICIES = (
    NoRetrieval,
    StaticTopK,
    ConfidenceGate,
    OneStepEVSI,
    DependencyRule,
    Blinkered,
    BlinkeredRepeat,
    DecisionRegion,
    HEC,
    Lookahead,
    Bounded,
    Conservative,
    PostFilteredTopK,
    Explore,
)

#: The spec a session uses when none is given.
DEFAULT_POLICY = "bounded"

_BY_NAME = {cls.name: cls for cls in POLICIES}


def policy_forms() -> list:
    """Every spec form, for messages (``["none", "top-k:K", ...]``)."""
    return [form for cls in POLICIES for form in cls.spec_forms()]


def policy_class(spec: str):
    """The class a spec names (PolicyError when none does).

    >>> policy_class("top-k:3").__name__
    'StaticTopK'
    """
    name, _, _ = spec.partition(":")
    cls = _BY_NAME.get(name)
    if cls is None:
        # names, not every form: the list grows with the registry and the error must stay one short line
        raise PolicyError(f"unknown policy '{spec}' (known: {', '.join(c.name for c in POLICIES)})")
    return cls


def parse_policy(spec: str) -> Policy:
    """Build a policy from its spec string.

    >>> parse_policy("top-k:2").spec
    'top-k:2'
    >>> parse_policy("one-step").spec
    'one-step'
    >>> parse_policy("one-step:2")
    Traceback (most recent call last):
    ...
    planner.errors.PolicyError: policy 'one-step:2': takes no argument after ':'
    >>> parse_policy("magic")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    planner.errors.PolicyError: unknown policy 'magic' (known: none, top-k, confidence, one-step, ...)
    """
    if not isinstance(spec, str):
        raise PolicyError(f"a policy spec is a string, got {type(spec).__name__}")
    cls = policy_class(spec)
    _, sep, arg = spec.partition(":")
    if cls.wraps:  # the argument is the wrapped policy's spec
        return cls.from_arg(arg if sep else None, spec, parse=parse_policy)
    if cls.arg is None:
        if sep:
            raise PolicyError(f"policy '{spec}': takes no argument after ':'")
        return cls.from_arg(None, spec)
    return cls.from_arg(arg if sep else None, spec)


def policy_help(default: str = DEFAULT_POLICY) -> str:
    """One paragraph for ``--policy`` help: every form with its summary.

    >>> policy_help().split("; ")[0]
    'none: decide on the prior: acquire nothing'
    """
    parts = []
    for cls in POLICIES:
        forms = ", ".join(cls.spec_forms())
        mark = " (default)" if default in cls.spec_forms() or default == cls.name else ""
        parts.append(f"{forms}{mark}: {cls.summary}")
    return "; ".join(parts)


def study_specs(group: str | None = None) -> tuple:
    """The specs the depth study compares (every case), or those of one of its groups, in table order.

    The study reads its policy lists here and nowhere else: each class's
    :attr:`~planner.policies.base.Policy.study` (spec -> the groups it is in).

    >>> study_specs()[:4]
    ('none', 'top-k:1', 'top-k:3', 'confidence:0.9')
    >>> study_specs("conservative")
    ('one-step', 'bounded')
    """
    return tuple(spec for cls in POLICIES for spec, groups in cls.study.items() if group is None or group in groups)


def policy_table() -> str:
    """The registered policies as a markdown table (``docs/CONTRIBUTING.md`` holds it; a test keeps it current).

    >>> policy_table().splitlines()[2].split(" | ")[0]
    '| `none`'
    """
    lines = ["| spec | what it does | in the depth study |", "|---|---|---|"]
    for cls in POLICIES:
        forms = ", ".join(f"`{f}`" for f in cls.spec_forms())
        study = ", ".join(f"`{s}`" for s in cls.study) or "no"
        lines.append(f"| {forms} | {cls.summary} | {study} |")
    return "\n".join(lines)
