"""HEC: hyperedge cutting for decision regions with noisy observations.

Golovin, Krause and Ray (NIPS 2010) reduce noisy Bayesian active learning to
a noise-free problem on *extended hypotheses* (a hypothesis together with the
outcomes every test would return) and cut edges between extended hypotheses
of different equivalence classes (EC2). Javdani et al. (AISTATS 2014) name
the generalisation to decision regions that may overlap "hyperedge cutting"
(HEC): a hyperedge is a k-tuple of hypotheses that no single region contains,
with k one more than the most regions any hypothesis is in; its weight is the
product of their probabilities, and a test outcome cuts every hyperedge with a
member it rules out. The greedy policy takes the test of largest expected cut
weight per unit cost; it stops when no hyperedge is left (the consistent mass
lies in one region, so every test outcome leaves the decision unchanged).

This module gives that rule on this planner's model; :class:`HEC` states each
adaptation.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import TIE, reachable_actions
from planner.policies.decision_region import DecisionRegion, credit_scale

__all__ = ["HEC", "region_membership", "hyperedge_weight", "hyperedge_cuts"]


def region_membership(node) -> np.ndarray:
    """``bool[A, S]``: state s is in action a's decision region when a minimises s's loss (ties: in both).

    Only actions permitted at the node or that admissible evidence could still
    permit (:func:`lookahead.core.reachable_actions`) have a region; a state is
    in the region of every such action whose loss is within TIE of its least.

    >>> import planner
    >>> n = planner.Session(planner.load_domain("complementary_signals")).node
    >>> region_membership(n).astype(int).tolist()
    [[0, 1], [1, 0]]
    """
    c = node.compiled
    reach = reachable_actions(node.outcome_of, node.admission.admitted, c.facts, c.n_values) | node.permitted
    loss = np.where(reach[:, None], c.loss, np.inf)
    best = loss.min(axis=0)
    return reach[:, None] & (loss <= best[None, :] + TIE)


def _order(member) -> int:
    """k: one more than the most regions any state is in (2 when the regions are disjoint)."""
    return int(member.sum(axis=0).max(initial=1)) + 1


def hyperedge_weight(belief, member, k: int) -> float:
    """The weight of the hyperedges among `belief`'s mass: ordered k-tuples no region holds entirely.

    ``(sum b)^k - P(all k in one region)``, the second term by inclusion and
    exclusion over sets J of regions: ``sum_J (-1)^(|J|+1) b(intersection of J)^k``.
    With disjoint regions and k = 2 it is EC2's edge mass ``1 - sum_r b(r)^2``
    (ordered pairs). `belief` need not be normalised.

    >>> m = np.array([[True, False], [False, True]])
    >>> hyperedge_weight(np.array([0.5, 0.5]), m, 2)
    0.5
    """
    b = np.asarray(belief, dtype=np.float64)
    rows = [r for r in range(member.shape[0]) if member[r].any()]
    inside = 0.0
    # subsets of regions as bitmasks; the model's action counts are small (a handful of decisions)
    for mask in range(1, 1 << len(rows)):
        common = np.ones(b.shape[0], dtype=bool)
        bits = 0
        for j, r in enumerate(rows):
            if mask >> j & 1:
                common &= member[r]
                bits += 1
        if not common.any():
            continue
        inside += (1.0 if bits % 2 else -1.0) * float(b[common].sum()) ** k
    return float(max(0.0, float(b.sum()) ** k - inside))


def hyperedge_cuts(node, member, k: int) -> np.ndarray:
    """``float64[O]``: the expected hyperedge weight an eligible observation cuts (``nan`` elsewhere).

    On extended hypotheses the weight left after outcome y is that of the
    tuples consistent with y: ``P(y)^k H(b_y)`` in units of the weight left
    now (the mass of the consistent extended hypotheses of a state is
    ``P(y) b_y(s)``). So ``cut(o) = H(b) - sum_y P(y | b, o)^(k+1) H(b_y)``,
    with the posterior ``b_y`` from :meth:`~planner.node.Node.child`, the
    planner's exact Bayes update, and the regions held at the node's.
    """
    c = node.compiled
    w0 = hyperedge_weight(node.belief, member, k)
    out = np.full(len(c.obs_names), np.nan)
    for o in range(len(c.obs_names)):
        if not node.eligible[o]:
            continue
        left = 0.0
        for y, p in enumerate(node.outcome_probs(o)):
            if p > 0.0:
                left += float(p) ** (k + 1) * hyperedge_weight(node.child(o, y).belief, member, k)
        out[o] = max(0.0, w0 - left)
    return out


@attrs.frozen
class HEC(DecisionRegion):
    """Hyperedge cutting (HEC) for noisy observations (spec ``hec``).

    Adaptations to this model, stated:

    * *Hypotheses* are the world states; noise is handled as Golovin, Krause
      and Ray do, on extended hypotheses (a state with every observation's
      outcome), whose region is their state's. Their consistent mass is the
      planner's exact Bayes posterior times P(evidence), which gives the
      weight update of :func:`hyperedge_cuts` (outcome weights ``P(y)^(k+1)``,
      not the ``P(y)`` of a naive reading; ``decision-region`` uses the latter).
    * *Decision regions* come from the loss matrix (:func:`region_membership`):
      action a's region holds the states where a's loss is within TIE of the
      least among actions permitted or still reachable through admissible
      evidence. Tied actions make regions overlap; k (the hyperedge size) is
      one more than the most regions a state is in, so without ties HEC is
      EC2 on these regions.
    * *Costs*: the candidate is the eligible observation (admitted,
      available, affordable: the session's gates and hard budgets) with the
      largest ``cut / penalty`` among those with cut > TIE, zero-penalty ones
      first by cut (ties within TIE: lower penalty, then file order). Hard
      limits are never relaxed: an unaffordable observation is not a candidate.
    * *Stopping*: HEC's own rule, stop when the hyperedge weight is within TIE
      of 0 (all mass in one region) or when no eligible observation cuts any.
      For priced observations the paper has no rule; this one credits the
      candidate with ``value = EVPI(b) * cut / H(b)`` loss units (the share
      of the remaining hyperedge weight it cuts, of the most any evidence
      could still save, :func:`lookahead.core.evpi`) and stops when
      ``value - penalty <= TIE``. The factor is common to all observations,
      so it never changes which candidate the ratio picks.

    Candidate table: `value` is the credited value, `penalty` the penalty,
    `net` their difference; ``extra`` holds ``hyperedge_cut``,
    ``hyperedge_weight`` (H(b)) and ``k``. The choice, the stop and the table
    are :class:`~planner.policies.decision_region.DecisionRegion`'s, on
    hyperedges instead of edges.

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("complementary_signals"), HEC())
    >>> step = s.next()
    >>> step.observation, step.candidates[0].extra["k"]
    ('device_anomaly', 2)
    """

    name = "hec"
    summary = ("HEC (Golovin-Krause-Ray noise model): the largest expected hyperedge cut between decision regions "
               "per unit cost")
    value_label = "hyperedge value"
    study = {"hec": ("cheap", "model", "frontier")}

    gain_key = "hyperedge_cut"

    def _score(self, node):
        """``(H(b), cuts, values in loss units, {"hyperedge_weight": H(b), "k": k})``."""
        member = region_membership(node)
        k = _order(member)
        w0 = hyperedge_weight(node.belief, member, k)
        cuts = hyperedge_cuts(node, member, k)
        return w0, cuts, cuts * credit_scale(node, w0), {"hyperedge_weight": w0, "k": k}
