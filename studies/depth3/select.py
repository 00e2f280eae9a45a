"""The selection map and its out-of-sample regret, from the case rows alone.

Definitions (``docs/depth-study.md`` states them for readers):

- **net loss** of policy p on case i at price ``lam`` (loss per ms):
  ``J_i(p) + lam * NODE_MS * nodes_i(p)``, where ``J`` is the exact expected
  total loss and ``nodes`` the counted search nodes per episode; at the
  **anchored** price ``lam`` is the case's own ``latency_weight``;
- **net gain** over one-step: ``net_i(one-step) - net_i(p)``; for a capped
  row the **pessimistic** gain uses the upper loss bound (``loss_up``) and its
  planning nodes are imputed as the largest count the policy has on any
  uncapped case (flagged);
- a **cell** is a region (budget level x structural class, or ``all``) at one
  price; a policy is a **candidate** in a cell only when it has a loss or
  bounds on every case of the cell (so every candidate is averaged over the
  same case set); the **best** is the candidate with the largest mean
  pessimistic gain (ties: registry order), the **runner-up** the next;
- **verdict A**: the best's BCa interval lies above 0 and its
  Benjamini-Hochberg adjusted p (the sign-flip permutation test of the mean
  gain, two-sided, :func:`studies.stats.sign_flip_test`, over every cell
  whose best is not one-step and that has enough cases) is below :data:`~studies.depth3.design.ALPHA`;
  **B** (descriptive, not a test): the share of the cell's cases the best
  gains on.
"""

from __future__ import annotations

import math

import numpy as np

from studies.depth3.design import (ALPHA, ANCHORED, BASELINE, BOOT_SEED, BUDGET_LEVELS, EQ, LEVEL, N_BOOT, MIN_N,
                                   NODE_MS, PRICES, STRUCTURES)
from studies.stats import bca_interval, benjamini_hochberg, sign_flip_test, studentized_interval

__all__ = ["min_cases_for_verdict", "Cases", "load_rows", "selection_map", "out_of_sample", "policy_summary", "price_label",
           "reweighted", "coverage_table",
           "interval_rule", "interval", "method_level", "INTERVAL_METHODS"]


def _f(v) -> float:
    if v is None or v == "" or (isinstance(v, str) and v.lower() == "nan"):
        return math.nan
    return float(v)


def _b(v) -> bool:
    return v is True or (isinstance(v, str) and v.lower() == "true")


def price_label(price) -> str:
    """``anchored`` or the price as ``%g``.

    >>> price_label("anchored"), price_label(1e-4)
    ('anchored', '0.0001')
    """
    return price if isinstance(price, str) else f"{price:g}"


