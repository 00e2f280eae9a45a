"""Conservative planning (``conservative:BASE``): act only when the lower quantile of the value over
posterior draws beats the cost.

The values the tests hold the policy to are recomputed here from
:func:`planner.calibration.calibrate.posterior_draws` with the pure-Python search
(:mod:`lookahead.reference`), never with the policy's own helpers.
"""

from __future__ import annotations

import copy
import datetime
import json

import numpy as np
import pytest
import yaml
from hypothesis import event, given, settings
from hypothesis import strategies as st

import planner
from conftest import calibrated, simulated_log
from lookahead import reference
from planner.calibration.calibrate import posterior_draws
from planner.cli import main
from planner.errors import PolicyError
from planner.policies import parse_policy
from planner.policies.bounded import Bounded
from planner.policies.conservative import (
    BOUNDED_DEPTH_CAP,
    DEFAULT_DRAWS,
    DEFAULT_QUANTILE,
    Conservative,
    draw_beliefs,
    draws_for,
)
from planner.policies.lookahead import Lookahead
from planner.policies.onestep import OneStepEVSI
from planner.session.receipt import validate_receipt
from planner.session.redact import redact_receipt
from planner.session.replay import replay
from planner.session.simulate import simulate
from strategies import distribution, domain_dicts

# --------------------------------------------------------------------------
# the independent recomputation


def kept_draws(node, draws, seed):
    """Yield ``(belief float64[S], lik float64[O, Y, S])`` per draw the node's history keeps.

    The draw's belief is its prior times the likelihoods of the pairs seen, normalised; a draw under
    which the pairs have probability 0 is left out.
    """
    prior, lik = posterior_draws(node.compiled, draws, seed)
    taken = [(o, int(y)) for o, y in enumerate(node.outcome_of) if y >= 0]
    for d in range(draws):
        b = prior[d].copy()
        for o, y in taken:
            b = b * lik[d, o, y]
        if b.sum() > 0:
            yield b / b.sum(), lik[d]


def reference_nets(node, depth, draws, seed):
    """``float64[k, O]``: net value of each eligible observation under each kept draw, by the pure-Python search.

    The draw's belief is its prior times the likelihoods of the pairs seen, normalised; a draw under
    which the pairs have probability 0 is left out.
    """
    c = node.compiled
    out = []
    for b, lik_d in kept_draws(node, draws, seed):
        res = reference.expectimax(b, node.outcome_of, node.spent, node.eligible, node.admission.admitted,
                                   depth, lik_d, c.n_outcomes, c.loss, c.facts, c.cost, c.limits, c.penalty)
        net = np.where(node.eligible, res.risk - (c.penalty + res.expected), np.nan)
        out.append(net)
    return np.array(out).reshape(len(out), len(c.obs_names))


def reference_plan_nets(node, plan, draws, seed):
    """``float64[k]`` or None: R - J(plan) under each kept draw, the plan followed with its leaf actions fixed.

    None where the plan is cut short or a draw reaches an outcome the plan leaves out (the rule then
    keeps the depth-limited value).
    """
    c = node.compiled

    def cost(p, mass):  # mass: unnormalised belief; returns the expected loss in its units
        if "elided" in p:
            raise LookupError
        if "stop" in p:
            return sum(mass[s] * c.loss[list(c.action_names).index(p["stop"]), s] for s in range(len(mass)))
        o = list(c.obs_names).index(p["observe"])
        total, covered = c.penalty[o] * mass.sum(), 0.0
        for name, branch in p["outcomes"].items():
            m = mass * lik_d[o, list(c.outcome_names[o]).index(name)]
            covered += m.sum()
            total += cost(branch["then"], m)
        if covered < mass.sum() * (1 - 1e-9):
            raise LookupError
        return total

    out = []
    for b, lik_d in kept_draws(node, draws, seed):
        stop = min(b @ c.loss[a] for a in range(len(c.action_names)) if node.permitted[a])
        try:
            out.append(stop - cost(plan, b))
        except LookupError:
            return None
    return np.array(out)


