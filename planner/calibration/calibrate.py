"""Calibrate a domain's likelihoods from an outcome log: Dirichlet posteriors, EM over the latent world.

Every likelihood row (a case of an observation's likelihood: P(outcome | the
world values the case names)) gets a Dirichlet posterior whose prior is the
declared row at ``prior_strength`` pseudo-counts (default
:data:`PRIOR_STRENGTH`); every failure rate a Beta posterior built the same
way. Logged sessions enter as follows:

- a *resolved* session (``planner log resolve``) fixes the propositions it
  names, so its outcomes are counted against the rows of the world it
  resolved to (all of them when it names every proposition);
- an *unresolved* session enters through EM over the compiled joint states
  (lineage variables included): the E-step is each session's posterior over
  joint states given everything it observed under the current rows, the
  M-step the Dirichlet posterior mean given the expected counts. This is a
  latent-class (Dawid-Skene) estimate with the world as the latent class.

**The missing-data assumption.** Which observations a session made, and
whether it was resolved, may depend on what it had already seen (its policy
chose on the outcomes so far; resolution may follow the final action), but
not on outcomes it never saw or on the hidden world beyond what it saw. Then
the unobserved outcomes are missing at random and the likelihood of what was
seen is all EM needs. It breaks when the choice or the resolution depends on
the world directly: a reviewer who looks at the truth before deciding which
sessions to resolve, a tool that is only called (or only fails) in some
worlds, a log that drops the sessions that went wrong. Counting only resolved
sessions (``method="resolved"``) breaks it by construction when resolution
follows the action (only released payments learn the truth), which is why
EM, using every session, is the default.

Intervals: where every used session's world is known, the posterior is the
exact Dirichlet ``alpha = strength x declared + counts``. Where some are
latent, the expected counts of EM overstate what is known, so a seeded Gibbs
sampler (data augmentation: draw each session's state, then the rows)
measures the posterior's spread; each row's concentration is matched to it
(never above the exact-count one) around the EM mean. The 90% intervals are
the 5% and 95% quantiles of seeded draws from the resulting Dirichlet, the
same draws conservative planning uses.

>>> import planner
>>> from planner.calibration.calibrate import calibrate
>>> d = planner.load_domain("payment_release")
>>> log = [{"acquisitions": [("approval_registry", "approved")], "resolution": {"approval": "approved"}}] * 40
>>> cal = calibrate(d, log)
>>> [round(p, 4) for _, p in cal.row("approval_registry", 0).mean]  # (2 x 0.99 + 0.5 + 40) / (2 + 1 + 40)
[0.9879, 0.0121]
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json

import attrs
import numpy as np
import yaml

from planner.tolerances import PROB_TOL
from planner.compile import _case_probs, assemble, compile_domain, likelihood_layout
from planner.errors import PlannerError
from planner.io.loader import calibration_id
from planner.model.parts import UNAVAILABLE, CalibratedFailure, CalibratedObservation, CalibratedRow, Calibration

__all__ = ["calibrate", "CalibrationResult", "CalibrationError", "Identification", "posterior_draws", "dump_domain",
           "PRIOR_STRENGTH", "METHODS", "log_digest", "calibrated_data", "EM_TOL", "EM_MAX_ITER", "GIBBS_BURN",
           "GIBBS_KEEP", "INTERVAL_DRAWS", "INTERVAL", "JEFFREYS", "DISPERSED_STARTS", "POOL_NATS", "LABEL_WEIGHT"]

#: Pseudo-counts of the declared row in each row's Dirichlet prior: the declared row counts as two
#: logged outcomes. Declared rows are guesses (the reason to calibrate), so the prior should yield to
#: a few dozen outcomes; at 10 a wrong 0.35 kept the payment message's posterior 0.6 standard
#: deviations off the truth after 1,000 sessions, and its 90% intervals covered the true rows 84% of
#: the time (studies/results/calibration/report.md compares both strengths).
PRIOR_STRENGTH = 2.0
#: ``em``: every session, unresolved ones through EM; ``resolved``: resolved sessions only.
METHODS = ("em", "resolved")
#: EM stops when no row probability moves by more than this, or after EM_MAX_ITER iterations.
EM_TOL = 1e-10
EM_MAX_ITER = 2000
#: Gibbs sweeps discarded (per chain), then kept (shared among the chains, one per mode), when some world is latent.
GIBBS_BURN = 200
GIBBS_KEEP = 1000
#: Draws from each row's Dirichlet posterior that give its interval.
INTERVAL_DRAWS = 20_000
#: The posterior interval's probability (its quantiles are (1 - INTERVAL) / 2 and (1 + INTERVAL) / 2).
INTERVAL = 0.90
#: Pseudo-counts added to every cell the declared row (or prior) allows, once the observation has data:
#: the half-count smoothing of Jeffreys' prior (Krichevsky-Trofimov).
#: Without it a cell declared 0.01 starts at 0.02 pseudo-counts, a prior piled at the boundary whose 90%
#: intervals missed a true 0.10 in most logs of 20 sessions or fewer (studies/results/calibration_coverage/).
JEFFREYS = 0.5
#: EM is also started from this many seeded random rows and priors, to find ridges and other modes.
DISPERSED_STARTS = 3
#: Fits within this many nats of the best log-likelihood are modes the intervals pool.
POOL_NATS = 3.0
#: A relabelling (a proposition's values swapped) the log gives more weight than this is a warning.
LABEL_WEIGHT = 0.05
#: Fits whose rows are all within this of each other are the same fit.
SAME_FIT = 0.02
#: Distinct fits (not relabellings) whose rows differ by more than this are a ridge (a warning).
RIDGE_ROWS = 0.05
#: Propositions with more values than this are not searched for relabellings (k! permutations).
MAX_RELABEL_VALUES = 4


class CalibrationError(PlannerError):
    """The log cannot calibrate this domain (nothing usable in it)."""


@attrs.frozen(kw_only=True, eq=False)
class _Logged:
    """The usable part of the log, as arrays: ``acq_*`` one entry per informative acquisition."""

    n: int
    acq_session: np.ndarray  # int64[M]
    acq_obs: np.ndarray      # int64[M]
    acq_slot: np.ndarray     # int64[M] (declared outcomes only: unavailable carries no world information)
    mask: np.ndarray         # bool[N, S]: the states each session's resolution allows
    resolved: np.ndarray     # bool[N]: some proposition resolved
    calls: np.ndarray        # float64[O]: acquisitions (unavailable included)
    fails: np.ndarray        # float64[O]: unavailable outcomes
    skipped: tuple           # (reason, count) pairs
    sessions: int = 0        # every session read, skipped ones included
    digest: str = ""         # log_digest of every session read


@attrs.frozen(kw_only=True, eq=False)
class CalibrationResult:
    """Posterior rows of every observation, and how they were obtained.

    Attributes
    ----------
    compiled : CompiledDomain
        The declared domain, compiled.
    rows : list of float64[C_o, k_o]
        Posterior mean rows (EM's fixed point), per observation.
    alpha : list of float64[C_o, k_o]
        Dirichlet parameters whose means are `rows`.
    counts : list of float64[C_o, k_o]
        Expected logged outcomes per row (exact counts where the world is known).
    interval : list of float64[C_o, k_o, 2]
    failure_alpha : float64[O, 2]
        ``(unavailable, answered)`` Beta parameters; `failure` their means.
    prior : list of float64[k]
        The world prior's posterior mean: one vector per proposition (declared
        marginals) or one over the world states (a declared joint table);
        `prior_alpha`, `prior_counts`, `prior_interval` as for the rows.
    prior_estimated : bool
        False: the prior was held at the declared one.
    identification : Identification
        What the log identifies (warnings where it does not).
    """

    compiled: object
    method: str
    prior_strength: float
    rows: list
    alpha: list
    counts: list
    interval: list
    declared: list
    failure: np.ndarray
    failure_alpha: np.ndarray
    failure_interval: np.ndarray
    calls: np.ndarray
    fails: np.ndarray
    acquired: np.ndarray
    sessions: int
    used: int
    resolved: int
    skipped: tuple
    inconsistent: int
    iterations: int
    latent: bool
    digest: str
    world: object = None
    prior: list = None
    prior_alpha: list = None
    prior_counts: list = None
    prior_interval: list = None
    prior_estimated: bool = True
    identification: object = None

    def row(self, name: str, case: int) -> CalibratedRow:
        """The posterior of case `case` of observation `name`."""
        c = self.compiled
        o = c.obs_index(name)
        outs = c.outcome_names[o][:-1]
        return CalibratedRow(counts=list(zip(outs, self.counts[o][case].tolist())),
                             alpha=list(zip(outs, self.alpha[o][case].tolist())),
                             interval=[(y, tuple(self.interval[o][case, k].tolist())) for k, y in enumerate(outs)],
                             declared=list(zip(outs, self.declared[o][case].tolist())))


# --------------------------------------------------------------------------


def _field(session, name, default=None):
    return session.get(name, default) if isinstance(session, dict) else getattr(session, name, default)


def log_digest(sessions) -> str:
    """sha256 of what calibration reads from the sessions (their outcomes and resolutions, in order).

    >>> log_digest([{"acquisitions": [("a", "x")], "resolution": {}}])[:12]
    '19ee10cc6e0c'
    """
    digest = _Digest()
    for s in sessions:
        digest.add(s)
    return digest.hexdigest()


class _Digest:
    """:func:`log_digest` fed one session at a time: the sha256 of the JSON list it would dump, never built."""

    def __init__(self):
        self._h = hashlib.sha256(b"[")
        self._first = True

    def add(self, s) -> None:
        acq = [(_acq(a)[0], _acq(a)[1]) for a in _field(s, "acquisitions", ())]
        item = [_field(s, "id"), acq, sorted((_field(s, "resolution") or {}).items())]
        text = json.dumps(item, separators=(",", ":"), default=str)
        self._h.update((text if self._first else "," + text).encode())
        self._first = False

    def hexdigest(self) -> str:
        h = self._h.copy()
        h.update(b"]")
        return h.hexdigest()


def _acq(a) -> tuple:
    if isinstance(a, (tuple, list)):
        return a[0], a[1]
    return a.observation, a.outcome


def _read_log(compiled, sessions, method: str) -> _Logged:
    """The sessions this domain can use, as arrays; the others counted by reason."""
    c = compiled
    O, S = len(c.obs_names), c.n_states
    obs_pos = {n: i for i, n in enumerate(c.obs_names)}
    skipped: dict = {}
    a_s, a_o, a_y, masks, resolved = [], [], [], [], []
    calls, fails = np.zeros(O), np.zeros(O)
    digest, seen = _Digest(), 0

    def skip(why):
        skipped[why] = skipped.get(why, 0) + 1

    for s in sessions:  # one pass: `sessions` may stream from a log
        digest.add(s)
        seen += 1
        name = _field(s, "domain")
        if name is not None and name != c.domain.name:
            skip(f"another domain ({name})")
            continue
        res = dict(_field(s, "resolution") or {})
        if method == "resolved" and not res:
            skip("unresolved (method resolved)")
            continue
        mask = np.ones(S, dtype=bool)
        bad = None
        for p, v in res.items():
            if p not in c.prop_names or v not in c.prop_values[c.prop_names.index(p)]:
                bad = f"resolution {p}={v} names no proposition value of the domain"
                break
            pi = c.prop_names.index(p)
            mask &= c.states[:, pi] == c.prop_values[pi].index(v)
        rows = []
        for a in _field(s, "acquisitions", ()):
            name_o, outcome = _acq(a)
            o = obs_pos.get(name_o)
            if o is None or outcome not in c.outcome_names[o]:
                bad = f"an acquisition ({name_o}={outcome}) the domain does not declare"
                break
            rows.append((o, c.outcome_names[o].index(outcome)))
        if bad is not None:
            skip(bad)
            continue
        i = len(masks)
        masks.append(mask)
        resolved.append(bool(res))
        for o, y in rows:
            calls[o] += 1
            if y == c.n_outcomes[o] - 1:
                fails[o] += 1
            else:
                a_s.append(i), a_o.append(o), a_y.append(y)
    i64 = np.int64
    return _Logged(n=len(masks), acq_session=np.array(a_s, dtype=i64), acq_obs=np.array(a_o, dtype=i64),
                   acq_slot=np.array(a_y, dtype=i64),
                   mask=np.array(masks, dtype=bool).reshape(len(masks), S), resolved=np.array(resolved, dtype=bool),
                   calls=calls, fails=fails, skipped=tuple(sorted(skipped.items())), sessions=seen,
                   digest=digest.hexdigest())


def _posterior(prior, lik, log: _Logged):
    """``(W float64[N, S], ok bool[N])``: each session's posterior over joint states; ok False: probability 0."""
    with np.errstate(divide="ignore"):
        logp = np.where(log.mask, np.log(prior)[None, :], -np.inf)
        ll = np.log(lik[log.acq_obs, log.acq_slot, :])  # [M, S]
    np.add.at(logp, log.acq_session, ll)
    top = logp.max(axis=1, keepdims=True)
    ok = np.isfinite(top[:, 0])
    w = np.exp(logp - np.where(ok[:, None], top, 0.0))
    w[~ok] = 0.0
    w /= np.where(ok, w.sum(axis=1), 1.0)[:, None]
    return w, ok


