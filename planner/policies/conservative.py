"""Conservative planning under uncertain likelihoods: act only on a value that survives the posterior.

A calibrated domain (``planner calibrate``, :mod:`planner.calibration.calibrate`) holds
posterior-mean likelihoods and, per likelihood row, the Dirichlet posterior
they are the mean of (a Beta posterior for each failure rate). Planning on the
domain as written is planning on the posterior mean. The wrapper here plans
*conservatively*: it draws whole likelihood tables from the posterior
(:func:`planner.calibration.calibrate.posterior_draws`, seeded, once per compiled domain)
and lets the base policy's choice stand only where the value of acquiring it
stays above its cost in all but the lowest `quantile` of the draws.

At a node ``n``, for every eligible observation ``o`` and every draw ``d``::

    b_d(s)   ∝ prior_d(s) * prod over the pairs (o', y') seen at n of lik_d[o', y', s]
    net_d(o) = R_d(n) - Q_d(o)       (one-step: EVSI_d(o) - penalty(o))

where ``R_d`` and ``Q_d`` are the node's Bayes risk and the depth-D
expectimax value of starting with ``o`` under the draw's likelihoods and
belief (facts, gates and budget are the node's: they do not depend on the
likelihoods). The depth D is the base's: 1 for ``one-step``, D for
``lookahead:D`` (the depth it chose, for ``lookahead:auto``), and for
``bounded`` its choice is valued by the plan it found, followed as planned
under the draw (each leaf's action fixed), and the other candidates at the
depth of that plan, capped at :data:`BOUNDED_DEPTH_CAP` (a bounded search per
draw would cost the draws times its node budget; see :class:`Conservative`). A draw under which the
node's history has probability 0 is dropped and counted.

The rule, with ``lo(o)`` the lower `quantile` of ``net_d(o)`` over the draws
kept (numpy's default, linear, quantile) and ties within
:data:`~lookahead.core.TIE` going to stopping:

1. the base policy decides on the posterior mean, as it would alone;
2. if it stops, the wrapper stops;
3. if ``lo(choice) > TIE``, its choice is acquired;
4. otherwise the eligible observation with the largest ``lo(o) > TIE`` (among
   those whose net at the posterior mean is positive too), ties broken by
   :func:`~planner.policies.base.pick_best` (lower penalty, then file order);
5. otherwise it stops (``no_positive_value``, or whatever
   :func:`planner.session.session.stop_at` finds), never as a policy limit. Where
   every draw is dropped nothing can pass step 3 or 4, so it stops too.

So an observation is acquired only when the lower quantile of its value over
posterior draws beats its cost, and conservatism only ever removes or
replaces acquisitions: it never acquires where the base would stop.
"""

from __future__ import annotations

import attrs
import numpy as np

from lookahead.core import TIE, evsi_all
from lookahead.layout import NOT_TAKEN
from lookahead.search import SearchCapExceeded, expectimax
from planner.tolerances import PROB_TOL
from planner.errors import PolicyError, SearchCapError
from planner.node import Decision
from planner.policies.base import Policy, pick_best
from planner.policies.bounded import Bounded
from planner.policies.lookahead import Lookahead
from planner.policies.onestep import OneStepEVSI

__all__ = ["Conservative", "DEFAULT_QUANTILE", "DEFAULT_DRAWS", "DEFAULT_SEED", "BOUNDED_DEPTH_CAP", "MAX_DRAWS",
           "MAX_DRAW_BYTES", "draws_for", "draw_beliefs"]

#: The lower quantile of the net value over draws that must be positive (5%: "in 19 draws out of 20").
DEFAULT_QUANTILE = 0.05
#: Posterior draws of the likelihood tables, made once per compiled domain. 256 draws put the 5% quantile
#: between the 13th and 14th lowest value; with 64 its seed-to-seed spread was twice as large (sd 0.34
#: of a root value near 0 on a 60-session payment calibration, against 0.09 with 4,096 draws), which
#: let the seed decide marginal acquisitions. The cost of a decision grows linearly with the draws.
DEFAULT_DRAWS = 256
#: The seed of the draws: a run is deterministic, and a receipt replays.
DEFAULT_SEED = 0
#: The most draws a spec may ask for (a spec comes from receipts too), and the most bytes their
#: likelihood tables may take on a domain.
MAX_DRAWS = 100_000
MAX_DRAW_BYTES = 2**30
#: The deepest per-draw search under a ``bounded`` base. The base's own search has no depth limit
#: and a node budget of up to 200,000 nodes per decision; repeating it under every draw would cost
#: the draws times that. A depth-limited search to the depth of the base's plan, at most 3, sees
#: the value of the plan's first steps (a prerequisite and what it unlocks) for a few hundred nodes.
BOUNDED_DEPTH_CAP = 3