def reference_depth(policy, node) -> int:
    """The depth the rule values a node's candidates at, worked out from the base alone."""
    base = policy.base
    if isinstance(base, Lookahead):
        return int(base.depth)
    if isinstance(base, Bounded):
        return min(max(base.decide(node).info["plan_depth"], 1), 3)
    return 1


def check_rule(policy, node, decision):
    """The rule at `node`, against the recomputed values; returns the recomputed lower quantiles."""
    c = node.compiled
    nets = reference_nets(node, reference_depth(policy, node), policy.draws, policy.seed)
    if isinstance(policy.base, Bounded) and len(nets):
        own = policy.base.decide(node)
        plan = own.info.get("plan")
        if own.observe is not None and plan is not None and plan.get("observe") == c.obs_names[own.observe]:
            planned = reference_plan_nets(node, plan, policy.draws, policy.seed)
            assert decision.info["valued_by_plan"] == (planned is not None)
            if planned is not None:  # the bounded base's choice is valued by its own plan under each draw
                nets[:, own.observe] = planned
    lo = np.quantile(nets, policy.quantile, axis=0) if len(nets) else np.full(len(c.obs_names), np.nan)
    hi = np.quantile(nets, 1 - policy.quantile, axis=0) if len(nets) else lo
    base = policy.base.decide(node).observe
    o = decision.observe
    if o is not None:
        assert node.eligible[o], c.obs_names[o]
        assert lo[o] > -1e-9, (c.obs_names[o], lo[o])
        assert base is not None  # it never acquires where its base stops
    if base is not None and lo[base] > 1e-9:
        assert o == base  # a choice that survives the draws is kept
    if base is None:
        assert o is None
    assert decision.limited is False
    assert decision.info["draws_used"] == len(nets)
    assert decision.info["dropped_draws"] == policy.draws - len(nets)
    for k, row in enumerate(decision.candidates):
        if node.eligible[k] and len(nets):
            np.testing.assert_allclose(row.interval, (lo[k], hi[k]), rtol=1e-9, atol=1e-9)
        else:
            assert row.interval is None
    return lo


# --------------------------------------------------------------------------
# (1) the rule holds on random calibrated domains and random histories


@st.composite
def valuable_domains(draw):
    """A small domain whose decision turns on p0 and whose sources inform it, with gates and preconditions.

    (The generic :func:`strategies.domain_dicts` rarely gives an observation a positive value: most of its
    cases would only check that the wrapper stops where its base stops.)
    """
    values = ["v0", "v1", "v2"][: draw(st.integers(2, 3))]
    prior = draw(distribution(values, allow_zero=False))
    high = float(draw(st.integers(5, 40)))
    observations = {}
    for k in range(draw(st.integers(1, 4))):
        strength = draw(st.sampled_from([0.75, 0.9, 0.99]))
        if draw(st.booleans()):  # an authority: its outcomes are p0's values
            outs = values
            spec = {"role": "establish"}
        else:
            outs = ["pos", "neg"]
            spec = {"role": draw(st.sampled_from(["inform", "corroborate"]))}
        lik = {}
        for i, v in enumerate(values):
            hit = outs[i] if outs is values else ("pos" if i == 0 else "neg")
            rest = [y for y in outs if y != hit]
            lik[v] = {hit: strength, **{y: (1 - strength) / len(rest) for y in rest}}
        spec.update({"bears_on": "p0", "outcomes": outs, "likelihood": lik, "cost": {"calls": 1.0}})
        if draw(st.integers(0, 4)) == 0:
            spec["failure_rate"] = 0.1
        if k and draw(st.integers(0, 3)) == 0:
            dep = f"o{draw(st.integers(0, k - 1))}"
            spec["requires"] = {dep: draw(st.sampled_from(observations[dep]["outcomes"]))}
        if draw(st.integers(0, 7)) == 0:
            spec["entitlement"] = "secret.read"
        observations[f"o{k}"] = spec
    return planner.Domain.from_dict({
        "domain": "valuable", "purpose": "test",
        "world": {"p0": {"values": values}},
        "prior": {"p0": prior},
        "actions": {
            "release": {"requires": {"p0": "v0"}, "loss": {"p0": {v: 0.0 if v == "v0" else 50.0 for v in values}}},
            **{f"bet_{v}": {"loss": {"p0": {u: 0.0 if u == v else high for u in values}}} for v in values[1:]},
            "hold": {"loss": float(draw(st.integers(3, 8)))},
        },
        "budget": {"limits": {"calls": float(draw(st.integers(1, 3)))},
                   "weights": {"calls": draw(st.sampled_from([0.05, 0.2, 0.5]))}},
        "observations": observations,
    })