class Cases:
    """The rows as arrays: cases x policies (loss bounds, nodes, flags), with each case's region and price.

    Parameters
    ----------
    rows : list of dict
        ``cases.csv`` rows (strings or typed values).
    policies : sequence of str
        The policies, in tie-breaking order (the registry's).

    Examples
    --------
    >>> c = Cases(_example_rows(), ["one-step", "lookahead:2"])
    >>> c.gain(0.0)[0].tolist(), str(c.region[0])
    ([0.0, 1.0], 'tight / gated')
    """

    def __init__(self, rows, policies):
        self.policies = list(policies)
        cases = list(dict.fromkeys(r["case"] for r in rows))
        self.cases = cases
        ci = {c: k for k, c in enumerate(cases)}
        pi = {p: k for k, p in enumerate(self.policies)}
        shape = (len(cases), len(self.policies))
        self.lo = np.full(shape, np.nan)
        self.up = np.full(shape, np.nan)
        self.nodes = np.full(shape, np.nan)
        self.capped = np.zeros(shape, bool)
        info = {}
        for r in rows:
            if r["policy"] not in pi:
                continue
            i, j = ci[r["case"]], pi[r["policy"]]
            self.lo[i, j], self.up[i, j] = _f(r["loss_lo"]), _f(r["loss_up"])
            self.nodes[i, j] = _f(r["search_nodes_per_episode"])
            self.capped[i, j] = _b(r["capped"])
            info[r["case"]] = r
        self.split = np.array([info[c]["split"] for c in cases])
        self.region = np.array([f"{info[c]['budget_level']} / {info[c]['structure']}" for c in cases])
        self.structure = np.array([info[c]["structure"] for c in cases])
        self.weight = np.array([_f(info[c]["latency_weight"]) for c in cases])
        self.imputed = self.capped & np.isnan(self.nodes)
        # a capped row's nodes: the most the policy counts on any uncapped case (flagged as imputed)
        for j in range(len(self.policies)):
            known = self.nodes[~self.capped[:, j], j]
            known = known[~np.isnan(known)]
            fill = float(known.max()) if known.size else 0.0
            self.nodes[self.imputed[:, j], j] = fill
        self.ok = ~np.isnan(self.up)
        self.base = self.policies.index(BASELINE)
        self.node_ms = np.full(len(self.policies), NODE_MS)

    def with_node_ms(self, per_policy: dict) -> "Cases":
        """A copy whose planning time prices each policy's counted nodes at its own ms per node (`per_policy`;
        the others keep :data:`NODE_MS`): the sensitivity of the map to the node-to-time constant.

        >>> c = Cases(_example_rows(), ["one-step", "lookahead:2"]).with_node_ms({"lookahead:2": 1.0})
        >>> c.node_ms.tolist() == [NODE_MS, 1.0]
        True
        """
        import copy

        out = copy.copy(self)
        out.node_ms = np.array([float(per_policy.get(p, NODE_MS)) for p in self.policies])
        return out

    def lam(self, price) -> np.ndarray:
        """The price of each case, loss per ms (the anchored price is the case's own latency weight)."""
        return self.weight.copy() if price == ANCHORED else np.full(len(self.cases), float(price))

    def net(self, price, pessimistic: bool = True) -> np.ndarray:
        """Net loss, cases x policies (upper bounds where capped, when `pessimistic`)."""
        loss = self.up if pessimistic else self.lo
        return loss + self.lam(price)[:, None] * self.node_ms[None, :] * self.nodes

    def gain(self, price, pessimistic: bool = True) -> np.ndarray:
        """Net gain over one-step, cases x policies: one-step's optimistic minus p's pessimistic net (the
        pessimistic end, the default), or one-step's pessimistic minus p's optimistic (the optimistic end).
        The two are equal on every case where neither row is capped."""
        return self.net(price, not pessimistic)[:, [self.base]] - self.net(price, pessimistic)


#: The interval methods the coverage simulation measures, in the order the rule (:func:`interval_rule`) prefers:
#: BCa and the studentised bootstrap-t at the :data:`LEVEL` they claim, then the studentised interval *calibrated*:
#: computed at a higher nominal level (``"studentized@0.95"``: its 95% interval) and used as a :data:`LEVEL` interval
#: only where its measured coverage of the :data:`LEVEL` target holds (the bootstrap calibration of the nominal
#: level, Loh 1987; Hall 1986). Wider, never narrower, than the plain studentised interval of the same sample.
INTERVAL_METHODS = ("bca", "studentized", "studentized@0.95", "studentized@0.99")


def method_level(method: str) -> tuple:
    """``(estimator, nominal level)`` of an interval method: ``"studentized@0.95"`` -> ``("studentized", 0.95)``.

    A method without ``@`` is computed at :data:`LEVEL`.

    >>> method_level("studentized@0.99"), method_level("bca")
    (('studentized', 0.99), ('bca', 0.9))
    """
    base, _, level = method.partition("@")
    if base not in ("bca", "studentized", "percentile"):
        raise ValueError(f"unknown interval method {method!r}")
    return base, (float(level) if level else LEVEL)


def interval(x, method: str = "bca") -> tuple:
    """The :data:`LEVEL` interval for the mean of `x` by `method` (one of :data:`INTERVAL_METHODS`), seeded.

    A calibrated method (``"studentized@0.99"``) gives the studentised interval at its nominal level.

    >>> lo, hi = interval([0.0, 1.0, 3.0, 2.0], "studentized")
    >>> bool(lo < 1.5 < hi)
    True
    >>> lo2, hi2 = interval([0.0, 1.0, 3.0, 2.0], "studentized@0.99")
    >>> bool(lo2 <= lo and hi <= hi2)
    True
    """
    base, level = method_level(method)
    f = {"bca": bca_interval, "studentized": studentized_interval}[base]
    return f(x, level=level, n_boot=N_BOOT, seed=BOOT_SEED)


