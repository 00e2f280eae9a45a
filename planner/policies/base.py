"""The policy interface, its contract, and the deterministic tie rule."""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import TIE

__all__ = ["Policy", "pick_best", "best_of", "positive_int"]


class Policy:
    """A policy: ``decide(node) -> Decision``.

    **The contract** every policy keeps, and that the session, exact
    evaluation (:mod:`planner.evaluation.evaluate`), acquisition harm, replay and the
    depth study rely on:

    1. *A decision is a deterministic function of the node*: the same node
       (the same set of (observation, outcome) pairs seen, under the same
       compiled domain and admission) gives the same :class:`Decision`, choice
       and candidate values alike, whatever was asked before and in whatever
       order. The evaluator memoises decisions on the node, replay re-derives
       them, and the study reuses a decision at a node met twice. A policy may
       cache work, never let the cache change an answer.
    2. It only chooses an observation that is ``eligible`` at the node
       (admitted, available, affordable, not taken); the session refuses any
       other.
    3. Its candidate table lists every observation once, in file order:
       rejected rows with their reasons (never scored), taken rows, and
       admitted rows with the policy's value, penalty and net.
    4. ``spec`` rebuilds an equal policy through
       :func:`planner.policies.parse_policy` (it is stored in receipts).
    5. :meth:`choose` gives exactly ``decide``'s choice and ``limited`` flag;
       exact evaluation calls it, so a policy may override it to skip the
       candidate table and the plan text it does not need.

    **Registering a policy**: one file defines a subclass (a frozen attrs
    class) with the class attributes below, and one line in
    :mod:`planner.policies.registry` lists it. The spec parser, the CLI help
    text, the receipts' value label and the depth study read those attributes;
    nothing else needs to change.

    Class attributes
    ----------------
    name : str
        The spec's name (``"top-k"``).
    arg : str or None
        The placeholder of the spec's argument (``"K"``), or None for a policy
        without one (spec ``"one-step"``).
    forms : tuple of str
        The spec forms listed in help texts (default: ``name`` or ``name:arg``).
    summary : str
        One line for the help text.
    study : mapping of str to tuple of str
        The depth study's part: each spec of this policy measured on every
        case (in table order) -> the study's groups it belongs to: ``cheap``
        (static, one-step, rule-based and small fixed-depth planners),
        ``depth`` (multi-step planners), ``model`` (scored under model error),
        ``frontier`` (the budget and penalty frontier), ``conservative`` (a base
        of the conservative rule on estimated models). Empty: not compared.
        The study reads nothing else.
    node_cap_field : str or None
        The attrs field that holds the node cap of one decision (the policy
        searches); None for a policy that does not search, which
        :meth:`with_node_cap` then returns unchanged.
    work_field : str or None
        The attrs field that holds the budget of one decision in work units
        (``bounded``); :meth:`with_work` sets it.
    value_label : str
        The heading of the candidate table's value column.
    wraps : bool
        The spec's argument is another policy's spec (``conservative:lookahead:2``):
        :meth:`from_arg` is then called with ``parse=`` the spec parser, to build it.
    """

    name: str = "?"
    arg: str | None = None
    forms: tuple = ()
    summary: str = ""
    study: dict = {}
    node_cap_field: str | None = None
    work_field: str | None = None
    value_label: str = "EVSI"
    wraps: bool = False

    @property
    def spec(self) -> str:
        return self.name

    @classmethod
    def from_arg(cls, arg: str | None, spec: str) -> "Policy":
        """Build the policy from the text after ``name:`` (None when the spec has none).

        Raise :class:`~planner.errors.PolicyError` naming `spec` on a bad argument.
        A policy that :attr:`wraps` another also receives ``parse`` (the spec
        parser, :func:`planner.policies.parse_policy`) as a keyword.
        """
        return cls()

    @classmethod
    def spec_forms(cls) -> tuple:
        return cls.forms or ((cls.name,) if cls.arg is None else (f"{cls.name}:{cls.arg}",))

    def decide(self, node):  # pragma: no cover - interface
        raise NotImplementedError

    def choose(self, node) -> tuple:
        """``(observation index or None, limited)``: :meth:`decide`'s choice without its presentation."""
        d = self.decide(node)
        return d.observe, d.limited

    def with_node_cap(self, n: int) -> "Policy":
        """This policy with at most `n` search nodes per decision (itself when it does not search).

        The default sets the field :attr:`node_cap_field` names; a policy that
        wraps another (:attr:`wraps`) caps its base instead (it overrides this).

        >>> from planner.policies import parse_policy
        >>> parse_policy("one-step").with_node_cap(10).spec
        'one-step'
        """
        if self.node_cap_field is None:
            return self
        return attrs.evolve(self, **{self.node_cap_field: int(n)})

    def with_work(self, n: int) -> "Policy":
        """This policy with a budget of `n` work units per decision (itself when it budgets no work).

        >>> from planner.policies import parse_policy
        >>> parse_policy("bounded").with_work(1000).spec, parse_policy("one-step").with_work(9).spec
        ('bounded:1000', 'one-step')
        """
        if self.work_field is None:
            return self
        return attrs.evolve(self, **{self.work_field: int(n)})

    def params(self) -> dict:
        """The policy's parameters, for receipts."""
        return attrs.asdict(self) if attrs.has(type(self)) else {}