_BASES = (OneStepEVSI, Lookahead, Bounded)
_OPTIONS = ("q", "draws", "seed")


def _plan_net(node, plan: dict, belief, lik) -> float | None:
    """``R(node) - J(plan)`` under one draw: the plan followed as planned, every leaf's action fixed.

    `plan` is the base's named plan (:mod:`planner.policies.plans`); its
    branches are the outcomes of positive probability at the posterior mean,
    which are the draws' too (a draw keeps the mean's support). None where the
    plan was cut short (``elided``) or misses an outcome the draw can produce:
    the caller then keeps the depth-limited value.
    """
    c = node.compiled

    def walk(p, q):
        if p.get("elided"):
            return None
        if "stop" in p:
            return float(q @ c.loss[c.action_names.index(p["stop"])])
        o = c.obs_index(p["observe"])
        total = float(c.penalty[o]) * float(q.sum())
        seen = 0.0
        for name, branch in p["outcomes"].items():
            qy = q * lik[o, c.outcome_index(o, name)]
            seen += float(qy.sum())
            sub = walk(branch["then"], qy)
            if sub is None:
                return None
            total += sub
        if seen < float(q.sum()) * (1.0 - PROB_TOL):  # the draw reaches an outcome the plan does not cover
            return None
        return total

    stop = min(float(belief @ c.loss[a]) for a in np.flatnonzero(node.permitted))
    j = walk(plan, np.asarray(belief, dtype=np.float64))
    return None if j is None else stop - j


def draws_for(compiled, draws: int, seed: int) -> tuple:
    """``(prior float64[n, S], lik float64[n, O, Y, S])``: the posterior draws of `compiled`, read-only.

    Made once per compiled domain, `draws` and `seed` (kept with
    :meth:`~planner.compile.CompiledDomain.memo`). Raises
    :class:`~planner.errors.PolicyError` for a domain without a calibration block.

    >>> import planner
    >>> draws_for(planner.compile_domain(planner.load_domain("payment_release")), 8, 0)
    Traceback (most recent call last):
    ...
    planner.errors.PolicyError: payment_release: conservative planning needs a calibrated domain (planner calibrate writes one)
    """
    if getattr(compiled.domain, "calibration", None) is None:
        raise PolicyError(f"{compiled.domain.name}: conservative planning needs a calibrated domain "
                          "(planner calibrate writes one)")

    size = int(draws) * compiled.lik.size * compiled.lik.itemsize
    if size > MAX_DRAW_BYTES:
        raise PolicyError(f"{compiled.domain.name}: {draws:,} posterior draws of its likelihoods would take "
                          f"{size / 2**20:,.0f} MiB (at most {MAX_DRAW_BYTES // 2**20:,} MiB): ask for fewer draws")

    def build(c):
        # here: the calibration module (and the domain loader it imports) is not needed to parse a policy
        from planner.calibration.calibrate import posterior_draws

        prior, lik = posterior_draws(c, draws, seed)
        # read-only and contiguous like the compiled tables, so the kernels reuse their compiled code
        prior, lik = np.ascontiguousarray(prior, dtype=np.float64), np.ascontiguousarray(lik, dtype=np.float64)
        prior.setflags(write=False)
        lik.setflags(write=False)
        return prior, lik

    return compiled.memo(("posterior-draws", int(draws), int(seed)), build)