def interval_rule(cov: list) -> dict:
    """Which interval each policy's tables print, by sample size: policy -> {n: ``(method, holds)``}.

    A method *holds* for a policy at a measured n when its coverage there
    (:func:`coverage_table`, pessimistic population: what the tables use)
    is at least ``LEVEL - 2 se`` (``se`` its Monte Carlo standard error).
    At each n the first method of :data:`INTERVAL_METHODS` that holds is
    printed; where none holds the first is printed with ``holds`` False and
    the tables say so next to the interval. :func:`_method` reads an
    interval of n cases at the largest measured n not above it (the
    smallest measured, below them all): coverage improves with n, so that
    is the conservative reading.

    >>> cov = [{"policy": "p", "n": 10, "method": "bca", "coverage": 0.80, "se": 0.02, "population": "pessimistic"},
    ...        {"policy": "p", "n": 10, "method": "studentized", "coverage": 0.89, "se": 0.02,
    ...         "population": "pessimistic"}]
    >>> interval_rule(cov)
    {'p': {10: ('studentized', True)}}
    """
    held: dict = {}
    for r in cov:
        if r.get("population", "pessimistic") != "pessimistic" or r["method"] not in INTERVAL_METHODS:
            continue
        held[(r["policy"], int(r["n"]), r["method"])] = r["coverage"] >= LEVEL - 2.0 * r["se"]
    out: dict = {}
    for p, n, _ in held:
        good = [m for m in INTERVAL_METHODS if held.get((p, n, m))]
        out.setdefault(p, {})[n] = (good[0], True) if good else (INTERVAL_METHODS[0], False)
    return out


def _method(rule, policy, n) -> tuple:
    """``(method, holds)`` for an interval of `policy`'s gains over `n` cases (`holds` None: not measured)."""
    by_n = (rule or {}).get(policy)
    if not by_n:
        return (INTERVAL_METHODS[0], None)
    ns = sorted(by_n)
    below = [k for k in ns if k <= n]
    return by_n[below[-1] if below else ns[0]]


def own_coverage_method(x, reps: int = 200, n_boot: int = 500) -> tuple:
    """``(method, holds)`` for an interval of the mean of `x`, by coverage measured on `x` itself.

    For a mean that is no single policy's gains (the out-of-sample regret
    and gain average over the policies a rule chose), the population of the
    simulation is `x`'s own values and the sample size its own: the first
    method of :data:`INTERVAL_METHODS` whose coverage is at least
    ``LEVEL - 2 se`` is used, else the first, with `holds` False (None: too
    few values to measure).

    >>> own_coverage_method([0.0, 0.1, 0.2, 0.15, 0.05, 0.12, 0.08, 0.3, 0.22, 0.18] * 3)
    ('bca', True)
    """
    from studies.stats import interval_coverage

    x = np.asarray(x, dtype=float)
    if x.size < 3 or np.isnan(x).any():
        return INTERVAL_METHODS[0], None
    for method in INTERVAL_METHODS:
        base, level = method_level(method)
        r = interval_coverage(x, x.size, method=base, level=level, reps=reps, n_boot=n_boot, seed=BOOT_SEED)
        if r["coverage"] >= LEVEL - 2.0 * r["se"]:
            return method, True
    return INTERVAL_METHODS[0], False


def min_cases_for_verdict(m: int, alpha: float = ALPHA, n_perm: int = 20000) -> int:
    """The fewest cases a cell needs before its BH-adjusted p can fall below `alpha`, with `m` cells tested.

    The sign-flip test's smallest p-value on n cases is ``2 / 2**n`` while it
    enumerates (``2**n <= n_perm``), else ``1 / (1 + n_perm)``; a lone
    discovery among `m` tests has BH-adjusted p ``m`` times its own. A cell
    with fewer cases cannot reach verdict A whatever its gains (the issue's
    "cannot reach significance" check, for the map).

    >>> min_cases_for_verdict(1), min_cases_for_verdict(72)
    (5, 11)
    """
    for n in range(1, 64):
        floor = 2.0 / 2 ** n if 2 ** n <= n_perm else 1.0 / (1 + n_perm)
        if m * floor < alpha:
            return n
    raise ValueError(f"no sample size reaches alpha = {alpha} with m = {m} tests")