@st.composite
def calibrated_cases(draw):
    """A node of a calibrated domain: a domain, a short simulated log, a random history."""
    if draw(st.integers(0, 3)) == 0:
        d = planner.Domain.from_dict(draw(domain_dicts(max_observations=4)))  # lineage, supersede, anything
    else:
        d = draw(valuable_domains())
    log = simulated_log(d, draw(st.sampled_from(["top-k:3", "one-step", "none"])), draw(st.integers(1, 8)),
                        first_seed=draw(st.integers(0, 1000)))
    cal = calibrated(d, log)
    node = planner.Session(cal).node
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        elig = [o for o in range(len(node.eligible)) if node.eligible[o]]
        if not elig:
            break
        o = draw(st.sampled_from(elig))
        p = node.outcome_probs(o)
        y = draw(st.sampled_from([y for y in range(len(p)) if p[y] > 0]))
        node = node.child(o, y)
    return node


@pytest.mark.slow
@settings(max_examples=150)
@given(calibrated_cases(), st.sampled_from([OneStepEVSI(), Lookahead(depth=2), Bounded()]),
       st.sampled_from([0.05, 0.25]))
def test_never_acquires_below_the_lower_quantile_nor_an_ineligible_observation(node, base, q):
    policy = Conservative(base, quantile=q, draws=12, seed=7)
    got = policy.decide(node)
    check_rule(policy, node, got)
    info = got.info
    event("base stops" if info["base_choice"] is None else
          "overruled: stop" if info["overruled"] and got.observe is None else
          "overruled: another" if info["overruled"] else "kept")


# --------------------------------------------------------------------------
# (2) a concentrated posterior: conservatism changes nothing


def _nodes(root, depth):
    """Every node of the outcome tree below `root` to `depth` acquisitions, along eligible observations."""
    out, frontier = [root], [root]
    for _ in range(depth):
        nxt = []
        for n in frontier:
            for o in np.flatnonzero(n.eligible):
                p = n.outcome_probs(o)
                nxt += [n.child(int(o), y) for y in range(len(p)) if p[y] > 0]
        out += nxt
        frontier = nxt
    return out


def test_a_concentrated_posterior_chooses_what_one_step_chooses(cal_payment_tight, cal_payment):
    cons, one = Conservative(OneStepEVSI()), OneStepEVSI()
    nodes = _nodes(planner.Session(cal_payment_tight).node, 2)
    assert len(nodes) > 10
    acquired = 0
    for n in nodes:
        got = cons.decide(n)
        assert got.observe == one.decide(n).observe
        assert not got.info["overruled"]
        acquired += got.observe is not None
        for row in got.candidates:
            if row.interval is not None:  # the mean's net lies in the interval
                assert row.interval[0] - 1e-9 <= row.net <= row.interval[1] + 1e-9
    assert acquired >= 1
    # the same root on 60 sessions: the registry's interval is wider
    wide = cons.decide(planner.Session(cal_payment).node).candidates[0]
    tight = cons.decide(nodes[0]).candidates[0]
    assert wide.interval[1] - wide.interval[0] > 5 * (tight.interval[1] - tight.interval[0])


