"""Measure one policy on one domain: exactly (every outcome path) or by replay with common random numbers.

Exact measurement runs :func:`planner.evaluation.evaluate.evaluate_policy` with the
policy wrapped in :class:`TimedPolicy`, which records, for every node the
evaluation visits, the decision, the belief, the risk and the time the policy
took to decide. From those records the policy's tree is walked again
(:func:`policy_tree`) to get each outcome path's probability, which gives:

- an independent recomputation of the expected total loss (it must equal the
  evaluator's to 1e-9: ``audit_diff``);
- the independent audit of every path (:meth:`planner.evaluation.audit.Audit.path_counts`):
  hard-limit breaches recomputed from the domain file's costs and limits, and
  forbidden acquisitions recomputed from its entitlements, purposes and ages
  (never from the session's own gates), plus acquisitions whose preconditions
  did not hold and repeated acquisitions;
- planning latency per decision, weighted by the probability that the
  decision is taken (median and p95), and expected planning time per episode;
- stop quality against V* (premature stops: the policy stops where the optimum
  continues, V* < R; wasteful continuations: it acquires where the optimum
  stops, V* = R);
- acquisition harm against no retrieval (:mod:`planner.evaluation.harm`: the
  probability that the prior's decision was right in the true world and the
  policy's final one is wrong, ``harm``, and the reverse, ``fixed``), plus the
  probability that the realised loss plus penalties exceeds the realised loss
  of deciding on the prior, and the expected excess;
- evidence sufficiency, correct escalation and search effort (below).

Evidence sufficiency, escalation and search effort
--------------------------------------------------
Probabilities are over outcome paths (a stop leaf weighs its reach
probability ``tn.prob``) or, for escalation, over (path, true state) pairs
(weight ``tn.prob * belief[s]``, the leaf's posterior being the conditional
law of the hidden state given the path). "Established" at a leaf is read by
the independent audit (:meth:`planner.evaluation.audit.Audit.status` of the path's
outcomes): a proposition is established when a current (not stale)
``establish`` / ``supersede`` record on the path reports a value of it and no
other current source of the same rank contradicts it; ``inform`` records never
establish. The session's permission mask is not used for it.

A decision action is *gated* when the domain gives it a ``requires``
expression (``act`` in the gated wide families, ``release`` in
payment_release). It is *consequential* when it is not of kind ``escalate``
and its worst-case loss (over the joint states of positive prior) exceeds,
by more than 1e-9, the smallest worst-case loss of the actions not of kind
``escalate``: the decision that can go badly wrong, against the minimax-safe
fallback (``act``, worst case 10 x asymmetry, against ``hold``, worst case 10,
in the wide families; ``release`` against ``hold`` in payment_release). The
propositions an action's loss *depends on* are those whose value changes its
loss with every other variable held fixed (``target``, and ``identity`` where
declared, for ``act``).

- ``p_stop_gated``: P(the final action is gated).
- ``p_sufficient``: P(the final action is gated and its ``requires`` holds
  on the audit's reading of the path's facts). The hard gate makes it equal
  ``p_stop_gated``; a difference is a bug in one of the two readings.
- ``p_act``: P(the final action is consequential).
- ``p_act_unsupported``: P(the final action is consequential and some
  proposition its loss depends on is not established): acting on belief
  alone. 0 where the gate requires every such proposition (gated wide
  families); the informative case is an ungated ``act``.
- ``p_sufficient_act``: ``p_act - p_act_unsupported``, the consequential stops
  with every proposition their loss depends on established;
  ``sufficiency``: ``p_sufficient_act / p_act`` (NaN when ``p_act`` is 0).

Escalation (NaN when no action is of kind ``escalate``). At a stop leaf, with
the actions permitted there (the node's mask: what the policy could choose)
and a true state s, let ``best(s)`` be the lowest true loss ``c.loss[u, s]``
among permitted u:

- ``p_escalate``: P(the final action is of kind ``escalate``);
- ``p_correct_escalation``: P(it escalates and its loss in s is within 1e-9
  of ``best(s)``; ties count as correct);
- ``p_unneeded_escalation``: P(it escalates and some permitted action has a
  strictly lower loss in s); with the previous one it sums to ``p_escalate``;
- ``p_missed_escalation``: P(it does not escalate although a permitted
  escalate action's loss in s is strictly (1e-9) below every permitted
  non-escalate action's).

Search effort per decision is what the policy reports as
``Decision.info["nodes_expanded"]`` (lookahead, bounded; a conservative rule
reports its base search's, without its own re-valuation under the draws),
else the number of eligible observations at the node (what a one-step rule
values; for static rules, none and top-k, the same count, so the columns stay
comparable though those rules value nothing). It is read from the first of
`repeats` computations: a memoised search (bounded keeps its graph on the
compiled domain) may report only what a call added, so a repeat could report
less. For the same reason a memoised search's count can depend on what was
planned before on the same compiled domain (in a study, the policies measured
earlier in the case); it is what the session, run in that order, would spend.

- ``search_nodes_per_episode``: the sum over the policy tree's decision
  nodes (stops included) of reach probability x nodes;
- ``search_nodes_p95``: the 95% :func:`weighted_quantile` of nodes per
  decision, decisions weighted by reach probability (as ``lat_p95_ms``).

Monte Carlo replay (:func:`measure_mc`) draws episodes once per case
(:func:`draw_episodes`: a hidden joint state and one uniform per observation,
so two policies that acquire the same observation in the same episode see the
same outcome: common random numbers) and replays each policy on them. The
estimate of expected total loss is the mean of ``R(stop) + penalties`` (the
conditional expectation of the realised loss given the path, an unbiased,
lower-variance estimator), with a normal 95% interval; realised losses are
kept too, for harm and for paired differences between policies.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np

from lookahead.layout import NO_EXPR
from planner.errors import PlannerError, SessionError
from planner.tolerances import VALUE_TOL
from planner.evaluation.evaluate import correct_actions, evaluate_policy
from planner.node import root_node
from planner.policies.base import Policy
from planner.session.simulate import inverse_cdf

__all__ = [
    "TIMING_COLUMNS",
    "TimedPolicy",
    "EvaluationCapped",
    "loss_bounds",
    "cut_bounds",
    "policy_tree",
    "weighted_quantile",
    "search_nodes",
    "ActionClasses",
    "action_classes",
    "measure_exact",
    "draw_episodes",
    "measure_mc",
]

#: Columns that depend on wall-clock time (excluded when comparing runs).
TIMING_COLUMNS = ("lat_median_ms", "lat_p95_ms", "lat_max_ms", "planning_ms_per_episode")

_TOL = VALUE_TOL


class _Record:
    """What a policy saw (the node) and chose at one node, how long it took and how much it searched.

    `search_nodes` is :func:`search_nodes` of the decision (by default of
    `decision` itself; :class:`TimedPolicy` passes the first of its repeats').
    """

    __slots__ = ("node", "outcome_of", "observe", "belief", "risk", "action", "ns", "v_estimate", "search_nodes")

    def __init__(self, node, decision, ns, search=None):
        self.node = node
        self.outcome_of = node.outcome_of
        self.observe = decision.observe
        self.belief = node.belief
        self.risk = float(node.risk)
        self.action = int(node.action)
        self.ns = ns
        self.search_nodes = search_nodes(node, decision if search is None else search)
        # a lookahead's own estimate V_d = min(R, min_o Q_d(o)); nan for other policies
        if "depth" in decision.info:
            qs = [row.extra["q"] for row in decision.candidates if "q" in row.extra]
            self.v_estimate = float(min([node.risk] + qs))
        else:
            self.v_estimate = float("nan")


def search_nodes(node, decision) -> int:
    """The search effort of `decision` at `node`: its ``nodes_expanded``, else the eligible count.

    A wrapping policy that reports its base's search under ``base_info``
    (the conservative rule) counts that search. Policies that report no
    search (one-step, dependency, confidence, none, top-k, ...) count the
    eligible observations at the node: what a one-step rule values there.

    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> search_nodes(n, planner.parse_policy("none").decide(n)), int(n.eligible.sum())
    (2, 2)
    """
    info = decision.info
    n = info.get("nodes_expanded")
    if n is None:
        n = (info.get("base_info") or {}).get("nodes_expanded")
    if n is None:
        n = node.eligible.sum()
    return int(n)


class EvaluationCapped(PlannerError):
    """A policy's decisions in one exact evaluation searched more nodes than the work cap (:class:`TimedPolicy`)."""


class TimedPolicy(Policy):
    """Wrap a policy: time every ``decide`` and keep what it saw and chose, by node.

    ``records`` maps ``node.key`` to the last decision taken
    there (a policy is deterministic, so the last equals the first). With
    `repeats` > 1 each decision is computed that many times and the fastest
    time kept.

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"), TimedPolicy(planner.parse_policy("one-step")))
    >>> s.next().observation, s.policy.spec, len(s.policy.records)
    ('approval_registry', 'one-step', 1)
    """

    def __init__(self, inner: Policy, repeats: int = 1, work_cap: int | None = None):
        self.inner = inner
        self.repeats = max(1, int(repeats))
        self.records: dict = {}
        self.work_cap = work_cap
        self.work = 0  # search nodes of the decisions so far (:func:`search_nodes`, first of the repeats)

    @property
    def spec(self) -> str:
        return self.inner.spec

    def params(self) -> dict:
        return self.inner.params()

    def decide(self, node):
        ns = None
        first = None
        if self.work_cap is not None and self.work > self.work_cap:
            raise EvaluationCapped(f"policy '{self.spec}': its decisions searched more than {self.work_cap:,} nodes "
                                   f"over {len(self.records):,} nodes of its tree; exact evaluation stopped")
        for _ in range(self.repeats):  # the fastest of `repeats` runs: less noise from a shared machine
            t0 = time.perf_counter_ns()
            decision = self.inner.decide(node)
            dt = time.perf_counter_ns() - t0
            ns = dt if ns is None else min(ns, dt)
            # a memoised search may report only what a call added: count the first call's, so that the
            # search columns do not depend on `repeats`
            first = decision if first is None else first
        record = _Record(node, decision, ns, search=first)
        self.work += record.search_nodes
        self.records[node.key] = record
        return decision


# --------------------------------------------------------------------------
# the policy tree of an exact evaluation


class _TreeNode:
    __slots__ = ("record", "prob", "path", "penalty")

    def __init__(self, record, prob, path, penalty):
        self.record, self.prob, self.path, self.penalty = record, prob, path, penalty


def policy_tree(compiled, records: dict) -> list:
    """Every node of the policy tree with its reach probability, from :class:`TimedPolicy` records.

    Returns a list of objects with ``record`` (what the policy saw and chose),
    ``prob`` (P(reaching it)), ``path`` (the ``(o, y)`` pairs in acquisition
    order) and ``penalty`` (C_w spent on the way). A policy tree is a tree:
    two paths that first differ in an outcome of the same observation never
    meet again.
    """
    c = compiled
    root = next(rec for rec in records.values() if rec.node.taken() == 0).node.key
    out = []
    stack = [_TreeNode(records[root], 1.0, (), 0.0)]
    while stack:
        tn = stack.pop()
        out.append(tn)
        rec = tn.record
        if rec.observe is None:
            continue
        o = rec.observe
        for y in range(int(c.n_outcomes[o])):
            p = float(rec.belief @ c.lik[o, y])
            if p <= 0.0:
                continue
            child = rec.outcome_of.copy()
            child[o] = y  # the key of the child the evaluation visited
            crec = records.get(child.tobytes())
            if crec is None:  # pragma: no cover - the evaluator visits every child of positive probability
                raise RuntimeError("policy tree: a child the evaluation did not visit")
            stack.append(_TreeNode(crec, tn.prob * p, tn.path + ((o, y),), tn.penalty + float(c.penalty[o])))
    return out


def weighted_quantile(values, weights, q: float) -> float:
    """The smallest value whose cumulative weight reaches `q` of the total.

    >>> weighted_quantile([3.0, 1.0, 2.0], [1, 1, 2], 0.5)
    2.0
    >>> weighted_quantile([1.0, 10.0], [0.96, 0.04], 0.95)
    1.0
    """
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if v.size == 0:
        return float("nan")
    order = np.argsort(v, kind="stable")
    cw = np.cumsum(w[order])
    k = int(np.searchsorted(cw, q * cw[-1] - 1e-12 * cw[-1]))
    return float(v[order][min(k, v.size - 1)])


def _names(c, path) -> list:
    return [(c.obs_names[o], c.outcome_names[o][y]) for o, y in path]


class ActionClasses(NamedTuple):
    """What the sufficiency columns need to know of each decision action (see the module docstring).

    Attributes
    ----------
    gated : bool[A]
        The action has a ``requires`` expression.
    consequential : bool[A]
        Not of kind ``escalate``, and its worst-case loss exceeds the smallest
        worst-case loss of the actions not of kind ``escalate``.
    loss_props : tuple of tuple of str
        Per action, the propositions its loss depends on.
    """

    gated: np.ndarray
    consequential: np.ndarray
    loss_props: tuple


def action_classes(compiled) -> ActionClasses:
    """The :class:`ActionClasses` of a compiled domain (built once, kept in its memo).

    >>> import planner
    >>> k = action_classes(planner.compile_domain(planner.load_domain("payment_release")))
    >>> k.gated.tolist(), k.consequential.tolist(), k.loss_props
    ([True, False], [True, False], (('approval',), ('approval',)))
    """
    return compiled.memo("measure-action-classes", _build_action_classes)


def _build_action_classes(c) -> ActionClasses:
    gated = np.asarray(c.facts.action_req) != NO_EXPR
    decide = ~np.asarray(c.action_escalate)
    # impossible states (a joint prior can give 0) say nothing about how badly an action can go
    worst = c.loss[:, np.asarray(c.prior) > 0.0].max(axis=1)
    consequential = np.zeros(len(c.action_names), dtype=np.bool_)
    if decide.any():
        consequential = decide & (worst > worst[decide].min() + _TOL)
    props = [[] for _ in c.action_names]
    for p, name in enumerate(c.prop_names):
        # the loss depends on p when two states that differ in p only (lineage variables included
        # in "only": they never change a loss) have different losses
        others = np.delete(c.states, p, axis=1)
        _, group = np.unique(others, axis=0, return_inverse=True)
        group = group.reshape(-1)
        n = int(group.max()) + 1
        for u in range(len(c.action_names)):
            lo = np.full(n, np.inf)
            hi = np.full(n, -np.inf)
            np.minimum.at(lo, group, c.loss[u])
            np.maximum.at(hi, group, c.loss[u])
            if np.any(hi - lo > _TOL):
                props[u].append(name)
    for a in (gated, consequential):
        a.setflags(write=False)
    return ActionClasses(gated=gated, consequential=consequential, loss_props=tuple(tuple(x) for x in props))


def measure_exact(compiled, policy, *, audit, caller=None, optimal=None, none_action: int | None = None,
                  repeats: int = 1, max_nodes: int | None = None, work_cap: int | None = None) -> dict:
    """Exact measurement of `policy` (see the module docstring).

    Parameters
    ----------
    compiled : CompiledDomain
    policy : Policy
    audit : planner.evaluation.audit.Audit
        The independent audit of the domain file, for the caller.
    caller : planner.model.caller.Caller, optional
    optimal : OptimalValues, optional
        For stop quality and route regret.
    none_action : int, optional
        The action taken on the prior (for harm against no retrieval).
    repeats : int
        Time each decision this many times and keep the fastest.
    max_nodes : int, optional
        Cap on the distinct nodes the exact evaluation visits (default the
        evaluator's, :data:`planner.evaluation.evaluate.MAX_EVAL_NODES`); past it a
        :class:`~planner.errors.PlannerError` says so.
    work_cap : int, optional
        Stop (:class:`EvaluationCapped`) once the policy's decisions have
        searched more than this many nodes in all (:func:`search_nodes`): a
        count, not a clock, so it bites in the same place on every machine.
        :func:`loss_bounds` then bounds the loss the evaluation could not finish.

    Returns
    -------
    dict
        The metrics (column name -> value), one row of the depth study (:func:`studies.depth.run.run_job`).

    Examples
    --------
    >>> import planner
    >>> from planner.evaluation.audit import Audit
    >>> d = planner.load_domain("payment_release")
    >>> m = measure_exact(planner.compile_domain(d), planner.parse_policy("one-step"), audit=Audit(d.raw))
    >>> round(m["total_loss"], 4), m["breach_paths"], m["forbidden"], m["leaves"]
    (1.1925, 0, 0, 2)
    """
    timed = TimedPolicy(policy, repeats=repeats, work_cap=work_cap)
    ev = (evaluate_policy(compiled, timed, caller) if max_nodes is None
          else evaluate_policy(compiled, timed, caller, max_nodes=max_nodes))
    c = compiled
    tree = policy_tree(c, timed.records)
    total = 0.0
    leaves = 0
    breach_paths = forbidden = unavailable = repeated = 0
    breach_prob = 0.0
    lat, w = [], []
    planning_ms = 0.0
    decisions = 0.0
    harm_prob = harm_exp = 0.0
    p_premature = premature_loss = 0.0
    wasteful = 0.0
    classes = action_classes(c)
    esc = np.asarray(c.action_escalate)
    has_escalate = bool(esc.any())
    p_gated = p_sufficient = p_act = p_unsupported = 0.0
    p_escalate = p_correct_esc = p_unneeded_esc = p_missed_esc = 0.0
    nodes, search_per_episode = [], 0.0
    for tn in tree:
        rec = tn.record
        ms = rec.ns / 1e6
        lat.append(ms)
        w.append(tn.prob)
        planning_ms += tn.prob * ms
        decisions += tn.prob
        nodes.append(rec.search_nodes)
        search_per_episode += tn.prob * rec.search_nodes
        vstar = optimal.value(rec.node) if optimal is not None else float("nan")
        if rec.observe is None:
            leaves += 1
            total += tn.prob * (rec.risk + tn.penalty)
            found = audit.path_counts(_names(c, tn.path))
            breach_paths += found["breach"]
            breach_prob += tn.prob * found["breach"]
            forbidden += found["forbidden"]
            unavailable += found["unavailable"]
            repeated += found["repeats"]
            if none_action is not None:
                mine = c.loss[rec.action] + tn.penalty
                base = c.loss[none_action]
                harm_prob += tn.prob * float(rec.belief @ (mine > base + _TOL))
                harm_exp += tn.prob * float(rec.belief @ np.maximum(mine - base, 0.0))
            if vstar < rec.risk - _TOL:
                p_premature += tn.prob
                premature_loss += tn.prob * (rec.risk - vstar)
            a = rec.action
            if classes.gated[a] or classes.consequential[a]:
                # the facts as the independent audit reads them from the file, not the node's mask
                seen = dict(_names(c, tn.path))
                status = audit.status(seen)
                if classes.gated[a]:
                    p_gated += tn.prob
                    req = (audit.actions.get(c.action_names[a]) or {}).get("requires")
                    if req is not None and audit.holds(req, status, seen):
                        p_sufficient += tn.prob
                if classes.consequential[a]:
                    p_act += tn.prob
                    # a contradiction (the audit's marker is no value of p) or no source: not established
                    if any(status.get(p) not in audit.world[p] for p in classes.loss_props[a]):
                        p_unsupported += tn.prob
            if has_escalate:
                # true losses of the actions the policy could have chosen here (inf: not permitted)
                allowed = np.where(rec.node.permitted[:, None], c.loss, np.inf)
                if esc[a]:
                    p_escalate += tn.prob
                    right = c.loss[a] <= allowed.min(axis=0) + _TOL
                    p_correct_esc += tn.prob * float(rec.belief @ right)
                    p_unneeded_esc += tn.prob * float(rec.belief @ ~right)
                else:
                    missed = (allowed[esc].min(axis=0, initial=np.inf)
                              < allowed[~esc].min(axis=0, initial=np.inf) - _TOL)
                    p_missed_esc += tn.prob * float(rec.belief @ missed)
        elif vstar >= rec.risk - _TOL:  # the optimum stops here
            wasteful += tn.prob
    p_wasteful = _p_any_wasteful(tree, optimal) if optimal is not None else float("nan")
    harm, fixed = ev.harm, ev.fixed
    spent = dict(ev.expected_spent)
    root = next(tn for tn in tree if tn.path == ())
    nan = float("nan")
    return {
        "method": "exact",
        "total_loss": ev.expected_total_loss,
        "ci_low": ev.expected_total_loss,
        "ci_high": ev.expected_total_loss,
        "decision_loss": ev.expected_decision_loss,
        "penalty": ev.expected_penalty,
        **{f"spent_{d}": float(v) for d, v in spent.items()},
        "acquisitions": float(sum(k * p for k, p in ev.acquisitions)),
        "audit_diff": float(total - ev.expected_total_loss),
        "breach_paths": int(breach_paths),
        "breach_prob": float(breach_prob),
        "forbidden": int(forbidden),
        "unavailable_acquisitions": int(unavailable),
        "repeat_acquisitions": int(repeated),
        "harm": float(harm),
        "fixed": float(fixed),
        "p_worse_than_none": float(harm_prob) if none_action is not None else float("nan"),
        "excess_vs_none": float(harm_exp) if none_action is not None else float("nan"),
        "p_premature_stop": float(p_premature) if optimal is not None else float("nan"),
        "premature_loss": float(premature_loss) if optimal is not None else float("nan"),
        "wasteful_continuations": float(wasteful) if optimal is not None else float("nan"),
        "p_wasteful": float(p_wasteful),
        "first": "stop" if root.record.observe is None else c.obs_names[root.record.observe],
        "v_estimate": root.record.v_estimate,
        "leaves": int(leaves),
        "nodes": int(ev.n_nodes),
        "decisions_per_episode": float(decisions),
        "lat_median_ms": weighted_quantile(lat, w, 0.5),
        "lat_p95_ms": weighted_quantile(lat, w, 0.95),
        "lat_max_ms": float(max(lat)),
        "planning_ms_per_episode": float(planning_ms),
        "p_stop_gated": float(p_gated),
        "p_sufficient": float(p_sufficient),
        "p_act": float(p_act),
        "p_act_unsupported": float(p_unsupported),
        "p_sufficient_act": float(p_act - p_unsupported),
        "sufficiency": float((p_act - p_unsupported) / p_act) if p_act > 0.0 else nan,
        "p_escalate": float(p_escalate) if has_escalate else nan,
        "p_correct_escalation": float(p_correct_esc) if has_escalate else nan,
        "p_unneeded_escalation": float(p_unneeded_esc) if has_escalate else nan,
        "p_missed_escalation": float(p_missed_esc) if has_escalate else nan,
        "search_nodes_per_episode": float(search_per_episode),
        "search_nodes_p95": weighted_quantile(nodes, w, 0.95),
        "_root_record": root.record,
        "_tree": tree,
    }


def _p_any_wasteful(tree, optimal) -> float:
    """P(the episode passes through at least one wasteful continuation)."""
    by_path = {tn.path: tn for tn in tree}
    p = 0.0
    for tn in tree:
        rec = tn.record
        if rec.observe is None:
            continue
        if optimal.value(rec.node) >= rec.risk - _TOL:
            # count it only if no ancestor was wasteful already
            anc = any(optimal.value(by_path[tn.path[:k]].record.node) >= by_path[tn.path[:k]].record.risk - _TOL
                      for k in range(len(tn.path)))
            if not anc:
                p += tn.prob
    return p


# --------------------------------------------------------------------------
# Monte Carlo replay with common random numbers


def draw_episodes(compiled, n: int, seed: int):
    """Hidden joint states ``int64[n]`` and outcome uniforms ``float64[n, O]`` for `n` episodes.

    Observations are conditionally independent given the state, so drawing one
    uniform per observation up front and inverting its outcome distribution
    when (and if) it is acquired is exact; every policy replayed on the same
    draws sees the same world and the same outcome of each source.

    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("payment_release"))
    >>> states, u = draw_episodes(c, 5, 0)
    >>> states.shape, u.shape
    ((5,), (5, 4))
    """
    rng = np.random.default_rng(seed)
    p = np.asarray(compiled.prior, dtype=np.float64)
    states = rng.choice(len(p), size=n, p=p / p.sum()).astype(np.int64)
    uniforms = rng.random((n, len(compiled.obs_names)))
    return states, uniforms


def measure_mc(compiled, admission, policy, states, uniforms, *, audit, none_action: int | None = None,
               repeats: int = 1) -> tuple[dict, dict]:
    """Replay `policy` on the drawn episodes; return ``(metrics, per-episode arrays)``.

    A policy is a deterministic function of the node, so its decision at a node
    already met in an earlier episode is reused (with the time it took then):
    only distinct nodes are planned (each `repeats` times, the fastest kept).
    Nodes are kept with their decisions: under a deterministic policy each set
    of pairs is reached by one path only, so a kept node is the node this
    episode would compute.

    Returns
    -------
    metrics : dict
        Means with a normal 95% interval for the total loss.
    episodes : dict
        ``total`` (R at the stop + penalties), ``realised`` (L(action, hidden
        state) + penalties), ``planning_ms`` per episode.

    Examples
    --------
    >>> import planner
    >>> from planner.evaluation.audit import Audit
    >>> d = planner.load_domain("payment_release")
    >>> c = planner.compile_domain(d)
    >>> states, u = draw_episodes(c, 400, 1)
    >>> m, ep = measure_mc(c, planner.admit(c), planner.parse_policy("one-step"), states, u, audit=Audit(d.raw))
    >>> bool(m["ci_low"] <= 1.1925 <= m["ci_high"]), m["forbidden"], m["breach_paths"]
    (True, 0, 0)
    """
    c = compiled
    D = len(c.dims)
    n = len(states)
    root = root_node(c, admission)
    cache: dict = {}  # node key -> (node, observation chosen or None, ms)
    total = np.empty(n)
    realised = np.empty(n)
    pen = np.empty(n)
    spent_all = np.zeros((n, D))
    acq = np.empty(n)
    planning = np.empty(n)
    lat, decisions = [], 0
    breach_paths = forbidden = unavailable = repeated = 0
    harm = np.zeros(n, dtype=bool)
    harm_x = np.zeros(n)
    harm_ok = np.zeros(n, dtype=bool)
    fixed_ok = np.zeros(n, dtype=bool)
    ok = correct_actions(c.loss)
    for e in range(n):
        s = int(states[e])
        node = root
        penalty = 0.0
        path = []
        ms_ep = 0.0
        while True:
            hit = cache.get(node.key)
            if hit is None:
                ms = math.inf
                for _ in range(max(1, repeats)):  # the fastest of `repeats` runs
                    t0 = time.perf_counter_ns()
                    decision = policy.decide(node)
                    ms = min(ms, (time.perf_counter_ns() - t0) / 1e6)
                o = decision.observe
                if o is not None and not node.eligible[o]:
                    raise SessionError(f"policy {policy.spec} chose {c.obs_names[o]}, which is not eligible")
                hit = (node, o, ms)
                cache[node.key] = hit
            node, o, ms = hit
            lat.append(ms)
            decisions += 1
            ms_ep += ms
            if o is None:
                break
            y = inverse_cdf(c.lik[o], int(c.n_outcomes[o]), s, float(uniforms[e, o]))
            child = node.outcome_of.copy()
            child[o] = y
            kept = cache.get(child.tobytes())
            node = kept[0] if kept is not None else node.child(o, y)
            penalty += float(c.penalty[o])
            path.append((o, y))
        risk, action = node.risk, node.action
        total[e] = risk + penalty
        realised[e] = float(c.loss[action, s]) + penalty
        pen[e] = penalty
        spent_all[e] = node.spent
        acq[e] = len(path)
        planning[e] = ms_ep
        found = audit.path_counts(_names(c, path))
        breach_paths += found["breach"]
        forbidden += found["forbidden"]
        unavailable += found["unavailable"]
        repeated += found["repeats"]
        harm_ok[e] = ok[none_action, s] and not ok[action, s] if none_action is not None else False
        fixed_ok[e] = (not ok[none_action, s]) and ok[action, s] if none_action is not None else False
        if none_action is not None:
            base = float(c.loss[none_action, s])
            harm[e] = realised[e] > base + _TOL
            harm_x[e] = max(realised[e] - base, 0.0)
    mean = float(total.mean())
    half = 1.96 * float(total.std(ddof=1)) / math.sqrt(n) if n > 1 else float("inf")
    metrics = {
        "method": "mc",
        "total_loss": mean,
        "ci_low": mean - half,
        "ci_high": mean + half,
        "decision_loss": float((total - pen).mean()),
        "penalty": float(pen.mean()),
        **{f"spent_{d}": float(spent_all[:, i].mean()) for i, d in enumerate(c.dims)},
        "acquisitions": float(acq.mean()),
        "audit_diff": float("nan"),
        "breach_paths": int(breach_paths),
        "breach_prob": breach_paths / n,
        "forbidden": int(forbidden),
        "unavailable_acquisitions": int(unavailable),
        "repeat_acquisitions": int(repeated),
        "harm": float(harm_ok.mean()) if none_action is not None else float("nan"),
        "fixed": float(fixed_ok.mean()) if none_action is not None else float("nan"),
        "p_worse_than_none": float(harm.mean()) if none_action is not None else float("nan"),
        "excess_vs_none": float(harm_x.mean()) if none_action is not None else float("nan"),
        "realised_loss": float(realised.mean()),
        "episodes": int(n),
        "nodes": len(cache),
        "decisions_per_episode": decisions / n,
        "lat_median_ms": float(np.median(lat)),
        "lat_p95_ms": float(np.quantile(lat, 0.95, method="inverted_cdf")),
        "lat_max_ms": float(max(lat)),
        "planning_ms_per_episode": float(planning.mean()),
    }
    return metrics, {"total": total, "realised": realised, "planning_ms": planning}


def loss_bounds(compiled, policy, caller=None, *, max_nodes: int, work_cap: int) -> tuple:
    """``(lower, upper)`` bounds on `policy`'s expected total loss, from its tree decided up to the caps.

    The policy's own tree (its choices through every outcome of positive
    probability, :func:`planner.evaluation.evaluate.policy_children`) is
    expanded best first: the undecided node with the largest ``P(reach) x
    (upper - lower)`` of its :func:`cut_bounds` is decided next (ties in
    the order reached), until `max_nodes` nodes are decided or their
    decisions have searched more than `work_cap` nodes (:func:`search_nodes`).
    The expected loss is a sum over the tree: ``P(reach) x R(n)`` at a
    stop, ``P(reach) x penalty(o)`` at an acquisition, and for the subtree
    below an undecided node its reach probability times its expected loss
    from there, which :func:`cut_bounds` bounds. So the bounds hold for any
    order of expansion; the best-first order only makes them tight where the
    probability is (the caps cut a policy tree of thousands of leaves, most
    of them improbable). A policy's decision is a function of the node alone
    (:class:`~planner.policies.base.Policy`), so deciding the nodes in
    another order than the evaluation's changes nothing. Both caps are
    counts, so the bounds are the same on every machine; where nothing is
    capped the two bounds are equal and are the exact value.

    >>> import planner
    >>> c = planner.compile_domain(planner.load_domain("payment_release"))
    >>> lo, up = loss_bounds(c, planner.parse_policy("one-step"), max_nodes=100, work_cap=100)
    >>> round(lo, 4), lo == up
    (1.1925, True)
    >>> lo, up = loss_bounds(c, planner.parse_policy("one-step"), max_nodes=1, work_cap=100)
    >>> lo < 1.1925 < up
    True
    """
    import heapq

    from planner.evaluation.evaluate import policy_children
    from planner.session.session import Session

    s = Session(compiled, policy, caller=caller)
    c = s.compiled
    heap: list = []
    order = 0
    exact = 0.0  # the decided part of the sum: stops' risks and acquisitions' penalties, times reach

    def push(node, prob):
        nonlocal order
        lo, up = cut_bounds(node)
        heapq.heappush(heap, (-prob * (up - lo), order, prob, lo, up, node))
        order += 1

    push(s.node, 1.0)
    decided = work = 0
    while heap and decided < max_nodes and work <= work_cap:
        _, _, prob, _, _, node = heapq.heappop(heap)
        d = policy.decide(node)
        decided += 1
        work += search_nodes(node, d)
        if d.observe is None:
            exact += prob * node.risk
            continue
        exact += prob * float(c.penalty[d.observe])
        for _, z, child in policy_children(node, d.observe, policy.spec):
            push(child, prob * z)
    lo = exact + sum(prob * a for _, _, prob, a, _, _ in heap)
    up = exact + sum(prob * b for _, _, prob, _, b, _ in heap)
    return lo, up


def cut_bounds(node) -> tuple:
    """``(lower, upper)`` bounds on any policy's expected total loss from `node` on, without asking it.

    Lower: ``sum_s b(s) min_u L(u, s)``. Whatever the policy does, its
    final action u at a leaf loses at least ``min_u L(u, s)`` in every
    state, the leaves' beliefs average to ``b`` (Bayes), and penalties are
    >= 0.

    Upper: ``b . L(u0) + TIE`` plus a bound on the penalties still payable,
    u0 the best under ``b`` of the actions with no ``requires`` (permitted at
    every node: ``lookahead.core`` holds an absent expression true), else ``sum_s b(s) max_u L(u, s)``
    (valid where some action is permitted at every leaf; at a leaf with none ``R`` is infinite and no
    finite bound holds, for any cut).
    At every leaf the policy's decision loss is ``R = min`` over the
    permitted actions of the posterior loss, within :data:`TIE` (the first
    of the tied actions), so ``R(leaf) <= b_leaf . L(u0) + TIE``; the
    leaves' beliefs average to ``b``, so the expected decision loss is at
    most ``b . L(u0) + TIE``. Stopping at `node` would not be a bound: the
    policy may go on and pay more than it saves. Penalties: the policy
    acquires each observation at most once, only one not yet taken and
    admitted, and each acquisition must be affordable when made, so the
    set T it acquires from here satisfies ``spent + sum_T cost <= limits +
    BUDGET_TOL`` in every dimension (costs are >= 0). The penalty of T is at
    most the least, over the plain sum and every finite-limit dimension,
    of that dimension's fractional knapsack (a linear-programming
    relaxation: take the observations in decreasing penalty per unit of
    cost, the last one in part).

    >>> import planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node
    >>> lo, up = cut_bounds(n)
    >>> lo <= n.risk <= up
    True
    """
    from lookahead.core import BUDGET_TOL, TIE
    from lookahead.layout import NOT_TAKEN

    c = node.compiled
    b = node.belief
    lo = float(b @ c.loss.min(axis=0))
    free = np.asarray(c.facts.action_req) == NO_EXPR
    decision = float((c.loss[free] @ b).min()) + TIE if free.any() else float(b @ c.loss.max(axis=0))
    left = (node.outcome_of == NOT_TAKEN) & node.admission.admitted & node.affordable
    pen = np.asarray(c.penalty)[left]
    cost = np.asarray(c.cost)[left]
    payable = float(pen.sum())
    for d in np.flatnonzero(np.isfinite(c.limits)):
        room = float(c.limits[d] - node.spent[d] + BUDGET_TOL)
        payable = min(payable, _knapsack(pen, cost[:, d], room))
    return lo, decision + payable


def _knapsack(value, weight, room: float) -> float:
    """The fractional knapsack's optimum (an upper bound on the 0/1 one): ``value, weight >= 0``.

    >>> _knapsack(np.array([3.0, 2.0, 1.0]), np.array([1.0, 2.0, 0.0]), 2.0)
    5.0
    """
    free = weight <= 0.0
    total = float(value[free].sum())
    v, w = value[~free], weight[~free]
    for k in np.argsort(-v / w, kind="stable"):
        if room <= 0.0:
            break
        take = min(1.0, room / float(w[k]))
        total += take * float(v[k])
        room -= take * float(w[k])
    return total