def _example_rows() -> list:
    """Six selection and two test cases where lookahead:2 gains 1 over one-step (the doctests' data)."""
    rows = []
    for k in range(8):
        for p, loss in (("one-step", 3.0), ("lookahead:2", 2.0)):
            rows.append({"case": f"c{k}", "split": "select" if k < 6 else "test", "budget_level": "tight",
                         "structure": "gated", "latency_weight": 1e-3, "policy": p, "loss_lo": loss,
                         "loss_up": loss, "search_nodes_per_episode": 10 * (1 + k), "capped": False})
    return rows


def load_rows(path) -> list:
    """``cases.csv`` as a list of dicts (strings)."""
    from studies.tables import read_csv

    return read_csv(path)


def _regions(cases: Cases, mask) -> list:
    present = set(cases.region[mask])
    ordered = [f"{b} / {s}" for b in BUDGET_LEVELS for s in STRUCTURES]
    return ["all"] + [r for r in ordered if r in present]


def _best_two(g: np.ndarray, candidates, base: int) -> tuple:
    """The best and the runner-up by mean gain, one-step (`base`, gain 0) ranked among them: another policy ranks
    above one-step only when it beats it by more than EQ, and ties between the others go by registry order.

    >>> g = np.array([[0.0, 0.5, 0.0, -1.0], [0.0, 0.3, 0.0, -1.0]])
    >>> _best_two(g, [0, 1, 2, 3], 0), _best_two(g, [0, 2, 3], 0)
    ((1, 0), (0, 2))
    """
    ranked = sorted(((float(g[:, j].mean()) if j != base else EQ, j == base, -j, j) for j in candidates),
                    reverse=True)
    return ranked[0][3], (ranked[1][3] if len(ranked) > 1 else None)


def selection_map(cases: Cases, split: str = "select", prices=None, rule=None) -> list:
    """The map on one split: a row per cell (region x price), with the best, its interval and the runner-up.

    Returns rows with ``region``, ``price``, ``n``, ``best``, ``mean_gain``,
    ``ci_lo``, ``ci_hi``, ``p``, ``q`` (BH-adjusted over the map's cells),
    ``share_gaining``, ``capped`` (cases whose best's row is capped),
    ``mean_gain_opt`` (the optimistic end of the best's mean gain: equal to
    ``mean_gain`` where nothing is capped), ``ci_method`` and ``ci_holds``
    (the interval printed and whether its coverage held, from `rule`:
    :func:`interval_rule`; no interval, NaN, where the best is one-step or
    the cell has fewer than :data:`MIN_N` cases), ``runner_up``,
    ``runner_up_gain`` and ``runner_up_gain_opt`` (its pessimistic and
    optimistic ends), ``runner_up_capped``, ``verdict_a`` and ``candidates``.

    >>> c = Cases(_example_rows(), ["one-step", "lookahead:2"])
    >>> r = selection_map(c, prices=[0.0])[0]
    >>> r["region"], r["best"], r["mean_gain"], r["verdict_a"], r["runner_up"]
    ('all', 'lookahead:2', 1.0, True, 'one-step')
    """
    prices = [ANCHORED, *PRICES] if prices is None else list(prices)
    mask = cases.split == split
    out = []
    gains = {price: (cases.gain(price), cases.gain(price, False)) for price in prices}  # (pessimistic, optimistic)
    for region in _regions(cases, mask):
        m = mask & ((cases.region == region) if region != "all" else True)
        if not m.any():
            continue
        cand = [j for j in range(len(cases.policies)) if cases.ok[m, j].all()]
        n = int(m.sum())
        for price in prices:
            g, g_opt = gains[price][0][m], gains[price][1][m]
            best, second = _best_two(g, cand, cases.base)
            gb = g[:, best]
            method, holds = _method(rule, cases.policies[best], n)
            if best == cases.base or n < MIN_N:  # one-step's gain over itself is 0 by definition: no interval
                lo = hi = p = math.nan
            else:
                lo, hi = interval(gb, method)
                p = sign_flip_test(gb, seed=BOOT_SEED)
            out.append({"region": region, "price": price_label(price), "n": n, "best": cases.policies[best],
                        "mean_gain": float(gb.mean()),
                        "mean_gain_opt": float(g_opt[:, best].mean()),
                        "ci_lo": lo, "ci_hi": hi, "ci_method": method, "ci_holds": holds, "p": p,
                        "share_gaining": float((gb > EQ).mean()), "capped": int(cases.capped[m, best].sum()),
                        "runner_up": cases.policies[second] if second is not None else "",
                        "runner_up_gain": float(g[:, second].mean()) if second is not None else math.nan,
                        "runner_up_gain_opt": float(g_opt[:, second].mean()) if second is not None else math.nan,
                        "runner_up_capped": int(cases.capped[m, second].sum()) if second is not None else 0,
                        "candidates": len(cand)})
    q = benjamini_hochberg([r["p"] for r in out])
    for r, qv in zip(out, q):
        r["q"] = float(qv)
        r["verdict_a"] = bool(r["ci_lo"] > 0 and qv < ALPHA) if not math.isnan(qv) else False
    return out