class _Rows:
    """Which parameter rows exist and how logged outcomes map onto them."""

    def __init__(self, compiled):
        c = compiled
        self.c = c
        self.lay = likelihood_layout(c)
        self.declared = [_case_probs(o.likelihood, o.outcomes) for o in c.domain.observations]
        # A lineage member's rows are its group's: estimated once, on the first member.
        first = {v: f for v, f in self.lay.groups}
        self.owner = np.array([first.get(int(v), o) if v >= 0 else o for o, v in enumerate(self.lay.latent)])

    def counts(self, w, log: _Logged):
        """Expected outcome counts per row, from state weights ``w[N, S]``."""
        c, lay = self.c, self.lay
        out = [np.zeros_like(d) for d in self.declared]
        for o in range(len(c.obs_names)):
            C = self.declared[o].shape[0]
            sel = log.acq_obs == o
            if not sel.any():
                continue
            v = int(lay.latent[o])
            if v < 0:
                onehot = np.zeros((c.n_states, C))
                onehot[np.arange(c.n_states), lay.case_of[o]] = 1.0
                per = w[log.acq_session[sel]] @ onehot  # [n_o, C]
                for y in range(out[o].shape[1]):
                    out[o][:, y] += per[log.acq_slot[sel] == y].sum(axis=0)
        for v, f in lay.groups:
            # Sessions that read the shared record (any member answered) see its value exactly.
            members = np.flatnonzero(lay.latent == v)
            sess = np.unique(log.acq_session[np.isin(log.acq_obs, members)])
            if len(sess) == 0:
                continue
            C, k = self.declared[f].shape
            cell = lay.case_of[f] * k + c.states[:, v]
            onehot = np.zeros((c.n_states, C * k))
            onehot[np.arange(c.n_states), cell] = 1.0
            out[f] += (w[sess].sum(axis=0) @ onehot).reshape(C, k)
        return out

    def alpha0(self, strength, log: _Logged):
        """The prior's parameters: strength x declared on its support (a cell declared 0 stays at 0).

        An observation with data (its lineage group's, for a member) also gets
        :data:`JEFFREYS` on every cell of its support: the half-count smoothing
        of observed counts (Krichevsky-Trofimov). A row without data keeps its
        declared mean.
        """
        seen = np.zeros(len(self.declared), dtype=bool)
        seen[self.owner[np.unique(log.acq_obs)]] = True
        seen = seen[self.owner]
        return [strength * d + (JEFFREYS * (d > 0) if seen[o] else 0.0) for o, d in enumerate(self.declared)]


