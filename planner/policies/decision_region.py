"""A decision-region rule in the spirit of EC2 / HEC (Golovin, Krause and Ray).

EC2 (equivalence class edge cutting) groups hypotheses by the decision that is
best for them, joins every pair of hypotheses in different groups by an edge of
weight the product of their probabilities, and picks the test that cuts the
most expected edge weight per unit cost. Driving that weight to zero puts the
belief into one decision region, where acquiring more cannot change the act.

This rule is EC2 *in spirit*, not EC2: an outcome y leaves the edge weight of
the consistent hypotheses, which in prior mass is ``P(y)^2 W(b_y)`` (so an
expected ``sum_y P(y)^3 W(b_y)``, as EC2 implementations score a test, e.g.
``vcarbune/netloc``'s ``ec2.h``), whereas :func:`edge_gains` weights the
normalised ``W(b_y)`` by ``P(y)``. :class:`~planner.policies.hec.HEC` has the
faithful update (EC2 when the regions are disjoint); ``docs/baselines.md``
says what was checked.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import TIE, evpi, reachable_actions
from planner.node import Candidate, Decision
from planner.policies.base import Policy, best_of

__all__ = ["DecisionRegion", "decision_regions", "edge_mass", "edge_gains", "credit_scale"]


def decision_regions(node) -> np.ndarray:
    """``int64[S]``: for each state, the action that minimises its loss (its decision region).

    Only actions that are permitted at the node or that admissible evidence
    could still permit (:func:`lookahead.core.reachable_actions`) compete; ties
    go to the action declared first.

    >>> import planner
    >>> n = planner.Session(planner.load_domain("complementary_signals")).node
    >>> decision_regions(n).tolist()
    [1, 0]
    """
    c = node.compiled
    reach = reachable_actions(node.outcome_of, node.admission.admitted, c.facts, c.n_values) | node.permitted
    loss = np.where(reach[:, None], c.loss, np.inf)
    return np.argmin(loss, axis=0).astype(np.int64)  # argmin takes the first of equal minima


def edge_mass(belief, regions) -> float:
    """W(b) = sum over pairs of states in different regions of b(s) b(s') = 1 - sum_r b(r)^2.

    >>> edge_mass(np.array([0.5, 0.5]), np.array([0, 1]))
    0.5
    """
    mass = np.bincount(regions, weights=belief)
    return float(max(0.0, 1.0 - float(mass @ mass)))


def edge_gains(node, regions) -> np.ndarray:
    """``float64[O]``: W(b) - sum_y P(y | b, o) W(b_y) for eligible `o` (``nan`` elsewhere).

    The regions are held fixed (those of the node); EC2's noisy-test semantics
    are approximated by the Bayes update of the belief (:meth:`~planner.node.Node.child`).
    """
    c = node.compiled
    w0 = edge_mass(node.belief, regions)
    out = np.full(len(c.obs_names), np.nan)
    for o in range(len(c.obs_names)):
        if not node.eligible[o]:
            continue
        expected = 0.0
        for y, p in enumerate(node.outcome_probs(o)):
            if p > 0.0:
                expected += float(p) * edge_mass(node.child(o, y).belief, regions)
        out[o] = w0 - expected
    return out


def credit_scale(node, weight) -> float:
    """Loss units per unit of cut weight: ``EVPI(b) / weight`` (0 when the weight is within TIE of 0).

    The share of the remaining weight an observation cuts, of the most any
    evidence could still save (:func:`lookahead.core.evpi`, gated).
    """
    c = node.compiled
    scale = float(evpi(node.belief, node.outcome_of, node.admission.admitted, c.loss, c.facts, c.n_values))
    return max(scale, 0.0) / weight if weight > TIE else 0.0


@attrs.frozen
class DecisionRegion(Policy):
    """The EC2-style decision-region rule (spec ``decision-region``).

    Regions: :func:`decision_regions` (per state, the loss-minimising action
    among those permitted or still reachable). Score of an eligible
    observation: the expected reduction of the edge mass,
    ``gain(o) = W(b) - E_y W(b_y)`` (:func:`edge_gains`). The candidate is the
    eligible observation with the largest ``gain / penalty`` among those with
    gain > TIE (zero-penalty ones first, by gain; ties within TIE: lower
    penalty, then file order).

    Stopping (EC2 itself has none for costly decisions): the rule converts
    the share of the edge mass an observation removes into loss units with the
    gated EVPI (:func:`lookahead.core.evpi`, the most any evidence could still
    save), ``value(o) = EVPI(b) * gain(o) / W(b)``, and acquires the candidate
    only when ``value - penalty > TIE``; it stops when ``W(b) <= TIE`` (the
    belief is inside one region), when no eligible observation has gain > TIE,
    or when the candidate's value does not cover its penalty. Since the
    factor ``EVPI / W`` is common to all observations, the ratio order is
    unchanged by it; the rule does not look past the candidate for a
    cheaper observation whose value would cover its penalty.

    Candidate table: `value` is value(o) in loss units, `penalty` the
    penalty, `net` their difference; ``extra`` has ``edge_gain`` and
    ``edge_mass`` (W(b)).

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"), DecisionRegion())
    >>> s.next().observation
    'approval_registry'
    """

    name = "decision-region"
    summary = "EC2-style: the largest expected cut of edge mass between decision regions per unit cost"
    value_label = "region value"
    study = {"decision-region": ("cheap", "model", "frontier")}

    #: The candidate table's ``extra`` key of an observation's gain.
    gain_key = "edge_gain"

    def _score(self, node):
        """``(W(b), gains, values in loss units, extra columns common to every row)``."""
        regions = decision_regions(node)
        w0 = edge_mass(node.belief, regions)
        gains = edge_gains(node, regions)
        return w0, gains, gains * credit_scale(node, w0), {"edge_mass": w0}

    def _pick(self, node, w0, gains, values):
        c = node.compiled
        if w0 <= TIE:
            return None
        idx = [o for o in range(len(gains)) if node.eligible[o] and gains[o] > TIE]
        if not idx:
            return None
        free = [o for o in idx if c.penalty[o] <= TIE]
        if free:
            key = {o: gains[o] for o in free}
        else:
            key = {o: gains[o] / c.penalty[o] for o in idx}
        score = np.full(len(gains), -np.inf)
        for o, v in key.items():
            score[o] = v
        o = best_of(score, c.penalty, list(key))
        return o if values[o] - c.penalty[o] > TIE else None

    def decide(self, node):
        c = node.compiled
        w0, gains, values, common = self._score(node)
        rows = node.gate_candidates()
        for o, row in enumerate(rows):
            if row is None:
                rows[o] = Candidate(observation=c.obs_names[o], status="admitted", value=float(values[o]),
                                    penalty=float(c.penalty[o]), net=float(values[o] - c.penalty[o]),
                                    extra={self.gain_key: float(gains[o]), **common})
        return Decision(observe=self._pick(node, w0, gains, values), candidates=tuple(rows))

    def choose(self, node):
        w0, gains, values, _ = self._score(node)
        return self._pick(node, w0, gains, values), False