#: The selection rules applied out of sample: ``cell`` takes the case's region's best; ``fallback`` takes it
#: only when the cell had at least :data:`MIN_N` cases on the selection seeds, else the pooled cell's best;
#: ``pooled`` always the pooled cell's best. Each falls back to one-step where its choice has no loss.
RULES = ("cell", "fallback", "pooled")


def _choice(smap: list, cases: Cases, i: int, price, rule: str = "cell") -> int:
    """The policy a selection rule picks for case i at a price (see :data:`RULES`)."""
    label = price_label(price)
    by = {(r["region"], r["price"]): r for r in smap}
    cell = by.get((cases.region[i], label))
    regions = {"cell": [cases.region[i], "all"], "pooled": ["all"],
               "fallback": [cases.region[i], "all"] if cell is not None and cell["n"] >= MIN_N else ["all"]}[rule]
    for region in regions:
        r = by.get((region, label))
        if r is not None:
            j = cases.policies.index(r["best"])
            if cases.ok[i, j]:
                return j
    return cases.base


def out_of_sample(cases: Cases, smap: list, split: str, prices=None, rules=RULES) -> list:
    """The map (chosen on the selection split) applied to `split`'s cases: regret and gain, with BCa intervals.

    Per case, **regret** is the chosen policy's net loss minus the least net
    loss of any policy on that case (the per-case oracle); **gain** is
    one-step's net loss minus the chosen policy's. Where rows are capped
    their losses are intervals, and so are these: ``regret`` is the
    pessimistic end, an upper bound (the chosen row's upper bound minus the
    least lower bound of any policy), ``regret_opt`` the optimistic end, a
    lower bound (the chosen row's lower bound minus the least upper bound,
    at least 0); likewise for ``gain``, ``gain_opt`` and the fixed choices.
    Rows per price and rule (:data:`RULES`): ``n``, ``regret``
    [``regret_lo``, ``regret_hi``], ``gain`` [``gain_lo``, ``gain_hi``],
    ``bounded_regret`` and ``onestep_regret`` (always ``bounded``, always
    one-step, for scale), ``capped`` (cases whose chosen row is capped) and
    the optimistic ends ``regret_opt`` and ``gain_opt`` (the chosen row's
    lower bound; equal to ``regret`` and ``gain`` where nothing is capped).

    >>> c = Cases(_example_rows(), ["one-step", "lookahead:2"])
    >>> r = out_of_sample(c, selection_map(c, prices=[0.0]), "test", prices=[0.0], rules=("pooled",))[0]
    >>> r["n"], r["regret"], r["gain"], r["policies_used"]
    (2, 0.0, 1.0, 'lookahead:2')
    """
    prices = [ANCHORED, *PRICES] if prices is None else list(prices)
    idx = np.flatnonzero(cases.split == split)
    out = []
    if idx.size == 0:
        return out
    jb = cases.policies.index("bounded") if "bounded" in cases.policies else cases.base
    for price in prices:
        net = cases.net(price, True)
        net_lo = cases.net(price, False)
        oracle_lo = np.nanmin(net_lo[idx], axis=1)  # the oracle's true net loss lies between these two
        oracle_up = np.nanmin(net[idx], axis=1)
        bnet = np.where(cases.ok[idx, jb], net[idx, jb], net[idx, cases.base])
        for rule in rules:
            ch = np.array([_choice(smap, cases, i, price, rule) for i in idx])
            chosen = net[idx, ch]
            regret = chosen - oracle_lo
            gain = net_lo[idx, cases.base] - chosen
            # the optimistic ends: the chosen row's lower bound against the oracle's and one-step's upper ones
            regret_opt = np.maximum(net_lo[idx, ch] - oracle_up, 0.0)
            gain_opt = net[idx, cases.base] - net_lo[idx, ch]
            row = {"split": split, "rule": rule, "price": price_label(price), "n": int(idx.size),
                   "regret": float(regret.mean()), "gain": float(gain.mean()),
                   "regret_opt": float(regret_opt.mean()), "gain_opt": float(gain_opt.mean()),
                   "bounded_regret": float((bnet - oracle_lo).mean()),
                   "onestep_regret": float((net[idx, cases.base] - oracle_lo).mean()),
                   "capped": int(cases.capped[idx, ch].sum()),
                   "policies_used": " ".join(sorted({cases.policies[j] for j in ch}))}
            for name, v in (("regret", regret), ("gain", gain)):
                method, holds = own_coverage_method(v)
                lo, hi = interval(v, method) if v.size >= 2 else (math.nan, math.nan)
                row[f"{name}_lo"], row[f"{name}_hi"] = lo, hi
                row[f"{name}_method"], row[f"{name}_holds"] = method, holds
            out.append(row)
    return out