def _means(alpha):
    return [a / np.where(a.sum(axis=1, keepdims=True) > 0, a.sum(axis=1, keepdims=True), 1.0) for a in alpha]


def _owned(rows, owner):
    return [rows[owner[o]] for o in range(len(rows))]


class _World:
    """The world prior as parameters: independent marginals or a joint table, as the domain declares it.

    ``alpha0`` is the prior's Dirichlet (``strength x declared + JEFFREYS`` on
    every value or state the declared prior allows); ``counts`` maps state
    weights ``w[N, S]`` to expected counts; ``prior`` turns parameters into
    the world prior over the world states (float64[W]).
    """

    def __init__(self, compiled, strength):
        c = compiled
        self.c = c
        P = len(c.prop_names)
        S = c.n_states
        self.W = int(np.prod([len(v) for v in c.prop_values]))
        self.L = S // self.W
        self.world_of = np.repeat(np.arange(self.W), self.L)
        self.grid = np.asarray(c.states)[:: self.L, :P]
        lay = likelihood_layout(c)
        wp = np.asarray(lay.world_prior)[:: self.L]
        self.declared_w = wp / wp.sum()
        self.marginal = c.domain.prior.marginals is not None
        if self.marginal:
            marg = dict(c.domain.prior.marginals)
            self.declared = [np.array([dict(marg[p])[v] for v in c.prop_values[i]], dtype=float)
                             for i, p in enumerate(c.prop_names)]
        else:
            self.declared = [self.declared_w.copy()]
        self.alpha0 = [strength * d + JEFFREYS * (d > 0) for d in self.declared]

    def flat(self):
        """A copy whose Dirichlet prior is flat (maximum likelihood)."""
        import copy

        out = copy.copy(self)
        out.alpha0 = [np.where(a > 0, 1e-9, 0.0) for a in self.alpha0]
        return out

    def counts(self, w):
        ww = np.bincount(self.world_of, weights=np.asarray(w).sum(axis=0), minlength=self.W)
        if self.marginal:
            return [np.bincount(self.grid[:, i], weights=ww, minlength=len(d)) for i, d in enumerate(self.declared)]
        return [ww]

    def prior(self, params):
        if self.marginal:
            out = np.ones(self.W)
            for i, m in enumerate(params):
                out = out * np.asarray(m)[self.grid[:, i]]
            return out
        return np.asarray(params[0], dtype=float)

    def names(self):
        """``(label, values)`` of each parameter vector."""
        c = self.c
        if self.marginal:
            return [(p, list(c.prop_values[i])) for i, p in enumerate(c.prop_names)]
        return [("joint", [", ".join(f"{p}={c.prop_values[i][g[i]]}" for i, p in enumerate(c.prop_names))
                           for g in self.grid])]


def _assemble(c, R, world: _World, rows, wparams, failure):
    """``(prior float64[S], lik)``: the arrays from rows, failure rates and the world prior's parameters."""
    prior, lik = assemble(c, rows, failure)
    base = np.asarray(R.lay.world_prior)
    scale = np.where(base > 0, world.prior(wparams)[world.world_of] / np.where(base > 0, base, 1.0), 0.0)
    prior = prior * scale
    return prior / prior.sum(), lik