# --------------------------------------------------------------------------
# (3) a wide posterior and a marginal value: conservatism stops earlier


def marginal_domain():
    """One informing rumour worth 0.6 before its cost of 0.5: a net of 0.1 at the declared likelihoods."""
    return planner.Domain.from_dict({
        "domain": "marginal", "purpose": "test",
        "world": {"x": {"values": ["a", "b"]}},
        "prior": {"x": {"a": 0.5, "b": 0.5}},
        "actions": {"go": {"loss": {"x": {"a": 0, "b": 10}}}, "wait": {"loss": {"x": {"a": 4, "b": 0}}}},
        "budget": {"limits": {"calls": 3}, "weights": {"calls": 0.5}},
        "observations": {
            "rumour": {"role": "inform", "bears_on": "x", "cost": {"calls": 1},
                       "likelihood": {"a": {"yes": 0.8, "no": 0.2}, "b": {"yes": 0.2, "no": 0.8}}},
        },
    })


def exact_log(n, name="rumour", k=None):
    """`n` sessions per world whose `name` says yes in `k` (default 80%) of world a and no in `k` of world b."""
    k = n * 4 // 5 if k is None else k
    return ([{"acquisitions": [(name, "yes" if i < k else "no")], "resolution": {"x": "a"}} for i in range(n)]
            + [{"acquisitions": [(name, "no" if i < k else "yes")], "resolution": {"x": "b"}} for i in range(n)])


def test_a_wide_posterior_stops_where_the_mean_model_acquires():
    d = marginal_domain()
    # 5 of 6: with the declared row's 2 pseudo-counts and the half-counts the mean is 0.789, just positive
    wide, tight = calibrated(d, exact_log(6, k=5)), calibrated(d, exact_log(2000))
    for cal in (wide, tight):
        one = planner.Session(cal, "one-step")
        simulate(one, {"x": "a"})
        assert [r.acquired for r in one.steps] == ["rumour"]
    s = planner.Session(wide, "conservative")
    stop = s.next()
    assert isinstance(stop, planner.Stop)
    assert (stop.reason, s.steps) == ("no_positive_value", [])
    row = stop.candidates[0]
    assert 0 < row.net < 0.1  # positive at the posterior mean (0.789), where the declared row gives 0.1
    assert row.interval[0] < 0 < row.interval[1]
    assert stop.info["overruled"] and stop.info["base_choice"] == "rumour" and stop.info["choice"] is None
    lo = check_rule(Conservative(OneStepEVSI()), s.node, Conservative(OneStepEVSI()).decide(s.node))
    assert lo[0] < 0
    # the same value, concentrated: it is acquired
    step = planner.Session(tight, "conservative").next()
    assert step.observation == "rumour" and not step.info["overruled"]
    assert step.candidates[0].interval[0] > 0


# --------------------------------------------------------------------------
# (4) determinism


WHEN = datetime.datetime(2026, 12, 2, 10, 0, tzinfo=datetime.timezone.utc)


def _receipt(domain, spec, seed):
    s = planner.Session(domain, spec, caller=planner.Caller(decision_time=WHEN))
    simulate(s, seed=seed)
    return s.receipt(seed=seed)


@pytest.mark.parametrize("spec", ["conservative", "conservative:lookahead:2", "conservative:bounded"])
def test_the_same_run_gives_the_same_receipt(cal_payment, spec):
    again = planner.Domain.from_dict(copy.deepcopy(cal_payment.raw))  # a fresh compile: its own draws
    for seed in (0, 1, 2):
        a, b = _receipt(cal_payment, spec, seed), _receipt(again, spec, seed)
        assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_a_decision_does_not_depend_on_what_was_asked_before(cal_kyc):
    pol = parse_policy("conservative:lookahead:2")
    nodes = _nodes(planner.Session(cal_kyc).node, 1)
    fresh = _nodes(planner.Session(planner.Domain.from_dict(copy.deepcopy(cal_kyc.raw))).node, 1)
    first = [pol.decide(n) for n in nodes]
    second = [pol.decide(n) for n in reversed(fresh)][::-1]
    for a, b in zip(first, second):
        assert a.observe == b.observe and a.candidates == b.candidates


