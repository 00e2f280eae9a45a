"""The semi-myopic "blinkered" VOI rule (Tolpin and Shimony), over small batches.

Tolpin and Shimony's blinkered scheme values a measurement by the best of
repeating it k times (k = 1, 2, ...), which catches the value that several weak
measurements have together and none has alone. Here every observation can be
acquired at most once, so the extension is over *batches* of distinct
observations instead of repetitions.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import TIE
from planner.gates.budget import affordable
from planner.node import Decision
from planner.policies.base import Policy, best_of, pick_best, positive_int
from planner.policies.onestep import one_step_table

__all__ = ["Blinkered", "batch_value", "greedy_batches"]

#: The largest batch when the spec gives none.
DEFAULT_K = 3


def batch_value(node, batch) -> float:
    """The value of observing every member of `batch` non-adaptively at `node`.

    ``R(b) - sum over joint outcomes y of P(y | b) R(b_y)``, where the leaf
    is reached by :meth:`~planner.node.Node.child` member by member (so facts
    and permitted actions are those after the whole batch) and joint outcomes
    of probability 0 are skipped. A batch of one is the one-step EVSI.

    >>> import planner
    >>> n = planner.Session(planner.load_domain("complementary_signals")).node
    >>> round(batch_value(n, [0]), 6), round(batch_value(n, [0, 1]), 4)
    (0.0, 0.234)
    """
    def expected_risk(n, rest):
        if not rest:
            return n.risk
        o, tail = rest[0], rest[1:]
        probs = n.outcome_probs(o)
        return sum(float(p) * expected_risk(n.child(o, y), tail) for y, p in enumerate(probs) if p > 0.0)

    return float(node.risk - expected_risk(node, list(batch)))


def greedy_batches(node, net, k_max: int) -> dict:
    """``{k: batch}`` for k = 2..`k_max`: the greedy batches of `k` eligible observations.

    Eligible observations are ranked by one-step `net` (ties: lower penalty
    within TIE, then file order, as :func:`~planner.policies.base.pick_best`)
    and walked in that order, each added when the batch stays jointly within
    every hard limit left (``spent + sum of costs <= limits``). The batch of
    size k is the first k added, so the batches are nested and all start with
    the best-ranked observation; a size that cannot be filled is absent.
    """
    c = node.compiled
    order = _ranked(node, net)
    chosen, total = [], node.spent.copy()
    out = {}
    for o in order:
        if len(chosen) >= k_max:
            break
        if affordable(total, c.cost[o], c.limits):
            chosen.append(o)
            total = total + c.cost[o]
            if len(chosen) >= 2:
                out[len(chosen)] = tuple(chosen)
    return out


def _ranked(node, net) -> list:
    """Eligible observations by one-step net (descending, ties within TIE by penalty then file order)."""
    c = node.compiled
    left = [o for o in range(len(c.obs_names)) if node.eligible[o] and np.isfinite(net[o])]
    order = []
    while left:
        o = best_of(net, c.penalty, left)
        order.append(o)
        left.remove(o)
    return order


@attrs.frozen
class Blinkered(Policy):
    """The semi-myopic blinkered VOI rule over batches (spec ``blinkered`` or ``blinkered:K``, K = 3).

    At a node the options are

    * every eligible observation alone, net = EVSI - penalty (the one-step
      rule's nets), and
    * for k = 2..K, one batch of k eligible observations chosen greedily by
      one-step net and jointly within the hard limits left
      (:func:`greedy_batches`), net = :func:`batch_value` (the non-adaptive
      value of observing the whole batch) minus the summed penalties.

    If the best batch net exceeds both 0 and the best single net by more than
    TIE, the policy acquires the batch member with the largest one-step net
    (ties: lower penalty, then file order); since the greedy batches are
    nested, this is the best-ranked eligible observation, even when its own
    one-step net is not positive. Otherwise it does exactly what the one-step
    rule does (:func:`~planner.policies.base.pick_best` on the singles). So
    ``blinkered:1`` is the one-step rule, and singles win ties with batches.

    Simplifications, stated: only observations eligible now enter a batch
    (one whose precondition another member would satisfy is left out), a
    batch is valued as if every member were acquired whatever the others
    return (the policy re-plans after every outcome, so it may stop early),
    and only one batch per size is valued.

    Candidate table: an admitted row's `value` is the gross value of the best
    option containing it (its EVSI, or a batch's value), `penalty` that
    option's summed penalty and `net` their difference; ``extra`` holds
    ``evsi``, ``one_step_net`` and ``option`` (the option's member names).
    With K = 1 the table is the one-step rule's plus those extra columns.

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("complementary_signals"), Blinkered(k=2))
    >>> step = s.next()
    >>> step.observation, step.info["option"]
    ('device_anomaly', ['device_anomaly', 'velocity_check'])
    """

    k: int = DEFAULT_K

    name = "blinkered"
    arg = "K"
    forms = ("blinkered", "blinkered:K")
    summary = "semi-myopic blinkered VOI: the best of one observation or a greedy batch of up to K (default 3)"
    study = {"blinkered:2": ("cheap", "model", "frontier")}

    @property
    def spec(self) -> str:
        return self.name if self.k == DEFAULT_K else f"{self.name}:{self.k}"

    @classmethod
    def from_arg(cls, arg, spec):
        return cls() if arg is None else cls(k=positive_int(arg, spec))

    def _options(self, node):
        """``(net, rows, batches)`` with batches ``{k: (members, value, penalty)}``."""
        c = node.compiled
        net, rows = one_step_table(node)
        batches = {}
        if self.k >= 2:
            for size, members in greedy_batches(node, net, self.k).items():
                batches[size] = (members, batch_value(node, members), float(sum(c.penalty[o] for o in members)))
        return net, rows, batches

    def _pick(self, node, net, batches):
        """The choice and the winning option's members."""
        c = node.compiled
        single = pick_best(net, c.penalty, node.eligible)
        best_single = max((net[o] for o in range(len(net)) if node.eligible[o]), default=-np.inf)
        best = None
        for size in sorted(batches):
            members, value, pen = batches[size]
            if best is None or value - pen > best[1] - best[2] + TIE:
                best = (members, value, pen)
        if best is not None:
            b_net = best[1] - best[2]
            if b_net > TIE and b_net > best_single + TIE:
                return best[0][0], list(best[0])
        return single, ([single] if single is not None else [])

    def decide(self, node):
        c = node.compiled
        net, rows, batches = self._options(node)
        for o, row in enumerate(rows):
            if row.status != "admitted":
                continue
            value, pen, members = row.value, row.penalty, (o,)
            for size in sorted(batches):
                b_members, b_value, b_pen = batches[size]
                if o in b_members and b_value - b_pen > value - pen + TIE:
                    value, pen, members = b_value, b_pen, b_members
            rows[o] = attrs.evolve(row, value=float(value), penalty=float(pen), net=float(value - pen),
                                   extra={"evsi": row.value, "one_step_net": row.net,
                                          "option": [c.obs_names[m] for m in members]})
        choice, option = self._pick(node, net, batches)
        info = {"option": [c.obs_names[m] for m in option]} if choice is not None else {}
        return Decision(observe=choice, candidates=tuple(rows), info=info)

    def choose(self, node):
        net, _, batches = self._options(node)
        return self._pick(node, net, batches)[0], False