def positive_int(text: str | None, spec: str) -> int:
    """The positive integer after ``name:`` in `spec` (a one-line error otherwise).

    >>> positive_int("3", "top-k:3")
    3
    >>> positive_int("x", "top-k:x")
    Traceback (most recent call last):
    ...
    planner.errors.PolicyError: policy 'top-k:x': expected a positive integer after ':'
    """
    from planner.errors import PolicyError

    try:
        k = int(text) if text is not None else 0
    except ValueError:
        k = 0
    if k < 1:
        raise PolicyError(f"policy '{spec}': expected a positive integer after ':'")
    if k > 2**63 - 1:  # the kernels count in signed 64-bit integers
        raise PolicyError(f"policy '{spec[:40]}{'...' if len(spec) > 40 else ''}': the integer after ':' must be "
                          "at most 2**63-1")
    return k


def pick_best(net, penalty, mask, *, tie: float = TIE) -> int | None:
    """The observation to take: the largest `net` among `mask`, if it beats stopping.

    Stopping wins ties: an observation is taken only when its net exceeds 0 by
    more than `tie` (default :data:`~lookahead.core.TIE`). Among observations
    within `tie` of the best, the lower penalty (within TIE) wins, then the one
    declared first.

    >>> pick_best(np.array([1.0, 1.0 + 1e-13, 0.5]), np.array([0.3, 0.2, 0.1]), np.array([True, True, True]))
    1
    >>> pick_best(np.array([1e-13]), np.array([0.0]), np.array([True])) is None
    True
    """
    idx = [o for o in range(len(mask)) if mask[o] and np.isfinite(net[o])]
    if not idx or max(net[o] for o in idx) <= tie:
        return None
    return best_of(net, penalty, idx, tie=tie)


def best_of(score, penalty, candidates, *, tie: float = TIE) -> int | None:
    """The tie rule, once: the largest `score` among `candidates`, ties within `tie`, then lower penalty, then file order.

    Every policy that picks among observations calls this (through
    :func:`pick_best` when stopping competes): values within `tie` (absolute,
    default :data:`~lookahead.core.TIE`) are tied, then the lower penalty
    (within TIE) wins, then the one declared first. None when no candidate
    has a finite score.

    >>> best_of(np.array([2.0, 2.0, 1.0]), np.array([0.5, 0.1, 0.0]), [0, 1, 2])
    1
    >>> best_of(np.array([1.0, np.inf]), np.array([0.0, 0.0]), [])
    """
    idx = [o for o in candidates if np.isfinite(score[o])]
    if not idx:
        return None
    best = max(score[o] for o in idx)
    tied = [o for o in idx if score[o] >= best - tie]
    low = min(penalty[o] for o in tied)
    return next(o for o in tied if penalty[o] <= low + TIE)