def _loglik(prior, lik, log: _Logged) -> float:
    """The log's log-likelihood: sum over sessions of log P(what it saw, its resolution)."""
    with np.errstate(divide="ignore"):
        logp = np.where(log.mask, np.log(prior)[None, :], -np.inf)
        ll = np.log(lik[log.acq_obs, log.acq_slot, :])
    np.add.at(logp, log.acq_session, ll)
    top = logp.max(axis=1)
    ok = np.isfinite(top)
    return float((top[ok] + np.log(np.exp(logp[ok] - top[ok, None]).sum(axis=1))).sum())


def _log_dirichlet(alpha0, p) -> float:
    """The log density (up to a constant) of a Dirichlet at `p`, over the cells with a positive parameter."""
    tot = 0.0
    for a, x in zip(alpha0, p):
        a, x = np.asarray(a), np.asarray(x)
        on = a > 0
        tot += float(((a[on] - 1.0) * np.log(np.maximum(x[on], 1e-300))).sum())
    return tot


@attrs.frozen(kw_only=True, eq=False)
class _Fit:
    rows: list
    wparams: list
    loglik: float
    logpost: float
    iterations: int
    start: str


def _em(c, R, world, log, a0, rows, wparams, failure, *, fix_prior, start) -> _Fit:
    """EM from (`rows`, `wparams`) to a fixed point of the posterior (Dirichlet priors ``a0``, ``world.alpha0``)."""
    O = len(c.obs_names)
    prior, lik = _assemble(c, R, world, rows, wparams, failure)
    if start == "resolutions":
        # The first E-step sees only the resolutions (no likelihood yet), so an outcome the declared rows
        # rule out still lands somewhere; afterwards its row gives it positive probability.
        lik = np.ones_like(c.lik)
    w, ok = _posterior(prior, lik, log)
    iterations = 0
    for iterations in range(1, EM_MAX_ITER + 1):
        counts = R.counts(w, log)
        new = _owned(_means([a0[o] + counts[o] for o in range(O)]), R.owner)
        _support_guard(new, R.declared)
        wnew = wparams if fix_prior else _means1([a + n for a, n in zip(world.alpha0, world.counts(w))])
        moved = max([float(np.abs(new[o] - rows[o]).max()) for o in range(O) if rows[o].size]
                    + [float(np.abs(a - b).max()) for a, b in zip(wnew, wparams)], default=0.0)
        rows, wparams = new, wnew
        prior, lik = _assemble(c, R, world, rows, wparams, failure)
        w, ok = _posterior(prior, lik, log)
        if moved < EM_TOL:
            break
    ll = _loglik(prior, lik, log)
    lp = ll + _log_dirichlet([a0[o] for o in range(O) if R.owner[o] == o], [rows[o] for o in range(O)
                                                                              if R.owner[o] == o])
    if not fix_prior:
        lp += _log_dirichlet(world.alpha0, wparams)
    return _Fit(rows=rows, wparams=wparams, loglik=ll, logpost=lp, iterations=iterations, start=start)


def _means1(alpha):
    return [a / a.sum() if a.sum() > 0 else a for a in alpha]


def _relabelings(c, R, world: _World):
    """``[(proposition, permutation of its values, state map int64[S])]``: relabelings the model can express.

    Swapping the values of one proposition maps every joint state to
    another; with no resolution, the log's likelihood is the same at the
    relabelled parameters whenever every likelihood case maps onto a case
    (rows keyed by that proposition do; ``cases`` mixing it with others may
    not). Propositions of more than :data:`MAX_RELABEL_VALUES` values are not
    searched.
    """
    import itertools

    out = []
    states = np.asarray(c.states)
    index = {tuple(s): i for i, s in enumerate(states.tolist())}
    for p, values in enumerate(c.prop_values):
        k = len(values)
        if k < 2 or k > MAX_RELABEL_VALUES:
            continue
        for perm in itertools.permutations(range(k)):
            if perm == tuple(range(k)):
                continue
            moved = states.copy()
            moved[:, p] = np.asarray(perm)[states[:, p]]
            smap = np.array([index[tuple(s)] for s in moved.tolist()])
            if all(_case_map(R.lay.case_of[o], smap) is not None for o in range(len(c.obs_names))):
                out.append((c.prop_names[p], perm, smap))
    return out


def _case_map(case_of, smap):
    """``m`` with ``case_of[smap[s]] == m[case_of[s]]`` for every state, or None when there is none."""
    m = {}
    for s in range(len(case_of)):
        a, b = int(case_of[s]), int(case_of[smap[s]])
        if m.setdefault(a, b) != b:
            return None
    return np.array([m.get(i, i) for i in range(int(case_of.max()) + 1)])


def _relabel(R, world: _World, rows, wparams, smap, p_index, perm):
    """The parameters under a relabelling (state s of the new model behaves as state ``smap[s]`` of the old)."""
    new = []
    for o, r in enumerate(rows):
        m = _case_map(R.lay.case_of[o], smap)
        new.append(np.asarray(r)[m] if r.shape[0] == len(m) else r.copy())
    if world.marginal:
        wp = [w.copy() for w in wparams]
        wp[p_index] = np.asarray(wparams[p_index])[list(perm)]
    else:
        wsmap = smap[:: world.L] // world.L
        wp = [np.asarray(wparams[0])[wsmap]]
    return new, wp


@attrs.frozen(kw_only=True)
class Identification:
    """What the log identifies, and what rests on the declared domain alone.

    Attributes
    ----------
    status : str
        ``identified``, or ``weak`` (some ``warnings``).
    resolved : int
        Sessions with a resolution.
    labels : tuple of (str, float)
        Per proposition whose values can be swapped: the weight the log
        itself gives the swapped labels (0: ruled out; 0.5: the log cannot
        tell them apart, only the declared rows pick the labels).
    ridge : float
        The largest difference between rows of fits from dispersed starts that
        explain the log within :data:`RIDGE_NATS` of the best (0: none).
    fits : int
        Distinct fits whose modes the intervals pool.
    warnings : tuple of str
        One line each.
    """

    status: str
    resolved: int
    labels: tuple
    ridge: float
    fits: int
    warnings: tuple

    def to_json(self) -> dict:
        return {"status": self.status, "resolved": self.resolved,
                "labels": {p: _rounded(w) for p, w in self.labels}, "ridge": _rounded(self.ridge),
                "fits": self.fits, "warnings": list(self.warnings)}