def test_draws_that_would_not_fit_are_refused(cal_payment, monkeypatch):
    from planner.policies import conservative

    c = planner.compile_domain(cal_payment)
    monkeypatch.setattr(conservative, "MAX_DRAW_BYTES", 64 * c.lik.size * 8 - 1)
    with pytest.raises(PolicyError, match=r"^payment_release: 64 posterior draws .* ask for fewer draws$"):
        draws_for(c, 64, 0)
    draws_for(c, 63, 0)


def test_draws_are_made_once_per_compiled_domain_and_read_only(cal_payment):
    c = planner.compile_domain(cal_payment)
    prior, lik = draws_for(c, 8, 3)
    assert draws_for(c, 8, 3)[1] is lik
    assert not lik.flags.writeable and not prior.flags.writeable
    np.testing.assert_array_equal(lik, posterior_draws(c, 8, 3)[1])
    assert draws_for(c, 8, 4)[1] is not lik


# --------------------------------------------------------------------------
# (5) a domain without calibration


def test_an_uncalibrated_domain_is_a_one_line_policy_error(payment):
    with pytest.raises(PolicyError) as e:
        planner.Session(payment, "conservative").next()
    text = str(e.value)
    assert "\n" not in text
    assert text.startswith("payment_release: ") and "calibrated domain" in text and "planner calibrate" in text


def test_the_cli_reports_it_as_an_error(capsys):
    rc = main(["run", str(planner.DOMAINS / "payment_release.yaml"), "--policy", "conservative",
               "--world", "approval=pending"])
    out, err = capsys.readouterr()
    assert (rc, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith("planner: error: payment_release: conservative planning needs a calibrated domain")


# --------------------------------------------------------------------------
# (6) lookahead and bounded bases: the rule at the root


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["conservative:lookahead:2", "conservative:bounded", "conservative:lookahead:auto"])
@pytest.mark.parametrize("fixture", ["cal_payment", "cal_kyc", "cal_second_copy"])
def test_searching_bases_respect_the_rule_at_the_root(request, spec, fixture):
    domain = request.getfixturevalue(fixture)
    pol = parse_policy(spec)
    if spec.endswith("auto"):
        pol = Conservative(Lookahead(depth=pol.base.decide(planner.Session(domain).node).info["depth"]))
    root = planner.Session(domain).node
    check_rule(pol, root, pol.decide(root))
    s = planner.Session(domain, spec)
    stop, _ = simulate(s, seed=5)
    assert isinstance(stop, planner.Stop)
    for r in s.steps:
        assert r.chosen == r.acquired


def test_bounded_caps_the_depth_of_the_draws(cal_kyc):
    root = planner.Session(cal_kyc).node
    base = Bounded().decide(root)
    assert base.info["plan_depth"] > BOUNDED_DEPTH_CAP  # kyc_chain's plan walks its prerequisite chain
    got = Conservative(Bounded()).decide(root)
    assert got.info["value_depth"] == BOUNDED_DEPTH_CAP
    assert got.info["base_info"]["plan_depth"] == base.info["plan_depth"]


def two_rumours():
    """Two informing rumours with the same declared likelihoods; gossip is cheaper (net 0.2 against 0.1)."""
    lik = {"a": {"yes": 0.8, "no": 0.2}, "b": {"yes": 0.2, "no": 0.8}}
    d = planner.Domain.from_dict({
        "domain": "two_rumours", "purpose": "test",
        "world": {"x": {"values": ["a", "b"]}},
        "prior": {"x": {"a": 0.5, "b": 0.5}},
        "actions": {"go": {"loss": {"x": {"a": 0, "b": 10}}}, "wait": {"loss": {"x": {"a": 4, "b": 0}}}},
        "budget": {"limits": {"calls": 30}, "weights": {"calls": 0.05}},
        "observations": {
            "gossip": {"role": "inform", "bears_on": "x", "cost": {"calls": 8}, "likelihood": lik},
            "rumour": {"role": "inform", "bears_on": "x", "cost": {"calls": 10}, "likelihood": lik},
        },
    })
    # gossip logged 12 times, 5 of 6 as its stronger outcome (a mean of 0.789 with the prior's pseudo-counts and
    # the half-counts), the rumour 4,000 times at its declared rates
    return calibrated(d, exact_log(6, "gossip", k=5) + exact_log(2000, "rumour"))


