"""Measure one policy on one domain: exactly (every outcome path) or by replay with common random numbers.

Exact measurement runs :func:`planner.evaluate.evaluate_policy` with the
policy wrapped in :class:`TimedPolicy`, which records, for every node the
evaluation visits, the decision, the belief, the risk and the time the policy
took to decide. From those records the policy's tree is walked again
(:func:`policy_tree`) to get each outcome path's probability, which gives:

- an independent recomputation of the expected total loss (it must equal the
  evaluator's to 1e-9: ``audit_diff``);
- the independent audit of every path (:class:`Auditor`): hard-limit breaches
  recomputed from the domain file's costs and limits, and forbidden
  acquisitions recomputed from its entitlements, purposes and ages (never from
  the session's own gates), plus acquisitions whose preconditions did not hold
  and repeated acquisitions;
- planning latency per decision, weighted by the probability that the
  decision is taken (median and p95), and expected planning time per episode;
- stop quality against V* (premature stops: the policy stops where the optimum
  continues, V* < R; wasteful continuations: it acquires where the optimum
  stops, V* = R);
- acquisition harm against no retrieval (:mod:`planner.harm`: the
  probability that the prior's decision was right in the true world and the
  policy's final one is wrong, ``harm``, and the reverse, ``fixed``), plus the
  probability that the realised loss plus penalties exceeds the realised loss
  of deciding on the prior, and the expected excess.

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

import numpy as np

from lookahead.core import posterior
from planner.errors import SessionError
from planner.evaluate import evaluate_policy
from planner.node import make_node
from planner.policies.base import Policy

__all__ = [
    "TIMING_COLUMNS",
    "TimedPolicy",
    "Auditor",
    "policy_tree",
    "weighted_quantile",
    "measure_exact",
    "draw_episodes",
    "measure_mc",
    "harm_of",
    "ReplayPolicy",
]

#: Columns that depend on wall-clock time (excluded when comparing runs).
TIMING_COLUMNS = ("lat_median_ms", "lat_p95_ms", "lat_max_ms", "planning_ms_per_episode")

_TOL = 1e-9


class _Record:
    __slots__ = ("outcome_of", "observe", "belief", "spent", "risk", "action", "ns", "limited", "eligible",
                 "v_estimate")

    def __init__(self, node, decision, ns):
        self.outcome_of = np.array(node.outcome_of)
        self.observe = decision.observe
        self.belief = np.array(node.belief)
        self.spent = np.array(node.spent)
        self.risk = float(node.risk)
        self.action = int(node.action)
        self.ns = ns
        self.limited = bool(decision.limited)
        self.eligible = np.array(node.eligible)
        # a lookahead's own estimate V_d = min(R, min_o Q_d(o)); nan for other policies
        if "depth" in decision.info:
            qs = [row.extra["q"] for row in decision.candidates if "q" in row.extra]
            self.v_estimate = float(min([node.risk] + qs))
        else:
            self.v_estimate = float("nan")


class TimedPolicy(Policy):
    """Wrap a policy: time every ``decide`` and keep what it saw and chose, by node.

    ``records`` maps ``node.outcome_of.tobytes()`` to the last decision taken
    there (a policy is deterministic, so the last equals the first). With
    `repeats` > 1 each decision is computed that many times and the fastest
    time kept.

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain(planner.DOMAINS / "payment_release.yaml"),
    ...                     TimedPolicy(planner.parse_policy("one-step")))
    >>> s.next().observation, s.policy.spec, len(s.policy.records)
    ('approval_registry', 'one-step', 1)
    """

    def __init__(self, inner: Policy, repeats: int = 1):
        self.inner = inner
        self.repeats = max(1, int(repeats))
        self.records: dict = {}

    @property
    def spec(self) -> str:
        return self.inner.spec

    def params(self) -> dict:
        return self.inner.params()

    def decide(self, node):
        ns = None
        for _ in range(self.repeats):  # the fastest of `repeats` runs: less noise from a shared machine
            t0 = time.perf_counter_ns()
            decision = self.inner.decide(node)
            dt = time.perf_counter_ns() - t0
            ns = dt if ns is None else min(ns, dt)
        self.records[node.outcome_of.tobytes()] = _Record(node, decision, ns)
        return decision


# --------------------------------------------------------------------------
# independent audit, from the domain file's own data


class Auditor:
    """Check acquisition paths against the domain file's data, independently of the session.

    Budget limits and costs, entitlements, purposes, ages and preconditions are
    read from the parsed domain file (a dict), and the fact semantics
    (establish, supersede, contradiction) are re-implemented here, so a bug in
    the session's gates or accounting cannot hide itself.

    Parameters
    ----------
    data : dict
        The parsed domain file.
    entitlements : iterable of str
        What the subject holds.
    purpose : str, optional
        The decision's purpose (default: the domain's).

    Examples
    --------
    >>> import planner
    >>> from planner.loader import read_domain_file
    >>> a = Auditor(read_domain_file(planner.DOMAINS / "payment_release.yaml"), ())
    >>> a.check([("approval_registry", "pending")])
    {'breach': False, 'forbidden': 0, 'unavailable': 0, 'repeats': 0}
    >>> a.check([("approval_registry", "pending"), ("manager_message", "unclear"), ("stale_approval_pdf", "approved")])
    {'breach': True, 'forbidden': 1, 'unavailable': 0, 'repeats': 0}
    """

    def __init__(self, data: dict, entitlements=(), purpose=None):
        self.data = data
        self.obs = data.get("observations") or {}
        self.world = data["world"]
        budget = data.get("budget") or {}
        self.limits = {d: float(v) for d, v in (budget.get("limits") or {}).items()}
        ents = set(entitlements)
        purpose = purpose if purpose is not None else data.get("purpose")
        self.forbidden = {}
        for name, spec in self.obs.items():
            why = []
            if spec.get("entitlement") is not None and spec["entitlement"] not in ents:
                why.append("entitlement")
            if spec.get("purposes") is not None and purpose not in spec["purposes"]:
                why.append("purpose")
            limit = self._max_age(spec)
            if limit is not None and float(spec.get("age_minutes", 0.0)) > limit:
                why.append("stale")
            self.forbidden[name] = tuple(why)

    def _max_age(self, spec):
        if spec.get("max_age_minutes") is not None:
            return float(spec["max_age_minutes"])
        dep = spec.get("depends_on") or []
        props = ([spec["bears_on"]] if spec.get("bears_on") else []) + ([dep] if isinstance(dep, str) else list(dep))
        ages = [self.world[p].get("max_age_minutes") for p in props if p in self.world]
        ages = [float(a) for a in ages if a is not None]
        if ages:
            return min(ages)
        top = self.data.get("max_age_minutes")
        return None if top is None else float(top)

    def _status(self, seen: dict) -> dict:
        """proposition -> established value, or None when contradicted."""
        est: dict = {}
        sup: dict = {}
        for name, outcome in seen.items():
            spec = self.obs[name]
            if spec["role"] not in ("establish", "supersede") or outcome == "unavailable":
                continue
            prop = spec["bears_on"]
            if "establishes" in spec:
                value = spec["establishes"].get(outcome)
            else:
                value = outcome if outcome in self.world[prop]["values"] else None
            if value is None:
                continue
            (sup if spec["role"] == "supersede" else est).setdefault(prop, set()).add(value)
        out = {}
        for prop in set(est) | set(sup):
            values = sup.get(prop) or est.get(prop)
            out[prop] = next(iter(values)) if len(values) == 1 else None
        return out

    def _mentions(self, expr) -> set:
        out = set()
        for key, val in expr.items():
            if key in ("all", "any"):
                for sub in val:
                    out |= self._mentions(sub)
            elif key in self.world:
                out.add(key)
        return out

    def _eval(self, expr, seen, status) -> bool:
        terms = []
        for key, val in expr.items():
            if key == "all":
                terms.append(all(self._eval(s, seen, status) for s in val))
            elif key == "any":
                terms.append(any(self._eval(s, seen, status) for s in val))
            elif key in self.world:
                terms.append(status.get(key, "") == val)
            else:
                terms.append(seen.get(key) == val)
        return all(terms)

    def holds(self, expr, seen: dict) -> bool:
        """Does a ``requires`` expression hold after the (observation -> outcome) pairs `seen`?"""
        status = self._status(seen)
        if any(p in status and status[p] is None for p in self._mentions(expr)):
            return False  # a contradiction blocks whatever mentions the proposition
        return self._eval(expr, seen, status)

    def check(self, path) -> dict:
        """Audit one path of ``(observation, outcome)`` names, in acquisition order.

        Returns ``{"breach": bool, "forbidden": int, "unavailable": int, "repeats": int}``:
        a hard limit exceeded after some step; acquisitions rejected by
        entitlement, purpose or age; acquisitions whose precondition did not
        hold; observations acquired twice.
        """
        spent = dict.fromkeys(self.limits, 0.0)
        seen: dict = {}
        breach = False
        forbidden = unavailable = repeats = 0
        for name, outcome in path:
            spec = self.obs[name]
            if name in seen:
                repeats += 1
            if self.forbidden[name]:
                forbidden += 1
            if spec.get("requires") is not None and not self.holds(spec["requires"], seen):
                unavailable += 1
            seen[name] = outcome
            for d, v in (spec.get("cost") or {}).items():
                if d in spent:
                    spent[d] += float(v)
            if any(spent[d] > self.limits[d] + _TOL for d in self.limits):
                breach = True
        return {"breach": breach, "forbidden": forbidden, "unavailable": unavailable, "repeats": repeats}


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
    O = len(c.obs_names)
    root = np.full(O, -1, dtype=np.int64).tobytes()
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
            child[o] = y
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


def measure_exact(compiled, data: dict, policy, *, auditor: Auditor, entitlements=(), optimal=None,
                  none_action: int | None = None, repeats: int = 1) -> dict:
    """Exact measurement of `policy` (see the module docstring).

    Parameters
    ----------
    compiled : CompiledDomain
    data : dict
        The parsed domain file `compiled` was built from (for the audit).
    policy : Policy
    auditor : Auditor
    entitlements : iterable of str
    optimal : OptimalValues, optional
        For stop quality and route regret.
    none_action : int, optional
        The action taken on the prior (for harm against no retrieval).
    repeats : int
        Time each decision this many times and keep the fastest.

    Returns
    -------
    dict
        The metrics (column name -> value), see :func:`planner.study.runner.run_case`.

    Examples
    --------
    >>> import planner
    >>> from planner.loader import read_domain_file
    >>> data = read_domain_file(planner.DOMAINS / "payment_release.yaml")
    >>> c = planner.compile_domain(planner.load_domain(planner.DOMAINS / "payment_release.yaml"))
    >>> m = measure_exact(c, data, planner.parse_policy("one-step"), auditor=Auditor(data))
    >>> round(m["total_loss"], 4), m["breach_paths"], m["forbidden"], m["leaves"]
    (1.1925, 0, 0, 2)
    """
    timed = TimedPolicy(policy, repeats=repeats)
    ev = evaluate_policy(compiled, timed, entitlements=entitlements)
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
    for tn in tree:
        rec = tn.record
        ms = rec.ns / 1e6
        lat.append(ms)
        w.append(tn.prob)
        planning_ms += tn.prob * ms
        decisions += tn.prob
        vstar = optimal.value(rec.outcome_of) if optimal is not None else float("nan")
        if rec.observe is None:
            leaves += 1
            total += tn.prob * (rec.risk + tn.penalty)
            audit = auditor.check(_names(c, tn.path))
            breach_paths += audit["breach"]
            breach_prob += tn.prob * audit["breach"]
            forbidden += audit["forbidden"]
            unavailable += audit["unavailable"]
            repeated += audit["repeats"]
            if none_action is not None:
                mine = c.loss[rec.action] + tn.penalty
                base = c.loss[none_action]
                harm_prob += tn.prob * float(rec.belief @ (mine > base + _TOL))
                harm_exp += tn.prob * float(rec.belief @ np.maximum(mine - base, 0.0))
            if vstar < rec.risk - _TOL:
                p_premature += tn.prob
                premature_loss += tn.prob * (rec.risk - vstar)
        elif vstar >= rec.risk - _TOL:  # the optimum stops here
            wasteful += tn.prob
    p_wasteful = _p_any_wasteful(tree, optimal) if optimal is not None else float("nan")
    harm, fixed = harm_of(c, policy.spec, timed.records, tree, entitlements=entitlements)
    spent = dict(ev.expected_spent)
    root = next(tn for tn in tree if tn.path == ())
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
        "_root_record": root.record,
        "_tree": tree,
    }


class ReplayPolicy(Policy):
    """Replay the decisions a :class:`TimedPolicy` recorded (for a second enumeration without re-planning)."""

    def __init__(self, spec: str, records: dict):
        self._spec = spec
        self.records = records

    @property
    def spec(self) -> str:
        return self._spec

    def decide(self, node):
        from planner.node import Decision

        return Decision(observe=self.records[node.outcome_of.tobytes()].observe, candidates=())


def harm_of(compiled, spec: str, records: dict, tree, *, entitlements=()) -> tuple[float, float]:
    """(harm, fixed) against no retrieval: :func:`planner.harm.acquisition_harm` on the recorded decisions.

    Falls back to the same definition computed on the policy tree when
    :mod:`planner.harm` is not there.
    """
    try:
        from planner.harm import acquisition_harm
    except ImportError:  # pragma: no cover - planner.harm ships with the package
        acquisition_harm = None
    if acquisition_harm is not None:
        h = acquisition_harm(compiled, ReplayPolicy(spec, records), entitlements=entitlements)
        return h.harm, h.fixed
    loss = compiled.loss  # pragma: no cover
    ok = loss <= loss.min(axis=0, keepdims=True) + 1e-12  # pragma: no cover
    root = next(tn for tn in tree if tn.path == ())  # pragma: no cover
    ok0 = ok[root.record.action]  # pragma: no cover
    harm = fixed = 0.0  # pragma: no cover
    for tn in tree:  # pragma: no cover
        if tn.record.observe is None:
            joint = tn.prob * tn.record.belief
            harm += float(joint @ (ok0 & ~ok[tn.record.action]))
            fixed += float(joint @ (~ok0 & ok[tn.record.action]))
    return harm, fixed  # pragma: no cover


def _p_any_wasteful(tree, optimal) -> float:
    """P(the episode passes through at least one wasteful continuation)."""
    by_path = {tn.path: tn for tn in tree}
    p = 0.0
    for tn in tree:
        rec = tn.record
        if rec.observe is None:
            continue
        if optimal.value(rec.outcome_of) >= rec.risk - _TOL:
            # count it only if no ancestor was wasteful already
            anc = any(optimal.value(by_path[tn.path[:k]].record.outcome_of) >= by_path[tn.path[:k]].record.risk - _TOL
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
    >>> c = planner.compile_domain(planner.load_domain(planner.DOMAINS / "payment_release.yaml"))
    >>> states, u = draw_episodes(c, 5, 0)
    >>> states.shape, u.shape
    ((5,), (5, 4))
    """
    rng = np.random.default_rng(seed)
    p = np.asarray(compiled.prior, dtype=np.float64)
    states = rng.choice(len(p), size=n, p=p / p.sum()).astype(np.int64)
    uniforms = rng.random((n, len(compiled.obs_names)))
    return states, uniforms