def policy_summary(cases: Cases, price=ANCHORED, splits=("select", "test"), rule=None) -> list:
    """Every policy pooled over the generated cases at one price: mean gain (pessimistic and optimistic ends),
    its interval (the method of `rule`, :func:`interval_rule`), share gaining, capped."""
    m = np.isin(cases.split, list(splits))
    g = cases.gain(price)[m]
    g_opt = cases.gain(price, False)[m]
    out = []
    for j, p in enumerate(cases.policies):
        ok = cases.ok[m, j]
        row = {"policy": p, "n": int(m.sum()), "usable": int(ok.sum()), "capped": int(cases.capped[m, j].sum()),
               "failed": int((~ok).sum())}
        row["ci_method"], row["ci_holds"] = _method(rule, p, int(ok.sum()))
        row["mean_gain_opt"] = float(g_opt[ok, j].mean()) if ok.any() else math.nan
        if ok.all() and j != cases.base and ok.size >= 2:
            row["mean_gain"] = float(g[:, j].mean())
            row["ci_lo"], row["ci_hi"] = interval(g[:, j], row["ci_method"])
            row["share_gaining"] = float((g[:, j] > EQ).mean())
        else:
            row["mean_gain"] = float(g[ok, j].mean()) if ok.any() else math.nan
            row["ci_lo"] = row["ci_hi"] = math.nan
            row["share_gaining"] = float((g[ok, j] > EQ).mean()) if ok.any() else math.nan
        out.append(row)
    return out


def coverage_table(cases: Cases, policies, ns=(10, 30, None), price=ANCHORED, reps=200, n_boot=500,
                   methods=(*INTERVAL_METHODS, "percentile"), populations=("pessimistic", "optimistic")) -> list:
    """Coverage by simulation on the study's own gains: each policy's pooled gains (every generated case), per
    population (the pessimistic ends of capped rows' gains, and the optimistic ends), sample size (None: the
    pooled n itself) and method (:func:`studies.stats.interval_coverage`). A policy with constant gains, or
    without a loss on every case, is skipped."""
    from studies.stats import interval_coverage

    m = np.isin(cases.split, ["select", "test"])
    out = []
    for population in populations:
        g = cases.gain(price, population == "pessimistic")[m]
        for p in policies:
            j = cases.policies.index(p)
            if not cases.ok[m, j].all() or np.all(g[:, j] == g[0, j]):
                continue
            for n in ns:
                n = int(m.sum()) if n is None else n
                for method in methods:
                    base, level = method_level(method)
                    r = interval_coverage(g[:, j], n, method=base, level=level, reps=reps, n_boot=n_boot,
                                          seed=BOOT_SEED)
                    out.append({"policy": p, "population": population, "n": n, "method": method,
                                "coverage": r["coverage"], "se": r["se"], "reps": reps, "pooled_n": int(m.sum()),
                                "capped": int(cases.capped[m, j].sum())})
    return out