def test_an_overruled_choice_falls_back_to_the_best_lower_quantile():
    root = planner.Session(two_rumours()).node
    assert OneStepEVSI().decide(root).observe == 0  # gossip: the larger net at the mean
    pol = Conservative(OneStepEVSI())
    got = pol.decide(root)
    lo = check_rule(pol, root, got)
    assert lo[0] < 0 < lo[1]
    assert (got.observe, got.info["overruled"], got.info["choice"]) == (1, True, "rumour")
    # A depth-2 plan that starts with gossip can still read the well-known rumour after it: that insures
    # it, and its lower quantile rises from -0.4 (its cost) toward 0 (4,096 draws), still below 0,
    # so the fall-back stands. (With 64 draws the 5% quantile came out positive for two seeds of three.)
    pol = Conservative(Lookahead(depth=2))
    got = pol.decide(root)
    lo2 = check_rule(pol, root, got)
    assert lo[0] < lo2[0] < 0 < lo2[1]
    assert (got.observe, got.info["overruled"]) == (1, True)


# --------------------------------------------------------------------------
# the spec, receipts, replay, redaction, the trace


@pytest.mark.parametrize("spec, want", [
    ("conservative", "conservative:one-step"),
    ("conservative:one-step", "conservative:one-step"),
    ("conservative:lookahead:3", "conservative:lookahead:3"),
    ("conservative:bounded:500", "conservative:bounded:500"),
    ("conservative:q=0.1:draws=16:seed=3:lookahead:auto", "conservative:q=0.1:draws=16:seed=3:lookahead:auto"),
    ("conservative:seed=2", "conservative:seed=2:one-step"),
])
def test_specs_round_trip(spec, want):
    p = parse_policy(spec)
    assert p.spec == want and parse_policy(p.spec) == p


def test_defaults():
    p = parse_policy("conservative")
    assert (p.base, p.quantile, p.draws, p.seed) == (OneStepEVSI(), DEFAULT_QUANTILE, DEFAULT_DRAWS, 0)
    assert (DEFAULT_QUANTILE, DEFAULT_DRAWS) == (0.05, 256)
    assert "conservative" not in " ".join(planner.policies.registry.study_specs())


@pytest.mark.parametrize("spec, words", [
    ("conservative:none", "wraps one-step, lookahead:D or bounded, not none"),
    ("conservative:conservative", "not conservative:one-step"),
    ("conservative:dependency", "not dependency"),
    ("conservative:magic", "unknown policy 'magic'"),
    ("conservative:q=0.7", "quantile must be a number in [0, 0.5]"),
    ("conservative:q=nan", "quantile must be a number in [0, 0.5]"),
    ("conservative:draws=0:one-step", "draws must be a positive integer"),
    ("conservative:draws=1000000000", "of at most 100,000"),
    ("conservative:draws=x", "draws= and seed= integers"),
    ("conservative:depth=2:one-step", "unknown or repeated option 'depth'"),
    ("conservative:q=0.1:q=0.2", "unknown or repeated option 'q'"),
])
def test_bad_specs_are_one_line_errors(spec, words):
    with pytest.raises(PolicyError) as e:
        parse_policy(spec)
    assert "\n" not in str(e.value) and spec in str(e.value) and words in str(e.value)