def calibrate(domain, sessions, *, method: str = "em", prior_strength: float = PRIOR_STRENGTH,
              seed: int = 0, estimate_prior: bool = True) -> CalibrationResult:
    """Posterior likelihood rows, failure rates and world prior of `domain` from logged `sessions`.

    Parameters
    ----------
    domain : Domain
        The declared domain (its rows and prior are the Dirichlet priors' means).
    sessions : iterable
        Logged sessions: :class:`planner.io.store.LoggedSession` or mappings with
        ``acquisitions`` (``(observation, outcome)`` pairs or objects with
        those attributes), ``resolution`` (``{proposition: value}``) and
        optionally ``domain`` (sessions of another domain are skipped).
        Read once, in one pass: a stream such as
        :meth:`planner.io.store.OutcomeLog.iter_sessions` is never held in
        memory, only the arrays of outcomes it yields.
    method : {"em", "resolved"}
    prior_strength : float
        Pseudo-counts of the declared row (above 0: a row without data keeps its declared mean).
    seed : int
        Seeds the dispersed EM starts, the Gibbs sampler and the interval draws.
    estimate_prior : bool
        Estimate the world prior with the rows (default); False holds it at the declared prior.

    Returns
    -------
    CalibrationResult
    """
    if method not in METHODS:
        raise CalibrationError(f"unknown calibration method '{method}' (methods: {', '.join(METHODS)})")
    if not np.isfinite(prior_strength) or prior_strength <= 0:
        raise CalibrationError(f"prior strength must be a finite number above 0, got {prior_strength}")
    c = compile_domain(domain) if not hasattr(domain, "lik") else domain
    log = _read_log(c, sessions, method)  # the one pass over `sessions`
    if log.n == 0:
        raise CalibrationError(f"no session in the log can calibrate {c.domain.name}"
                               + (f" (skipped: {_skips(log.skipped)})" if log.skipped else ""))
    R = _Rows(c)
    world = _World(c, prior_strength)
    O = len(c.obs_names)
    fix = not estimate_prior
    f_declared = np.array([o.failure_rate for o in c.domain.observations])
    floor = JEFFREYS * (log.calls > 0)
    fa0 = np.stack([prior_strength * f_declared + floor * (f_declared > 0),
                    prior_strength * (1 - f_declared) + floor * (f_declared < 1)], axis=1)
    fa = fa0 + np.stack([log.fails, log.calls - log.fails], axis=1)
    with np.errstate(invalid="ignore"):
        failure = np.where(fa.sum(axis=1) > 0, fa[:, 0] / np.where(fa.sum(axis=1) > 0, fa.sum(axis=1), 1), f_declared)
    a0 = R.alpha0(prior_strength, log)
    rng = np.random.default_rng(seed)
    base = _em(c, R, world, log, a0, [d.copy() for d in R.declared], [d.copy() for d in world.declared],
               failure, fix_prior=fix, start="resolutions")
    fits = [base]
    latent_any = bool((log.mask.sum(axis=1) > 1).any()) and method == "em"
    relabel = _relabelings(c, R, world) if latent_any else []
    label_fits = []
    if latent_any:
        for prop, perm, smap in relabel:
            rows, wp = _relabel(R, world, base.rows, base.wparams, smap, c.prop_names.index(prop), perm)
            f = _em(c, R, world, log, a0, rows, wp, failure, fix_prior=fix, start=f"{prop} relabelled")
            # the log's own verdict on the swap: the log-likelihood of the swapped fit against the fit
            swapped = _loglik(*_assemble(c, R, world, rows, wp, failure), log)
            label_fits.append((prop, perm, smap, f, swapped - base.loglik))
            fits.append(f)
        # Maximum likelihood (no Dirichlet prior) from dispersed starts: on a ridge each lands elsewhere on it.
        flat = [np.where(a > 0, 1e-9, 0.0) for a in a0]
        flat_world = world.flat()
        for k in range(DISPERSED_STARTS):
            rows = _owned([_dirichlet_rows(np.where(d > 0, 1.0, 0.0), rng) for d in R.declared], R.owner)
            wp = [d.copy() for d in world.declared] if fix else [_dirichlet_rows(np.where(d > 0, 1.0, 0.0), rng)
                                                               for d in world.declared]
            f = _em(c, R, flat_world, log, flat, rows, wp, failure, fix_prior=fix, start=f"dispersed {k + 1}")
            # scored as every fit is: its log-likelihood, and its density under the Dirichlet priors
            lp = f.loglik + _log_dirichlet([a0[o] for o in range(O) if R.owner[o] == o],
                                           [f.rows[o] for o in range(O) if R.owner[o] == o])
            if not fix:
                lp += _log_dirichlet(world.alpha0, f.wparams)
            fits.append(attrs.evolve(f, logpost=lp))
    # Report the fit the declared domain prefers among those the log allows (the highest posterior):
    # where the log cannot tell labels apart, the declared rows pick them.
    best = max(fits, key=lambda f: (f.logpost, f is base))
    top = max(f.loglik for f in fits)
    kept = _distinct([f for f in fits if f.loglik >= top - POOL_NATS], best)
    weights = np.array([np.exp(f.loglik - top) for f in kept])
    weights /= weights.sum()
    rows, wparams = best.rows, best.wparams
    prior, lik = _assemble(c, R, world, rows, wparams, failure)
    w, ok = _posterior(prior, lik, log)
    counts = _owned(R.counts(w, log), R.owner)
    alpha = [a0[o] + counts[o] for o in range(O)]
    wcounts = world.counts(w)
    walpha = [a + n for a, n in zip(world.alpha0, wcounts)]
    if fix:
        walpha = [d * 1e12 for d in world.declared]  # held fixed: a point mass at the declared prior
    latent = bool(((w.max(axis=1) < 1 - PROB_TOL) & ok).any()) and method == "em"
    ident = _identification(c, log, ok, best, fits, label_fits, kept, weights, latent)
    if latent:
        # A relabelling the log cannot rule out enters the intervals as the mirror image of the draws, at the
        # weight the log gives it (a label-symmetric reading: the declared rows pick the labels the means
        # report, never how sure the intervals are).
        mirrored = [_relabel(R, world, best.rows, best.wparams, smap, c.prop_names.index(prop), perm)[0]
                    for prop, perm, smap, *_ in label_fits]
        chains = [f for f in kept if f is best or not (any(f is g[3] for g in label_fits) or any(
            _close(f.rows, m) for m in mirrored))]
        cw = np.array([np.exp(f.loglik - top) for f in chains])
        mirrors = [(prop, perm, smap, wt) for (prop, perm, smap, *_), (_, wt) in zip(label_fits, ident.labels)
                   if wt > PROB_TOL]
        alpha, walpha, interval, winterval = _gibbs(c, R, world, log, a0, chains, cw / cw.sum(), mirrors, alpha,
                                                    walpha, failure, fix, rng)
    else:
        interval = [_dirichlet_interval(a, rng) for a in alpha]
        winterval = [_dirichlet_interval(a[None, :], rng)[0] for a in walpha]
    rows = _owned(_means(alpha), R.owner)
    wparams = _means1(walpha) if not fix else [d.copy() for d in world.declared]
    f_int = np.array([_beta_interval(a, rng) for a in fa])
    acquired = np.bincount(log.acq_obs, minlength=O).astype(float) + log.fails
    return CalibrationResult(
        compiled=c, method=method, prior_strength=float(prior_strength), rows=rows, alpha=alpha, counts=counts,
        interval=interval, declared=R.declared, failure=failure, failure_alpha=fa, failure_interval=f_int,
        calls=log.calls, fails=log.fails, acquired=acquired, sessions=log.sessions, used=int(ok.sum()),
        resolved=int(log.resolved[ok].sum()), skipped=log.skipped, inconsistent=int((~ok).sum()),
        iterations=best.iterations, latent=latent, digest=log.digest,
        world=world, prior=wparams, prior_alpha=walpha, prior_counts=wcounts, prior_interval=winterval,
        prior_estimated=not fix, identification=ident)


