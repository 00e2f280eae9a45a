"""The semi-myopic "blinkered" VOI rules (Tolpin and Shimony): repeated measurements, and batches.

Tolpin and Shimony's blinkered scheme values a measurement by the best plan
that repeats it k times (k = 1, 2, ...): the plan's value of information minus
the cost of its k measurements. That catches the value that several weak
measurements have together and none has alone. Two forms:

* :class:`BlinkeredRepeat` (``blinkered-repeat:K``) is the scheme as Tolpin's
  reference implementation computes it (``dtolpin/uncertima``,
  ``src/algorithm/blinkered.ml`` and ``planhead.ml``: every single-measurement
  plan and its repetitions, scored by benefit minus cost, the head of the best
  plan with a positive score taken, stop when none is positive), on k
  conditionally independent copies of one observation's likelihood (this
  model's observations are read once each, so the copies are hypothetical: the
  adaptation). ``docs/baselines.md`` says what was checked and what differs.
* :class:`Blinkered` (``blinkered:K``) extends it over *batches* of distinct
  observations instead of repetitions.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import TIE, bayes_risk
from planner.gates.budget import affordable
from planner.node import Candidate, Decision
from planner.policies.base import Policy, best_of, pick_best, positive_int
from planner.policies.onestep import one_step_table

__all__ = ["Blinkered", "BlinkeredRepeat", "batch_value", "greedy_batches", "repeat_value"]

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


class _Repeats(Policy):
    """The spec of a blinkered rule: ``name`` when k is the default, ``name:K`` otherwise."""

    @property
    def spec(self) -> str:
        return self.name if self.k == DEFAULT_K else f"{self.name}:{self.k}"

    @classmethod
    def from_arg(cls, arg, spec):
        return cls() if arg is None else cls(k=positive_int(arg, spec))


@attrs.frozen
class Blinkered(_Repeats):
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


def _count_vectors(total: int, n: int):
    """Every tuple of `n` non-negative integers summing to `total`, in lexicographic order."""
    if n == 1:
        yield (total,)
        return
    for first in range(total, -1, -1):
        for rest in _count_vectors(total - first, n - 1):
            yield (first,) + rest


def repeat_value(node, o: int, k: int) -> float:
    """The value of observing `o` k times, as k outcomes drawn independently given the state.

    ``R(b) - E[R(b after k readings)]``. The first reading is the real
    observation: its outcome y1 gives the child node (:meth:`~planner.node.Node.child`:
    the Bayes update, and the facts and permitted actions it establishes). The
    k - 1 further readings are hypothetical copies of o's likelihood that only
    sharpen the belief (they establish nothing more); they enter through their
    outcome counts n (multinomial), since the posterior depends on the counts
    only: ``b(s | y1, n) ∝ b1(s) prod_y P(y | s, o)^n_y``. ``k = 1`` is the
    one-step EVSI.

    >>> import planner
    >>> n = planner.Session(planner.load_domain("complementary_signals")).node
    >>> round(repeat_value(n, 0, 1), 6), round(repeat_value(n, 0, 2), 4)
    (0.0, 0.234)
    """
    from math import factorial

    c = node.compiled
    n_y = int(c.n_outcomes[o])
    lik = c.lik[o, :n_y]
    expected = 0.0
    for y1, p1 in enumerate(node.outcome_probs(o)):
        if p1 <= 0.0:
            continue
        child = node.child(o, y1)
        if k < 2:  # one reading: the child itself
            expected += float(p1) * child.risk
            continue
        for counts in _count_vectors(k - 1, n_y):
            w = child.belief * np.prod(lik ** np.asarray(counts, dtype=np.float64)[:, None], axis=0)
            z = float(w.sum())
            if z <= 0.0:
                continue
            coef = factorial(k - 1)
            for m in counts:
                coef //= factorial(m)
            risk, _ = bayes_risk(w / z, c.loss, child.permitted)
            expected += float(p1) * coef * z * float(risk)
    return float(node.risk - expected)


@attrs.frozen
class BlinkeredRepeat(_Repeats):
    """Blinkered VOI over repeated readings, as Tolpin and Shimony define it (spec ``blinkered-repeat:K``, K = 3).

    The blinkered estimate of an eligible observation o is the net value of
    the best plan that reads o k times, k = 1..K:
    ``net(o) = max_k (repeat_value(o, k) - k penalty(o))`` (the plan's benefit
    minus the cost of its k readings, as the reference implementation scores
    a plan: ``dtolpin/uncertima``, ``planhead.ml``; an earlier version here
    divided by k, which ranks observations differently). The policy acquires
    the observation of the largest estimate (the head of the best plan) and
    stops when none exceeds 0 by more than TIE (ties as
    :func:`~planner.policies.base.pick_best`). ``blinkered-repeat:1`` is the
    one-step rule, and every estimate is at least the one-step net (k = 1 is
    in the max). The reference grows k by doubling (1, 2, 4, ...) while the
    plan fits the budget; here every k up to K is tried (a superset of the
    doublings up to K).

    Adaptation, stated: this model's observations are read once each (a
    static hidden world; a second call of a tool may return the same answer),
    so the k readings are hypothetical: k outcomes drawn independently given
    the state from o's likelihood (:func:`repeat_value`). Only the first one
    is ever acquired; the policy re-plans after its outcome. A k counts only
    when k readings are jointly within every hard limit left
    (``spent + k cost(o) <= limits``), so the estimate never leans on
    readings the budget could not pay for. Only eligible observations
    (admitted, available, affordable) are scored.

    Candidate table: `value` is the best plan's value ``repeat_value(o, k)``,
    `penalty` its k readings' penalty ``k penalty(o)`` and `net` their
    difference; ``extra`` holds ``evsi`` (k = 1), ``k`` (the maximising k,
    the smallest on ties within TIE) and ``reading_penalty`` (o's penalty).

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("complementary_signals"), BlinkeredRepeat(k=2))
    >>> step = s.next()
    >>> step.observation, step.candidates[0].extra["k"]
    ('device_anomaly', 2)
    """

    k: int = DEFAULT_K

    name = "blinkered-repeat"
    arg = "K"
    forms = ("blinkered-repeat", "blinkered-repeat:K")
    summary = ("blinkered VOI of Tolpin and Shimony: the best net value (benefit minus the readings' penalty) "
               "of up to K (default 3) independent readings of one observation")
    study = {"blinkered-repeat": ("cheap", "model", "frontier")}


    def _estimates(self, node):
        """``(evsi, best plan's value, best k, best plan's net)``, each ``float64[O]`` (``nan`` where not eligible)."""
        from planner.policies.onestep import one_step_values

        c = node.compiled
        evsi = one_step_values(node)
        value, best_k = evsi.copy(), np.ones(len(evsi), dtype=np.int64)
        net = evsi - c.penalty
        for o in np.flatnonzero(node.eligible):
            for k in range(2, self.k + 1):
                if not affordable(node.spent + (k - 1) * c.cost[o], c.cost[o], c.limits):
                    break
                v = repeat_value(node, int(o), k)
                if v - k * c.penalty[o] > net[o] + TIE:
                    value[o], best_k[o], net[o] = v, k, v - k * c.penalty[o]
        return evsi, value, best_k, net

    def decide(self, node):
        c = node.compiled
        evsi, value, best_k, net = self._estimates(node)
        rows = node.gate_candidates()
        for o, row in enumerate(rows):
            if row is None:
                rows[o] = Candidate(observation=c.obs_names[o], status="admitted", value=float(value[o]),
                                    penalty=float(best_k[o] * c.penalty[o]), net=float(net[o]),
                                    extra={"evsi": float(evsi[o]), "k": int(best_k[o]),
                                           "reading_penalty": float(c.penalty[o])})
        return Decision(observe=pick_best(net, c.penalty, node.eligible), candidates=tuple(rows))

    def choose(self, node):
        c = node.compiled
        _, _, _, net = self._estimates(node)
        return pick_best(net, c.penalty, node.eligible), False