def mix_weights(structures, gated_share: float, chain_share: float) -> tuple:
    """Importance weights that give a case sample the target (gated, chain) shares; ``(weights, missing)``.

    A case of class (gated g, chain h) gets ``target(g, h) / count(g, h)``
    with ``target(g, h) = (gated_share if g else 1 - gated_share) x
    (chain_share if h else 1 - chain_share)`` (the two independent in the
    target), normalised to sum 1; `missing` is target mass in classes the
    sample has no case of (their share cannot be represented).

    >>> w, missing = mix_weights(["gated", "gated", "plain", "chain"], 0.5, 0.5)
    >>> [round(float(x), 3) for x in w], missing
    ([0.167, 0.167, 0.333, 0.333], 0.25)
    """
    st = np.asarray(structures)
    gated = np.isin(st, ["gated+chain", "gated"])
    chain = np.isin(st, ["gated+chain", "chain"])
    w = np.zeros(st.size)
    missing = 0.0
    for gv in (True, False):
        for cv in (True, False):
            cls = (gated == gv) & (chain == cv)
            target = (gated_share if gv else 1 - gated_share) * (chain_share if cv else 1 - chain_share)
            if cls.any():
                w[cls] = target / cls.sum()
            else:
                missing += target
    total = w.sum()
    return (w / total if total > 0 else w), float(missing)


def reweighted(cases: Cases, mixes, price=ANCHORED, splits=("select",)) -> list:
    """The pooled best policy when the cases of `splits` are reweighted to other (gated, chain) shares.

    The weights are :func:`mix_weights`'. The first row is the observed mix
    (every case weight 1/n): its best is the map's pooled winner at this
    price when `splits` is the selection split. Each row: ``gated_share``,
    ``chain_share``, ``best`` and ``mean_gain`` (the weighted mean gain over
    one-step), the runner-up, ``map_best`` (the observed mix's winner) and
    ``map_best_gain`` (its weighted gain under this mix: how the map's pooled
    choice fares when the mix moves), ``missing_mass`` and ``ess`` (the
    weights' effective sample size, ``1 / sum w^2``).
    """
    m = np.isin(cases.split, list(splits))
    st = cases.structure[m]
    gated = np.isin(st, ["gated+chain", "gated"])
    chain = np.isin(st, ["gated+chain", "chain"])
    g = cases.gain(price)[m]
    cand = [j for j in range(len(cases.policies)) if cases.ok[m, j].all()]
    if not st.size or not cand:
        return []
    observed = (float(gated.mean()), float(chain.mean()))
    targets = [("observed", np.full(st.size, 1.0 / st.size), 0.0, observed)]
    for tg, tc in mixes:
        w, missing = mix_weights(st, tg, tc)
        if w.sum() > 0:
            targets.append(("target", w, missing, (tg, tc)))
    out = []
    map_best = None
    for kind, w, missing, (tg, tc) in targets:
        means = [(float(w @ g[:, j]), -j, j) for j in cand]
        means.sort(reverse=True)
        best = means[0] if means[0][0] > EQ or cases.base not in cand else (0.0, -cases.base, cases.base)
        rest = [x for x in means if x[2] != best[2]]
        second = rest[0] if rest else (math.nan, 0, None)
        if map_best is None:
            map_best = best[2]
        out.append({"mix": kind, "gated_share": tg, "chain_share": tc, "best": cases.policies[best[2]],
                    "mean_gain": best[0], "runner_up": cases.policies[second[2]] if second[2] is not None else "",
                    "runner_up_gain": second[0], "map_best": cases.policies[map_best],
                    "map_best_gain": float(w @ g[:, map_best]), "missing_mass": missing,
                    "ess": float(1.0 / (w ** 2).sum())})
    return out


#: Splits of the peer table and of the outside summary: the generated cases (both seed sets), shipped, outside.
PEER_GROUPS = (("generated", ("select", "test")), ("shipped", ("shipped",)), ("outside", ("outside",)))