def _outcome(lik_o, n_o, s, u) -> int:
    cdf = 0.0
    for y in range(n_o):
        cdf += lik_o[y, s]
        if u < cdf:
            return y
    # u at the top of [0, 1) with rounding in the cdf: the last outcome of positive probability
    return max(y for y in range(n_o) if lik_o[y, s] > 0)


def measure_mc(compiled, admission, data: dict, policy, states, uniforms, *, auditor: Auditor,
               none_action: int | None = None, repeats: int = 1) -> tuple[dict, dict]:
    """Replay `policy` on the drawn episodes; return ``(metrics, per-episode arrays)``.

    A policy is a deterministic function of the node, so its decision at a node
    already met in an earlier episode is reused (with the time it took then):
    only distinct nodes are planned (each `repeats` times, the fastest kept).

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
    >>> from planner.loader import read_domain_file
    >>> data = read_domain_file(planner.DOMAINS / "payment_release.yaml")
    >>> c = planner.compile_domain(planner.load_domain(planner.DOMAINS / "payment_release.yaml"))
    >>> states, u = draw_episodes(c, 400, 1)
    >>> m, ep = measure_mc(c, planner.admit(c), data, planner.parse_policy("one-step"), states, u,
    ...                    auditor=Auditor(data))
    >>> bool(m["ci_low"] <= 1.1925 <= m["ci_high"]), m["forbidden"], m["breach_paths"]
    (True, 0, 0)
    """
    c = compiled
    O = len(c.obs_names)
    D = len(c.dims)
    n = len(states)
    cache: dict = {}
    total = np.empty(n)
    realised = np.empty(n)
    pen = np.empty(n)
    spent_all = np.zeros((n, D))
    acq = np.empty(n)
    planning = np.empty(n)
    lat, decisions = [], 0
    breach_paths = forbidden = unavailable = repeats = 0
    harm = np.zeros(n, dtype=bool)
    harm_x = np.zeros(n)
    harm_ok = np.zeros(n, dtype=bool)
    fixed_ok = np.zeros(n, dtype=bool)
    ok = c.loss <= c.loss.min(axis=0, keepdims=True) + 1e-12  # correct actions, as planner.harm
    for e in range(n):
        s = int(states[e])
        outcome_of = np.full(O, -1, dtype=np.int64)
        belief = np.array(c.prior, dtype=np.float64)
        spent = np.zeros(D)
        penalty = 0.0
        path = []
        ms_ep = 0.0
        while True:
            key = outcome_of.tobytes()
            hit = cache.get(key)
            if hit is None:
                node = make_node(c, admission, outcome_of.copy(), belief.copy(), spent.copy())
                ms = math.inf
                for _ in range(max(1, repeats)):  # the fastest of `repeats` runs
                    t0 = time.perf_counter_ns()
                    decision = policy.decide(node)
                    ms = min(ms, (time.perf_counter_ns() - t0) / 1e6)
                o = decision.observe
                if o is not None and not node.eligible[o]:
                    raise SessionError(f"policy {policy.spec} chose {c.obs_names[o]}, which is not eligible")
                hit = (o, node.risk, node.action, ms)
                cache[key] = hit
            o, risk, action, ms = hit
            lat.append(ms)
            decisions += 1
            ms_ep += ms
            if o is None:
                break
            y = _outcome(c.lik[o], int(c.n_outcomes[o]), s, float(uniforms[e, o]))
            post = np.empty_like(belief)
            posterior(belief, c.lik[o, y], post)
            belief = post
            outcome_of[o] = y
            spent = spent + c.cost[o]
            penalty += float(c.penalty[o])
            path.append((o, y))
        total[e] = risk + penalty
        realised[e] = float(c.loss[action, s]) + penalty
        pen[e] = penalty
        spent_all[e] = spent
        acq[e] = len(path)
        planning[e] = ms_ep
        audit = auditor.check(_names(c, path))
        breach_paths += audit["breach"]
        forbidden += audit["forbidden"]
        unavailable += audit["unavailable"]
        repeats += audit["repeats"]
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
        "repeat_acquisitions": int(repeats),
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