def draw_beliefs(node, prior, lik) -> tuple:
    """``(beliefs float64[k, S], kept int64[k])``: each draw's belief at `node`, for the draws it keeps.

    The belief of draw ``d`` is ``prior[d]`` times ``lik[d, o, y]`` for every
    pair ``(o, y)`` seen at the node, in observation order, normalised. A draw
    under which the pairs have probability 0 is dropped (not in `kept`). An
    ``unavailable`` outcome of probability 0 under the draw leaves its belief
    unchanged, as :meth:`planner.node.Node.child` treats an unplanned failure
    (it says nothing about the world). The beliefs are read-only.

    >>> import numpy as np, planner
    >>> n = planner.Session(planner.load_domain("payment_release")).node.child(0, 1)
    >>> c = n.compiled
    >>> b, kept = draw_beliefs(n, np.array([c.prior, c.prior]), np.array([c.lik, c.lik]))
    >>> b.round(4).tolist(), kept.tolist()
    ([[0.0122, 0.9878], [0.0122, 0.9878]], [0, 1])
    """
    u = np.array(prior, dtype=np.float64)
    for o in np.flatnonzero(node.outcome_of != NOT_TAKEN):
        y = int(node.outcome_of[o])
        v = u * lik[:, o, y, :]
        z = v.sum(axis=1)
        if y == node.unavailable_slot(o):
            v = np.where((z > 0.0)[:, None], v, u)  # an unplanned failure under this draw: no information
            z = v.sum(axis=1)
        u = v / np.where(z > 0.0, z, 1.0)[:, None]  # each step normalised: long histories do not underflow
    z = u.sum(axis=1)
    kept = np.flatnonzero(z > 0.0)
    beliefs = np.ascontiguousarray(u[kept] / z[kept, None])
    beliefs.setflags(write=False)
    return beliefs, kept


def _check_base(_inst, _attr, value):
    if not isinstance(value, _BASES):
        what = value.spec if isinstance(value, Policy) else type(value).__name__
        raise ValueError(f"conservative planning wraps one-step, lookahead:D or bounded, not {what}")


def _check_quantile(_inst, _attr, value):
    if not (0.0 <= value <= 0.5):
        raise ValueError(f"quantile must be a number in [0, 0.5], got {value!r}")


def _check_draws(_inst, attr, value):
    if isinstance(value, bool) or not 1 <= value <= MAX_DRAWS:
        raise ValueError(f"draws must be a positive integer of at most {MAX_DRAWS:,}, got {value!r}")


def _nonnegative(_inst, attr, value):
    if isinstance(value, bool) or value < 0:
        raise ValueError(f"{attr.name} must be an integer >= 0, got {value!r}")


def _label(q: float) -> str:
    return f"q{100 * q:02g}"