def peer_summary(rows, cases: Cases, peers=("pouct:nodes", "pouct:time"), groups=PEER_GROUPS,
                 reference: str = "bounded") -> list:
    """The POUCT peer against ``bounded`` and one-step, paired by case, on expected loss (no planning price).

    The peer's figure on a case is a Monte Carlo mean over its episodes
    (``mc_se`` its standard error); ``bounded``'s and one-step's are exact
    (a capped ``bounded`` row counts with its *lower* bound, so the peer is
    never flattered). Per peer and group of splits: ``n`` (cases where both
    have a figure), ``diff_bounded`` = mean(peer - bounded) with its BCa
    interval, ``diff_onestep`` likewise, ``better``/``worse`` (cases where the
    peer is below/above ``bounded`` by more than two standard errors),
    ``sims`` (mean simulations per decision), ``sims_capped``, ``failed`` and
    ``illegal`` (decisions outside the legal set: must be 0).

    >>> rows = [dict(r, num_sims=3, sims_capped="False", mc_se=0.1, failed="False", illegal=0,
    ...              policy="pouct:time", loss_lo=r["loss_lo"] + 0.5, loss_up=r["loss_up"] + 0.5)
    ...         for r in _example_rows() if r["policy"] == "lookahead:2"]
    >>> c = Cases(_example_rows(), ["one-step", "lookahead:2"])
    >>> (r,) = peer_summary(rows, c, peers=("pouct:time",), reference="lookahead:2")
    >>> r["n"], r["diff_bounded"], r["diff_onestep"], r["worse"]
    (8, 0.5, -0.5, 8)

    `reference` stands in for ``bounded`` (the doctest's data has none).
    """
    by = {}
    for r in rows:
        if r["policy"] in peers:
            by[(r["case"], r["policy"])] = r
    ci = {c: k for k, c in enumerate(cases.cases)}
    jb = cases.policies.index(reference) if reference in cases.policies else None
    out = []
    for p in peers:
        for label, splits in groups:
            idx = [i for i in np.flatnonzero(np.isin(cases.split, list(splits))) if (cases.cases[i], p) in by]
            if not idx:
                continue
            pr = [by[(cases.cases[i], p)] for i in idx]
            ok = [not _b(r["failed"]) and jb is not None and cases.ok[i, jb] and not math.isnan(_f(r["loss_up"]))
                  for i, r in zip(idx, pr)]
            use = [i for i, k in zip(idx, ok) if k]
            prow = [r for r, k in zip(pr, ok) if k]
            row = {"peer": p, "group": label, "n": len(use), "failed": sum(_b(r["failed"]) for r in pr),
                   "illegal": int(sum(_f(r.get("illegal", 0)) or 0 for r in pr if not _b(r["failed"]))),
                   "sims_capped": sum(_b(r["sims_capped"]) for r in pr)}
            if use:
                peer = np.array([_f(r["loss_up"]) for r in prow])
                se = np.array([_f(r["mc_se"]) for r in prow])
                bnd = cases.lo[use, jb]
                one = cases.lo[use, cases.base]
                d_b, d_o = peer - bnd, peer - one
                row.update(diff_bounded=float(d_b.mean()), diff_onestep=float(d_o.mean()),
                           better=int((d_b < -2 * np.nan_to_num(se)).sum()),
                           worse=int((d_b > 2 * np.nan_to_num(se)).sum()),
                           sims=float(np.mean([_f(r["num_sims"]) for r in prow])), mean_se=float(np.nanmean(se)))
                for name, v in (("diff_bounded", d_b), ("diff_onestep", d_o)):
                    lo, hi = (bca_interval(v, level=LEVEL, n_boot=N_BOOT, seed=BOOT_SEED) if v.size >= MIN_N
                              else (math.nan, math.nan))
                    row[f"{name}_lo"], row[f"{name}_hi"] = lo, hi
            else:
                row.update({k: math.nan for k in ("diff_bounded", "diff_onestep", "diff_bounded_lo", "diff_bounded_hi",
                                                   "diff_onestep_lo", "diff_onestep_hi", "sims", "mean_se")},
                           better=0, worse=0)
            out.append(row)
    return out