def _close(a, b) -> bool:
    return max((float(np.abs(x - y).max()) for x, y in zip(a, b) if x.size), default=0.0) <= SAME_FIT


def _distinct(fits, best):
    """`fits` without repeats (rows within :data:`SAME_FIT` of a kept one), `best` first."""
    out = [best]
    for f in fits:
        if all(max(float(np.abs(a - b).max()) if a.size else 0.0 for a, b in zip(f.rows, g.rows)) > SAME_FIT
               for g in out):
            out.append(f)
    return out


def _identification(c, log, ok, best, fits, label_fits, kept, weights, latent) -> Identification:
    warnings = []
    resolved = int(log.resolved[ok].sum())
    labels = []
    top = max(f.loglik for f in fits)
    for prop, _, _, _, swapped in label_fits:
        # the weight the log alone gives the swapped labels: the reported fit, swapped, against itself
        wt = float(1.0 / (1.0 + np.exp(min(-swapped, 700.0))))
        labels.append((prop, wt))
        if wt > LABEL_WEIGHT:
            warnings.append(f"the values of {prop} are not identified by the log: swapping them explains it "
                            f"{'as well' if wt > 0.49 else 'nearly as well'} (weight {wt:.2f}); only the declared "
                            "rows pick the labels" + ("; resolve some sessions" if resolved == 0 else ""))
    ridge = 0.0
    refs = [best] + [g[3] for g in label_fits]
    for f in kept[1:]:
        if any(f is g for g in refs):
            continue
        ridge = max(ridge, min(max(float(np.abs(a - b).max()) if a.size else 0.0 for a, b in zip(f.rows, g.rows))
                               for g in refs))
    if ridge > RIDGE_ROWS:
        warnings.append(f"the log does not identify the rows (a ridge): fits from dispersed starts explain it as "
                        f"well, within {POOL_NATS:g} nats, with rows up to {ridge:.2f} apart; the intervals pool them"
                        + ("; resolve some sessions or log another source" if resolved == 0 else ""))
    if latent and resolved == 0 and not warnings:
        warnings.append("no session is resolved: the rows rest on the structure of the log alone")
    return Identification(status="weak" if warnings else "identified", resolved=resolved, labels=tuple(labels),
                          ridge=ridge, fits=len(kept), warnings=tuple(warnings))


def _skips(skipped) -> str:
    return "; ".join(f"{n} {why}" for why, n in skipped)


def _support_guard(rows, declared):
    """A row with no support at all keeps its declared probabilities (cannot happen with strength > 0)."""
    for r, d in zip(rows, declared):
        empty = r.sum(axis=1) == 0
        r[empty] = d[empty]