@attrs.frozen
class Conservative(Policy):
    """Act on the base policy's choice only when its value survives the likelihoods' posterior.

    Spec ``conservative:BASE`` (BASE: ``one-step``, ``lookahead:D``,
    ``lookahead:auto``, ``bounded``, ``bounded:N``, ...; plain
    ``conservative`` is ``conservative:one-step``); parameters other than the
    defaults come before BASE: ``conservative:q=0.1:draws=128:seed=3:lookahead:2``.
    The rule is in the module docstring; it needs a calibrated domain.

    Parameters
    ----------
    base : Policy
        A :class:`~planner.policies.onestep.OneStepEVSI`,
        :class:`~planner.policies.lookahead.Lookahead` or
        :class:`~planner.policies.bounded.Bounded`: it decides on the posterior mean.
    quantile : float
        The lower quantile of the net value over draws that must be positive
        (default :data:`DEFAULT_QUANTILE`, 0.05); the candidate table shows the
        interval from it to ``1 - quantile``. In [0, 0.5]: 0 asks every draw, 0.5 the median.
    draws : int
        Posterior draws of the likelihood tables (default :data:`DEFAULT_DRAWS`, 256).
    seed : int
        Their seed (default :data:`DEFAULT_SEED`, 0).

    Notes
    -----
    **Cost.** A decision is the base's decision plus ``draws + 1`` evaluations
    of the net value at the node (one per draw, one at the posterior mean for
    the fall-back rule): EVSI of every eligible observation for ``one-step``,
    a depth-D search for ``lookahead:D`` and ``bounded``. The draws themselves
    are made once per compiled domain.

    **Under bounded.** The base's choice is valued under each draw by the
    base's own plan, followed as planned with each leaf's action fixed
    (``info["valued_by_plan"]``; a plan cut short falls back to the search
    below). The other candidates are valued by a depth-limited search to the
    depth of that plan, at most :data:`BOUNDED_DEPTH_CAP` (3) steps: a bounded
    search per draw would cost the draws times its node budget.

    **Receipts.** Each scored row carries ``interval`` ``[lower, upper]``, the
    lower quantile and the upper ``1 - quantile`` of its net value over draws
    (at the depth above); ``Decision.info`` says the quantile, the draws, the
    seed, how many draws the node's history dropped, the depth, the base's
    choice and whether it was overruled, and the base's own ``base_info``.

    Examples
    --------
    On an uncalibrated domain it is an error; on the payment case calibrated
    on 40 logged sessions of the registry, the registry's net stays above 0
    across the draws (its 5% to 95% interval), so the base's choice stands
    (on 20, with the world prior estimated too, its lower end falls below 0).

    >>> import numpy as np, planner
    >>> from planner.calibration.calibrate import calibrate, calibrated_data
    >>> d = planner.load_domain("payment_release")
    >>> planner.Session(d, "conservative").next()
    Traceback (most recent call last):
    ...
    planner.errors.PolicyError: payment_release: conservative planning needs a calibrated domain (planner calibrate writes one)
    >>> log = [{"acquisitions": [("approval_registry", w)], "resolution": {"approval": w}}
    ...        for w in ["approved"] * 22 + ["pending"] * 18]
    >>> cal = planner.Domain.from_dict(calibrated_data(calibrate(d, log), date="2026-12-01"))
    >>> step = planner.Session(cal, Conservative(OneStepEVSI())).next()
    >>> row = step.candidates[0]
    >>> step.observation, step.info["overruled"], [round(x, 2) for x in row.interval]
    ('approval_registry', False, [0.43, 4.1])

    See Also
    --------
    planner.calibration.calibrate.posterior_draws : the draws.
    planner.policies.base.pick_best : the tie rule of the fall-back.
    docs/conservative-planning.md : the rule, the defaults, the cost, reading the interval column.
    """

    base: Policy = attrs.field(validator=_check_base)
    quantile: float = attrs.field(default=DEFAULT_QUANTILE, converter=float, validator=_check_quantile)
    draws: int = attrs.field(default=DEFAULT_DRAWS, converter=int, validator=_check_draws)
    seed: int = attrs.field(default=DEFAULT_SEED, converter=int, validator=_nonnegative)

    name = "conservative"
    arg = "BASE"
    forms = ("conservative", "conservative:BASE")
    summary = ("acquire the BASE policy's choice (one-step, the default; lookahead:D; bounded[:N]) only when the "
               f"lower {DEFAULT_QUANTILE:g} quantile of its net value over {DEFAULT_DRAWS} posterior draws of a "
               "calibrated domain's likelihoods is positive (options q=Q:draws=N:seed=K before BASE)")
    wraps = True

    def with_node_cap(self, n: int) -> "Conservative":
        """The same rule over its base capped at `n` nodes per decision."""
        return attrs.evolve(self, base=self.base.with_node_cap(n))

    def with_work(self, n: int) -> "Policy":
        return attrs.evolve(self, base=self.base.with_work(n))

    @classmethod
    def from_arg(cls, arg, spec, *, parse=None):
        if parse is None:
            raise PolicyError(f"policy '{spec}': build it with planner.policies.parse_policy (it parses the base)")
        opts: dict = {}
        rest = arg
        while rest:
            head, sep, tail = rest.partition(":")
            key, eq, value = head.partition("=")
            if not eq:
                break
            if key not in _OPTIONS or key in opts:
                raise PolicyError(f"policy '{spec}': unknown or repeated option '{key}' "
                                  f"(options: {', '.join(o + '=' for o in _OPTIONS)} before the base policy)")
            opts[key] = value
            rest = tail if sep else ""
        try:
            q = float(opts.get("q", DEFAULT_QUANTILE))
            draws = int(opts.get("draws", DEFAULT_DRAWS))
            seed = int(opts.get("seed", DEFAULT_SEED))
        except ValueError:
            raise PolicyError(f"policy '{spec}': q= takes a number, draws= and seed= integers") from None
        try:
            base = parse(rest or "one-step")
        except PolicyError as e:
            raise PolicyError(f"policy '{spec}': {e}") from None
        try:
            return cls(base, quantile=q, draws=draws, seed=seed)
        except ValueError as e:
            raise PolicyError(f"policy '{spec}': {e}") from None

    @property
    def spec(self) -> str:
        opts = []
        if self.quantile != DEFAULT_QUANTILE:
            opts.append(f"q={self.quantile!r}")
        if self.draws != DEFAULT_DRAWS:
            opts.append(f"draws={self.draws}")
        if self.seed != DEFAULT_SEED:
            opts.append(f"seed={self.seed}")
        return ":".join([self.name, *opts, self.base.spec])

    @property
    def value_label(self) -> str:
        return self.base.value_label

    def params(self) -> dict:
        return {"base": self.base.spec, "base_params": self.base.params(), "quantile": self.quantile,
                "draws": self.draws, "seed": self.seed}

    # ------------------------------------------------------------------

    def value_depth(self, decision) -> int:
        """The depth of the net values under the draws, from the base's `decision` at the node."""
        if isinstance(self.base, Lookahead):
            return int(decision.info["depth"])
        if isinstance(self.base, Bounded):
            return min(max(int(decision.info["plan_depth"]), 1), BOUNDED_DEPTH_CAP)
        return 1

    def _nets(self, node, belief, lik, depth) -> np.ndarray:
        """``float64[O]``: net value of each eligible observation under `lik` and `belief` (nan elsewhere)."""
        c = node.compiled
        if depth == 1:
            out = np.empty(len(c.obs_names))
            return evsi_all(belief, node.outcome_of, lik, c.n_outcomes, c.loss, c.facts, node.eligible, out) \
                - c.penalty
        options = {"prune": self.base.prune, "max_nodes": self.base.max_nodes} \
            if isinstance(self.base, Lookahead) else {}
        try:
            res = expectimax(belief, node.outcome_of, node.spent, node.eligible, node.admission.admitted, depth,
                             lik, c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty, c.n_values, **options)
        except SearchCapExceeded as e:
            raise SearchCapError(self.spec, depth, e.cap) from None
        return np.where(node.eligible, res.risk - res.q, np.nan)

    def decide(self, node):
        c = node.compiled
        prior, lik = draws_for(c, self.draws, self.seed)
        base = self.base.decide(node)
        depth = self.value_depth(base)
        beliefs, kept = draw_beliefs(node, prior, lik)
        elig = np.flatnonzero(node.eligible)
        lo = np.full(len(c.obs_names), np.nan)
        hi = lo.copy()
        choice = base.observe
        plan = base.info.get("plan") if isinstance(self.base, Bounded) and choice is not None else None
        by_plan = plan is not None and plan.get("observe") == c.obs_names[choice]
        if len(kept) and len(elig):
            nets = np.array([self._nets(node, beliefs[i], lik[d], depth) for i, d in enumerate(kept)])
            if by_plan:
                planned = [_plan_net(node, plan, beliefs[i], lik[d]) for i, d in enumerate(kept)]
                by_plan = all(v is not None for v in planned)
                if by_plan:
                    nets[:, choice] = planned
            lo[elig] = np.quantile(nets[:, elig], self.quantile, axis=0)
            hi[elig] = np.quantile(nets[:, elig], 1.0 - self.quantile, axis=0)
        if choice is None:
            pick = None
        elif lo[choice] > TIE:
            pick = choice
        else:
            mean = self._nets(node, node.belief, c.lik, depth)
            pick = pick_best(lo, c.penalty, node.eligible & (mean > TIE) & (lo > TIE))
        rows = [attrs.evolve(row, interval=(float(lo[o]), float(hi[o]))) if np.isfinite(lo[o]) else row
                for o, row in enumerate(base.candidates)]
        info = {
            "base": self.base.spec,
            "base_choice": None if choice is None else c.obs_names[choice],
            "choice": None if pick is None else c.obs_names[pick],
            "overruled": pick != choice,
            "quantile": self.quantile,
            "draws": self.draws,
            "seed": self.seed,
            "draws_used": int(len(kept)),
            "dropped_draws": int(self.draws - len(kept)),
            "value_depth": depth,
            "valued_by_plan": bool(by_plan),
            "interval_label": [_label(self.quantile), _label(1.0 - self.quantile)],
        }
        if base.info:
            info["base_info"] = dict(base.info)
        return Decision(observe=pick, candidates=tuple(rows), info=info)