@pytest.fixture(scope="module")
def cal_file(tmp_path_factory, cal_payment):
    path = tmp_path_factory.mktemp("cal") / "payment_calibrated.yaml"
    path.write_text(yaml.safe_dump(cal_payment.raw, sort_keys=False))
    assert planner.load_domain(path).content_hash == cal_payment.content_hash
    return path


@pytest.mark.parametrize("spec", ["conservative", "conservative:lookahead:2", "conservative:bounded"])
def test_conservative_receipts_validate_replay_and_redact(tmp_path, capsys, cal_file, spec):
    domain = planner.load_domain(cal_file)
    r = _receipt(domain, spec, 3)
    validate_receipt(r)
    rows = [c for e in r["steps"] for c in e["candidates"]] + r["final"]["candidates"]
    assert any("interval" in c for c in rows)
    assert all(len(c["interval"]) == 2 for c in rows if "interval" in c)
    ok, msg = replay(r, domain)
    assert ok, msg
    path = tmp_path / "r.json"
    path.write_text(json.dumps(r))
    assert main(["replay", str(path), str(cal_file)]) == 0
    assert capsys.readouterr().out.startswith("match: ")
    # a forged interval, a forged net: mismatches
    forged = copy.deepcopy(r)
    row = next(c for c in forged["steps"][0]["candidates"] if "interval" in c)
    row["interval"][0] -= 0.5
    ok, msg = replay(forged, domain)
    assert not ok and f"step 1: {row['observation']} interval" in msg
    del row["interval"]
    ok, msg = replay(forged, domain)
    assert not ok and "receipt has None" in msg
    red = redact_receipt(r, domain, [])
    validate_receipt(red)
    kept = [c for c in red["steps"][0]["candidates"] if "interval" in c]
    assert kept and red["steps"][0]["policy_info"]["quantile"] == 0.05


def test_the_trace_shows_the_interval_and_the_rule(capsys, cal_file):
    assert main(["run", str(cal_file), "--policy", "conservative", "--world", "approval=pending"]) == 0
    out = capsys.readouterr().out
    assert "net [q05, q95] [" in out
    assert "conservative: kept one-step's choice approval_registry" in out
    assert main(["run", str(cal_file), "--policy", "conservative:bounded", "--world", "approval=pending"]) == 0
    out = capsys.readouterr().out
    assert "depth-2 net [q05, q95] [" in out and "base planning: certified optimum" in out


def test_exact_evaluation_of_the_wrapper(cal_payment):
    from planner.evaluation.evaluate import evaluate_policy

    cons, one = evaluate_policy(cal_payment, "conservative"), evaluate_policy(cal_payment, "one-step")
    assert cons.first == one.first == "approval_registry"
    # after the registry says approved, one-step reads the message too (net 1.47 at the mean);
    # under 60 sessions its q05 is not positive, so the conservative rule stops at one call
    assert dict(cons.calls) == {1.0: pytest.approx(1.0)}
    assert dict(one.calls)[2.0] > 0.5
    assert cons.expected_penalty < one.expected_penalty


# --------------------------------------------------------------------------
# the draws' beliefs


def test_draw_beliefs_drop_impossible_histories_and_ignore_unplanned_failures(payment):
    root = planner.Session(payment).node
    c = root.compiled
    prior = np.array([c.prior] * 3)
    lik = np.array([c.lik] * 3)
    lik[1, 0, 1, :] = 0.0  # draw 1: the registry never says pending
    node = root.child(0, 1)  # the registry said pending
    b, kept = draw_beliefs(node, prior, lik)
    assert kept.tolist() == [0, 2]
    np.testing.assert_allclose(b, [node.belief, node.belief], rtol=1e-12)
    assert not b.flags.writeable
    # an unavailable outcome of probability 0 (an unplanned failure): the belief is the prior's
    failed = root.child(1, root.unavailable_slot(1))
    b, kept = draw_beliefs(failed, prior, lik)
    assert kept.tolist() == [0, 1, 2]
    np.testing.assert_allclose(b, prior, rtol=1e-12)