def _gibbs(c, R: _Rows, world: _World, log: _Logged, a0, kept, weights, mirrors, alpha_em, walpha_em, failure,
           fix, rng):
    """The posterior by data augmentation, one chain per kept fit, pooled by the weight the log gives each.

    Each sweep draws a state per session (from its posterior under the
    current rows and prior), then the rows and the world prior from their
    Dirichlet posteriors given the completed counts. The intervals are the
    pooled draws' weighted quantiles. Each row's Dirichlet (for posterior
    draws) keeps the mean of `best` and takes the concentration that matches
    the pooled spread, never above the exact-count one.
    """
    O = len(c.obs_names)
    N, S = log.n, c.n_states
    draws = [[] for _ in range(O)]
    wdraws = [[] for _ in world.declared]
    dw = []
    keep = -(-GIBBS_KEEP // len(kept))  # the kept sweeps are shared among the chains
    for fit, weight in zip(kept, weights):
        cur, wcur = [r.copy() for r in fit.rows], [p.copy() for p in fit.wparams]
        for t in range(GIBBS_BURN + keep):
            prior, lik = _assemble(c, R, world, cur, wcur, failure)
            w, ok = _posterior(prior, lik, log)
            u = rng.random(N)
            pick = np.minimum((np.cumsum(w, axis=1) < u[:, None]).sum(axis=1), S - 1)
            onehot = np.zeros((N, S))
            onehot[np.arange(N)[ok], pick[ok]] = 1.0
            counts = R.counts(onehot, log)
            cur = _owned([_dirichlet_rows(a0[o] + counts[o], rng) for o in range(O)], R.owner)
            if not fix:
                wcur = [_dirichlet_rows(a + n, rng) for a, n in zip(world.alpha0, world.counts(onehot))]
            if t >= GIBBS_BURN:
                for o in range(O):
                    draws[o].append(cur[o])
                for i in range(len(wcur)):
                    wdraws[i].append(wcur[i])
                dw.append(weight / keep)
    dw = np.array(dw)
    n = len(dw)
    base = [np.array(d) for d in draws], [np.array(d) for d in wdraws]
    odds = [wt / max(1.0 - wt, 1e-12) for *_, wt in mirrors]
    dw = dw / (1.0 + sum(odds))
    for (prop, perm, smap, _), od in zip(mirrors, odds):
        pi = c.prop_names.index(prop)
        for i in range(n):
            rows_i, w_i = _relabel(R, world, [d[i] for d in base[0]], [d[i] for d in base[1]], smap, pi, perm)
            for o in range(O):
                draws[o].append(rows_i[o])
            for j in range(len(w_i)):
                wdraws[j].append(w_i[j])
        dw = np.concatenate([dw, dw[:n] * od])
    interval = [_weighted_interval(np.array(d), dw) for d in draws]
    winterval = [_weighted_interval(np.array(d), dw) for d in wdraws]
    alpha = [_matched(_means([alpha_em[o]])[0], np.array(draws[o]), dw, alpha_em[o].sum(axis=1)) for o in range(O)]
    walpha = walpha_em if fix else [
        _matched(_means1([a])[0][None, :], np.array(d)[:, None, :], dw, np.array([a.sum()]))[0]
        for a, d in zip(walpha_em, wdraws)]
    return _owned(alpha, R.owner), walpha, _owned(interval, R.owner), winterval


def _weighted_interval(x, wt):
    """float64[..., 2]: the weighted (1 -+ INTERVAL) / 2 quantiles over the first axis of draws `x`."""
    order = np.argsort(x, axis=0, kind="stable")
    xs = np.take_along_axis(x, order, axis=0)
    cw = np.cumsum(wt[order], axis=0)
    cw /= cw[-1]
    lo, hi = (1 - INTERVAL) / 2, (1 + INTERVAL) / 2
    ilo = np.argmax(cw >= lo, axis=0)
    ihi = np.argmax(cw >= hi, axis=0)
    return np.stack([np.take_along_axis(xs, ilo[None], axis=0)[0], np.take_along_axis(xs, ihi[None], axis=0)[0]],
                    axis=-1)


def _matched(mean, x, wt, exact):
    """A Dirichlet per row with mean `mean` whose total variance matches the draws' (never above `exact`)."""
    wt = wt / wt.sum()
    mu = np.tensordot(wt, x, axes=1)
    var = np.tensordot(wt, (x - mu) ** 2, axes=1).sum(axis=-1)
    spread = (mean * (1 - mean)).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        conc = np.where(var > 0, spread / var - 1.0, exact)
    conc = np.clip(conc, 1e-6, exact)
    return mean * conc[:, None]


def _gamma_draws(alpha, rng, size=None):
    """Dirichlet draws (rows normalised) of parameter `alpha` over its last axis; cells with parameter 0 stay 0.

    A very small concentration can make every gamma variate underflow to 0;
    such a draw takes the Dirichlet's limit, a vertex chosen with probability
    proportional to `alpha`.
    """
    a = np.broadcast_to(alpha, size if size is not None else np.shape(alpha))
    g = np.where(a > 0, rng.gamma(np.where(a > 0, a, 1.0)), 0.0)
    tot = g.sum(axis=-1, keepdims=True)
    dead = tot[..., 0] <= 0
    if dead.any():
        for idx in zip(*np.nonzero(dead)):
            p = a[idx] / a[idx].sum()
            g[idx] = 0.0
            g[idx + (int(rng.choice(len(p), p=p)),)] = 1.0
        tot = g.sum(axis=-1, keepdims=True)
    return g / tot


def _dirichlet_rows(alpha, rng):
    """One draw per row of a Dirichlet (cells with parameter 0 stay 0)."""
    return _gamma_draws(alpha, rng)


def _dirichlet_interval(alpha, rng):
    """float64[C, k, 2]: the 5% and 95% quantiles of each cell over seeded Dirichlet draws."""
    C, k = alpha.shape
    out = np.zeros((C, k, 2))
    lo, hi = (1 - INTERVAL) / 2, (1 + INTERVAL) / 2
    for r in range(C):
        p = _gamma_draws(alpha[r], rng, (INTERVAL_DRAWS, k))
        out[r, :, 0], out[r, :, 1] = np.quantile(p, lo, axis=0), np.quantile(p, hi, axis=0)
    return out


def _beta_interval(a, rng):
    if a[0] <= 0:
        return (0.0, 0.0)
    if a[1] <= 0:
        return (1.0, 1.0)
    x = rng.beta(a[0], a[1], size=INTERVAL_DRAWS)
    return (float(np.quantile(x, (1 - INTERVAL) / 2)), float(np.quantile(x, (1 + INTERVAL) / 2)))


# --------------------------------------------------------------------------
# The calibrated domain file


def _num(x: float) -> float:
    return float(x)


def _rounded(x: float) -> float:
    """Counts and intervals are read by people, not checked against the likelihood: 6 decimals."""
    return round(float(x), 6)


class _FlowDumper(yaml.SafeDumper):
    """Block style for the file's structure, flow style for leaf mappings and lists (one row per line)."""


def _represent_dict(dumper, data):
    leaf = all(not isinstance(v, (dict, list)) or (isinstance(v, list) and all(not isinstance(x, (dict, list))
                                                                                  for x in v)) for v in data.values())
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=leaf and len(data) <= 6)


def _represent_list(dumper, data):
    leaf = all(not isinstance(x, (dict, list)) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=leaf)


_FlowDumper.add_representer(dict, _represent_dict)
_FlowDumper.add_representer(list, _represent_list)


def dump_domain(data: dict, header: str = "") -> str:
    """YAML text of domain data, keys in their order, leaf mappings on one line; `header` as comment lines."""
    text = yaml.dump(data, Dumper=_FlowDumper, sort_keys=False, allow_unicode=True, width=120)
    lead = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return lead + text


def calibrated_data(result: CalibrationResult, *, date: str | None = None, log_sessions: int | None = None) -> dict:
    """The calibrated domain file's data: the declared file with posterior-mean likelihoods and a ``calibration`` block.

    Each likelihood keeps its form (one distribution, a table keyed by one
    proposition's values, or ``cases``); failure rates that have data become
    their posterior means. The block's ``id`` hashes the rest of the block.
    """
    c = result.compiled
    data = json.loads(json.dumps(c.domain.raw, default=str))  # a deep copy of plain data
    data.pop("calibration", None)
    obs_block = {}
    for o, spec in enumerate(c.domain.observations):
        name = spec.name
        raw = data["observations"][name]
        outs = list(spec.outcomes)
        rows = result.rows[o]
        raw["likelihood"] = _likelihood_form(raw["likelihood"], spec, rows)
        entry = {"acquired": _num(result.acquired[o]), "rows": []}
        for ci in range(rows.shape[0]):
            entry["rows"].append({
                "counts": {y: _rounded(result.counts[o][ci, k]) for k, y in enumerate(outs)},
                "alpha": {y: _num(result.alpha[o][ci, k]) for k, y in enumerate(outs)},
                "mean": {y: _num(rows[ci, k]) for k, y in enumerate(outs)},
                "interval": {y: [_rounded(result.interval[o][ci, k, 0]), _rounded(result.interval[o][ci, k, 1])]
                             for k, y in enumerate(outs)},
                "declared": {y: _num(result.declared[o][ci, k]) for k, y in enumerate(outs)},
            })
        if result.calls[o] > 0 and (spec.failure_rate > 0 or result.fails[o] > 0):
            fa = result.failure_alpha[o]
            raw["failure_rate"] = _num(fa[0] / fa.sum())
            entry["failure"] = {"unavailable": _num(result.fails[o]), "calls": _num(result.calls[o]),
                                "alpha": [_num(fa[0]), _num(fa[1])],
                                "interval": [_rounded(x) for x in result.failure_interval[o]],
                                "declared": _num(spec.failure_rate)}
        obs_block[name] = entry
    world = result.world
    if result.prior_estimated:
        data["prior"] = _prior_form(data["prior"], world, result.prior)
    prior_block = {"estimated": bool(result.prior_estimated), "parameters": []}
    for (label, values), a, n, iv, d in zip(world.names(), result.prior_alpha, result.prior_counts,
                                             result.prior_interval, world.declared):
        entry = {"of": label, "counts": {v: _rounded(x) for v, x in zip(values, n)}}
        if result.prior_estimated:
            entry["alpha"] = {v: _num(x) for v, x in zip(values, a)}
            entry["mean"] = {v: _num(x / a.sum()) for v, x in zip(values, a)}
            entry["interval"] = {v: [_rounded(iv[k, 0]), _rounded(iv[k, 1])] for k, v in enumerate(values)}
        entry["declared"] = {v: _num(x) for v, x in zip(values, d)}
        prior_block["parameters"].append(entry)
    block = {
        "method": result.method,
        "date": date or _dt.date.today().isoformat(),
        "source": c.domain.content_hash,
        "log": {"sha256": result.digest, "sessions": result.sessions, "used": result.used,
                "resolved": result.resolved, "skipped": sum(n for _, n in result.skipped),
                "inconsistent": result.inconsistent},
        "prior_strength": result.prior_strength,
        "prior": prior_block,
        "identification": result.identification.to_json(),
        "observations": obs_block,
    }
    block = {"id": calibration_id(block), **block}
    out = {}
    for k, v in data.items():  # the block before the checks, after everything it describes
        if k == "checks":
            out["calibration"] = block
        out[k] = v
    out.setdefault("calibration", block)
    return out


def _prior_form(raw_prior: dict, world, params) -> dict:
    """The posterior-mean prior in the declared prior's own form (marginals, or a ``joint`` table)."""
    if world.marginal:
        return {p: {v: _num(x) for v, x in zip(values, m)} for (p, values), m in zip(world.names(), params)}
    c = world.c
    joint = []
    for g, x in zip(world.grid, params[0]):
        if world.declared_w[len(joint)] > 0:
            joint.append({"state": {p: c.prop_values[i][g[i]] for i, p in enumerate(c.prop_names)}, "p": _num(x)})
        else:
            joint.append(None)
    return {"joint": [j for j in joint if j is not None]}


def _likelihood_form(raw_lik: dict, spec, rows) -> dict:
    """The posterior-mean rows in the likelihood's own form."""
    outs = list(spec.outcomes)

    def dist(r):
        return {y: _num(rows[r, k]) for k, y in enumerate(outs)}

    cases = spec.likelihood.cases
    if "cases" in raw_lik:
        return {"cases": [{**({"when": dict(case.when)} if case.when else {}), "p": dist(i)}
                          for i, case in enumerate(cases)]}
    if len(cases) == 1 and not cases[0].when:
        return dist(0)
    return {case.when[0][1]: dist(i) for i, case in enumerate(cases)}


# --------------------------------------------------------------------------
# Posterior draws (conservative planning)


def posterior_draws(compiled, n: int, seed: int) -> tuple:
    """``(prior float64[n, S], lik float64[n, O, Y, S])``: `n` seeded draws of the domain's arrays.

    Each calibrated row is drawn from its Dirichlet posterior and each
    calibrated failure rate from its Beta posterior (a lineage group's rows
    once, shared by its members); observations without calibration keep their
    declared rows. Raises :class:`CalibrationError` for a domain without a
    ``calibration`` block.

    >>> import planner
    >>> d = planner.load_domain("payment_release")
    >>> posterior_draws(planner.compile_domain(d), 4, 0)
    Traceback (most recent call last):
    ...
    planner.calibration.calibrate.CalibrationError: payment_release has no calibration block: calibrate it first (posterior draws need the posteriors)
    """
    cal = compiled.domain.calibration
    if cal is None:
        raise CalibrationError(f"{compiled.domain.name} has no calibration block: calibrate it first "
                               "(posterior draws need the posteriors)")
    R = _Rows(compiled)
    O = len(compiled.obs_names)
    rng = np.random.default_rng(seed)
    base_fail = np.array([o.failure_rate for o in compiled.domain.observations])
    priors, liks = [], []
    alphas = []
    for o, spec in enumerate(compiled.domain.observations):
        entry = cal.of(spec.name)
        alphas.append(None if entry is None else
                      (np.array([[a for _, a in row.alpha] for row in entry.rows]),
                       None if entry.failure is None else np.array(entry.failure.alpha, dtype=float)))
    for _ in range(n):
        rows, fail = [], base_fail.copy()
        for o in range(O):
            if alphas[o] is None or R.owner[o] != o:
                rows.append(R.declared[o])
            else:
                rows.append(_dirichlet_rows(alphas[o][0], rng))
            if alphas[o] is not None and alphas[o][1] is not None and alphas[o][1].min() > 0:
                fail[o] = rng.beta(*alphas[o][1])
        rows = _owned(rows, R.owner)
        prior, lik = assemble(compiled, rows, fail)
        priors.append(prior)
        liks.append(lik)
    return np.array(priors), np.array(liks)
