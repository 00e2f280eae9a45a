"""The depth study's third edition: net gains, the selection map, out-of-sample regret, the report."""

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from studies.depth3 import report as rep
from studies.depth3.design import ANCHORED, NODE_MS, budget_level, structure
from studies.depth3.select import (INTERVAL_METHODS, Cases, _choice, interval, interval_rule, method_level, out_of_sample,
                                   reweighted, selection_map)
from studies.tables import write_csv

POLICIES = ("none", "one-step", "lookahead:2", "bounded")
PREVIEW = Path(__file__).resolve().parents[2] / "studies" / "results" / "depth3-preview"


def _rows(spec):
    """Rows from {case: (split, region, weight, {policy: (lo, up, nodes, capped)})}."""
    out = []
    for case, (split, (b, s), w, pol) in spec.items():
        for p, (lo, up, nodes, capped) in pol.items():
            out.append({"case": case, "split": split, "budget_level": b, "structure": s, "latency_weight": w,
                        "policy": p, "loss_lo": lo, "loss_up": up, "search_nodes_per_episode": nodes,
                        "capped": capped})
    return out


def _spec():
    # lookahead:2 gains 1.0 on every tight case but counts 1e6 nodes: at 1e-2 loss/ms that is 23 loss units
    spec = {}
    for k in range(8):
        split = "select" if k < 6 else "test"
        spec[f"c{k}"] = (split, ("tight", "gated"), 1e-3, {
            "none": (5.0, 5.0, 2, False), "one-step": (3.0, 3.0, 10, False),
            "lookahead:2": (2.0 - 0.1 * k, 2.0 - 0.1 * k, 1e6, False),
            "bounded": (2.5, 2.5, 100, False)})
    # a loose case where bounded is capped: bounds [1.0, 4.0], its pessimistic gain negative
    spec["c8"] = ("select", ("loose", "plain"), 0.0, {
        "none": (5.0, 5.0, 2, False), "one-step": (3.0, 3.0, 10, False),
        "lookahead:2": (3.0, 3.0, 50, False), "bounded": (1.0, 4.0, math.nan, True)})
    spec["c9"] = ("select", ("loose", "plain"), 0.0, {
        "none": (5.0, 5.0, 2, False), "one-step": (3.0, 3.0, 10, False),
        "lookahead:2": (3.0, 3.0, 50, False), "bounded": (math.nan, math.nan, math.nan, False)})
    return spec


def test_net_gain_is_priced_from_counted_nodes():
    c = Cases(_rows(_spec()), POLICIES)
    g = c.gain(1e-2)
    # case c0: one-step 3 + 0.01 * NODE_MS * 10, lookahead:2 2 + 0.01 * NODE_MS * 1e6
    expected = (3.0 + 1e-2 * NODE_MS * 10) - (2.0 + 1e-2 * NODE_MS * 1e6)
    assert g[0, POLICIES.index("lookahead:2")] == pytest.approx(expected)
    # the anchored price is the case's own latency weight
    assert c.gain(ANCHORED)[0, 2] == pytest.approx((3.0 + 1e-3 * NODE_MS * 10) - (2.0 + 1e-3 * NODE_MS * 1e6))


def test_a_policy_priced_at_its_own_node_cost_moves_only_its_own_gain():
    c = Cases(_rows(_spec()), POLICIES)
    slow = c.with_node_ms({"lookahead:2": 3.0 * NODE_MS})
    g, gs = c.gain(1e-2), slow.gain(1e-2)
    j = POLICIES.index("lookahead:2")
    np.testing.assert_allclose(gs[:8, j], g[:8, j] - 1e-2 * 2.0 * NODE_MS * 1e6)
    others = [k for k in range(len(POLICIES)) if k != j]
    np.testing.assert_array_equal(gs[:, others], g[:, others])
    np.testing.assert_array_equal(c.node_ms, np.full(len(POLICIES), NODE_MS))  # the original is untouched


def test_capped_rows_use_the_upper_bound_and_imputed_nodes():
    c = Cases(_rows(_spec()), POLICIES)
    i, j = c.cases.index("c8"), POLICIES.index("bounded")
    assert c.capped[i, j] and c.imputed[i, j]
    assert c.nodes[i, j] == 100  # the most bounded counts on an uncapped case
    assert c.gain(0.0)[i, j] == pytest.approx(3.0 - 4.0)
    assert not c.ok[c.cases.index("c9"), j]  # failed: no loss, no bounds


def test_the_map_moves_with_the_price_and_excludes_failed_policies():
    c = Cases(_rows(_spec()), POLICIES)
    smap = selection_map(c, "select", prices=[0.0, 1e-2])
    cell = {(r["region"], r["price"]): r for r in smap}
    assert cell["tight / gated", "0"]["best"] == "lookahead:2"
    assert cell["tight / gated", "0"]["runner_up"] == "bounded"
    assert cell["tight / gated", "0.01"]["best"] == "bounded"  # lookahead:2's nodes now cost more than it gains
    # bounded failed on c7, so it is no candidate in the loose cell, capped or not
    loose = cell["loose / plain", "0"]
    assert loose["candidates"] == 3 and loose["best"] != "bounded"
    assert all(not math.isnan(r["q"]) or math.isnan(r["p"]) for r in smap)
    assert cell["tight / gated", "0"]["ci_lo"] > 0


def test_out_of_sample_regret_against_the_per_case_oracle():
    c = Cases(_rows(_spec()), POLICIES)
    smap = selection_map(c, "select", prices=[0.0])
    (row,) = out_of_sample(c, smap, "test", prices=[0.0], rules=("cell",))
    # test cases c6, c7 are tight/gated: the map picks lookahead:2, which is also each case's best
    assert row["n"] == 2 and row["regret"] == pytest.approx(0.0)
    assert row["gain"] == pytest.approx(np.mean([3.0 - 1.4, 3.0 - 1.3]))
    assert row["bounded_regret"] == pytest.approx(np.mean([2.5 - 1.4, 2.5 - 1.3]))
    assert row["onestep_regret"] == pytest.approx(np.mean([3.0 - 1.4, 3.0 - 1.3]))
    # at 1e-2/ms the map picks bounded; lookahead:2's nodes make it the worse choice on the test cases too
    (row,) = out_of_sample(c, selection_map(c, "select", prices=[1e-2]), "test", prices=[1e-2], rules=("cell",))
    assert row["policies_used"] == "bounded" and row["regret"] == pytest.approx(0.0)


def test_out_of_sample_regret_ends_bound_the_regret_whatever_the_capped_losses_are():
    # test cases where another policy than the chosen one is capped: the oracle is then an interval too
    spec = _spec()
    rng = np.random.default_rng(7)
    for k in range(6):
        spec[f"t{k}"] = ("test", ("tight", "gated"), 1e-3, {
            "none": (5.0, 5.0, 2, False), "one-step": (3.0, 3.0, 10, False),
            "lookahead:2": (1.8, 1.8, 1e6, False),
            "bounded": (1.0 + 0.1 * k, 2.6 + 0.2 * k, math.nan, True)})
    c = Cases(_rows(spec), POLICIES)
    smap = selection_map(c, "select", prices=[0.0])
    (row,) = out_of_sample(c, smap, "test", prices=[0.0], rules=("pooled",))
    idx = np.flatnonzero(c.split == "test")
    j = c.policies.index(row["policies_used"])
    for _ in range(200):  # every draw of the capped rows' true losses inside their bounds
        true = c.lo + rng.random(c.lo.shape) * (c.up - c.lo)
        net = true + 0.0 * c.nodes
        regret = (net[idx, j] - np.nanmin(net[idx], axis=1)).mean()
        assert row["regret_opt"] - 1e-12 <= regret <= row["regret"] + 1e-12
    assert row["regret_opt"] < row["regret"]  # the capped rows make it an interval, though the chosen row is exact
    assert row["regret_method"] in INTERVAL_METHODS and row["regret_holds"] in (True, False, None)


def test_a_tie_with_one_step_goes_to_one_step():
    spec = {f"t{k}": ("select", ("none", "plain"), 0.0, {p: (3.0, 3.0, 1, False) for p in POLICIES})
            for k in range(6)}
    (cell,) = [r for r in selection_map(Cases(_rows(spec), POLICIES), "select", prices=[0.0]) if r["region"] == "all"]
    assert cell["best"] == "one-step" and math.isnan(cell["ci_lo"]) and not cell["verdict_a"]
    assert rep._ci(cell["ci_lo"], cell["ci_hi"], cell["ci_method"], cell["ci_holds"]) == "-"


def test_a_capped_runner_up_shows_both_ends():
    spec = {f"r{k}": ("select", ("loose", "plain"), 0.0, {
        "none": (5.0, 5.0, 2, False), "one-step": (3.0, 3.0, 10, False), "lookahead:2": (2.0, 2.0, 50, False),
        "bounded": (1.0, 4.0, math.nan, True) if k == 0 else (2.5, 2.5, 100, False)}) for k in range(6)}
    (cell,) = [r for r in selection_map(Cases(_rows(spec), POLICIES), "select", prices=[0.0]) if r["region"] == "all"]
    assert cell["runner_up"] == "bounded" and cell["runner_up_capped"] == 1
    np.testing.assert_allclose([cell["runner_up_gain"], cell["runner_up_gain_opt"]], [0.25, 0.75])
    assert rep._runner_up(cell) == "`bounded` (+0.250 .. +0.750)"


def test_a_loss_too_small_to_show_keeps_its_sign():
    assert (rep._n(-1.6e-4), rep._n(0.0), rep._n(-0.0), rep._n(2e-4)) == ("-0.000", "+0.000", "+0.000", "+0.000")


def test_fallback_rule_uses_the_pooled_cell_for_small_cells():
    c = Cases(_rows(_spec()), POLICIES)
    smap = selection_map(c, "select", prices=[0.0])
    small = c.cases.index("c8")  # loose / plain: 2 selection cases
    assert _choice(smap, c, small, 0.0, "fallback") == _choice(smap, c, small, 0.0, "pooled")
    assert _choice(smap, c, 0, 0.0, "fallback") == _choice(smap, c, 0, 0.0, "cell")


def test_reweighting_changes_the_pooled_choice():
    spec = _spec()
    del spec["c9"]
    for case in list(spec):
        split = spec[case][0]
        spec[case] = ("select" if split == "select" else "test", *spec[case][1:])
    c = Cases(_rows(spec), POLICIES)
    everything = reweighted(c, [(1.0, 0.0), (0.0, 0.0)], price=0.0, splits=("select", "test"))
    assert everything[0]["mix"] == "observed" and everything[0]["map_best"] == "lookahead:2"
    out = [r for r in everything if r["mix"] == "target"]
    # all gated (the tight cases): lookahead:2; all plain (c6 alone): nothing beats one-step, ties go to it
    assert [r["best"] for r in out] == ["lookahead:2", "one-step"]
    # the map's pick (lookahead:2) under the all-plain mix: the plain cases' gain, which is 0 there
    assert out[1]["map_best"] == "lookahead:2" and out[1]["map_best_gain"] == pytest.approx(0.0)
    assert out[0]["missing_mass"] == 0.0 and out[1]["missing_mass"] == 0.0
    assert out[1]["mean_gain"] == pytest.approx(0.0)  # the plain cases alone: nothing beats one-step's 3.0


def test_classification_of_domains():
    assert budget_level({"budget": {"limits": {"calls": 5}}}) == "medium"
    assert budget_level({"budget": {"limits": {"calls": 9}}}) == "loose"
    assert structure({"actions": {"a": {}}, "observations": {"o": {"requires": {"p": "x"}}}}) == "chain"
    assert structure({"actions": {"a": {}}, "observations": {"o": {}}}) == "plain"


def _folder(tmp_path):
    write_csv(_rows(_spec()), tmp_path / "cases.csv")
    (tmp_path / "meta.json").write_text(json.dumps({"label": "preview", "policies": list(POLICIES),
                                                    "command": "test"}) + "\n", encoding="utf-8")
    return tmp_path


def test_report_renders_the_same_bytes_twice(tmp_path):
    folder = _folder(tmp_path)
    files = rep.render_folder(folder)
    first = {f: (folder / f).read_bytes() for f in files}
    rep.render_folder(folder)
    assert {f: (folder / f).read_bytes() for f in files} == first
    text = first["report.md"].decode()
    assert text.startswith("# PREVIEW") and "## 1. The selection map" in text and "Reviewer's checklist" in text
    assert text.index("selection map") < text.index("## 3. Evidence")


@pytest.mark.skipif(not (PREVIEW / "cases.csv").is_file(), reason="no committed preview")
def test_committed_preview_rerenders_byte_for_byte(tmp_path):
    shutil.copytree(PREVIEW, tmp_path / "p")
    assert rep.main([str(tmp_path / "p")]) == 0
    for f in ("report.md", "map.csv", "out_of_sample.csv", "coverage.csv"):
        assert (tmp_path / "p" / f).read_bytes() == (PREVIEW / f).read_bytes(), f
    assert "PREVIEW" in (PREVIEW / "report.md").read_text(encoding="utf-8").splitlines()[0]


def test_report_cli_errors(tmp_path, capsys):
    assert rep.main([]) == 2
    assert rep.main([str(tmp_path / "nowhere")]) == 2
    assert "not found" in capsys.readouterr().err


@pytest.mark.slow
def test_a_tiny_run_writes_every_output(tmp_path):
    from studies.depth3.run import Config, run_study

    res = run_study(Config(instances=1, max_obs=8, shipped=False, outside=False, peer=False, label="preview"),
                    tmp_path / "o", progress=False)
    from studies.depth3.design import POLICIES as ALL

    assert res["cases"] == 5 and res["rows"] == 5 * len(ALL)
    for f in rep.OUTPUTS:
        # peer.csv only when the peer ran; it did not, and the notes say so
        assert (tmp_path / "o" / f).is_file() == (f != "peer.csv"), f
    assert res["notes"] == ["POUCT peer not run (switched off)."]


def test_run_cli_refuses_bad_counts(capsys):
    from studies.depth3.run import main

    assert main(["--preview", "--instances", "0"]) == 2
    assert main(["--preview", "--workers", "0"]) == 2
    assert "--workers must be >= 1" in capsys.readouterr().err


@pytest.mark.skipif(not (PREVIEW / "cases.csv").is_file(), reason="no committed preview")
def test_committed_rows_read_no_clock_and_cover_every_policy_on_every_case():
    from studies.depth3.design import POLICIES as ALL
    from studies.jobs import CLOCK_COLUMNS
    from studies.tables import read_csv

    rows = read_csv(PREVIEW / "cases.csv")
    assert not set(rows[0]) & set(CLOCK_COLUMNS)
    by_case = {}
    for r in rows:
        by_case.setdefault(r["case"], []).append(r["policy"])
    from studies.depth3.pouct import PEERS

    # every policy on every case; the peer's two rows on every case too when it ran (pomdp-py installed)
    peers = {p for v in by_case.values() for p in v if p in PEERS}
    assert all(sorted(v) == sorted(ALL + tuple(sorted(peers))) for v in by_case.values())
    assert {r["split"] for r in rows} == {"select", "test", "shipped", "outside"}


def test_mix_weights_give_the_target_shares():
    from studies.depth3.select import mix_weights

    rng = np.random.default_rng(3)
    st = rng.choice(["gated+chain", "gated", "chain", "plain"], size=40, p=[0.1, 0.5, 0.1, 0.3])
    gated = np.isin(st, ["gated+chain", "gated"])
    chain = np.isin(st, ["gated+chain", "chain"])
    for tg, tc in [(0.25, 0.2), (0.5, 0.5), (0.75, 0.8)]:
        w, missing = mix_weights(st, tg, tc)
        assert missing == 0.0 and w.sum() == pytest.approx(1.0)
        assert float(w @ gated) == pytest.approx(tg) and float(w @ chain) == pytest.approx(tc)
        assert float(w @ (gated & chain)) == pytest.approx(tg * tc)  # independent in the target
    w, missing = mix_weights(np.array(["gated"] * 3 + ["plain"] * 2), 0.5, 0.5)
    assert missing == pytest.approx(0.5)  # gated+chain and chain have no case
    assert float(w[:3].sum()) == pytest.approx(0.5)


def test_peer_summary_pairs_the_peer_with_bounded_and_never_flatters_it():
    from studies.depth3.select import peer_summary

    spec = _spec()
    rows = _rows(spec)
    peer = []
    for case, (split, _, _, pol) in spec.items():
        if math.isnan(pol["bounded"][0]):
            continue
        for p, shift in (("pouct:time", 0.5), ("pouct:nodes", -0.2)):
            loss = pol["bounded"][1] + shift  # above bounded's upper bound by `shift`
            peer.append({"case": case, "policy": p, "loss_lo": loss, "loss_up": loss, "mc_se": 0.01,
                         "num_sims": 7, "sims_capped": False, "failed": False, "illegal": 0})
    c = Cases(rows, POLICIES)
    out = {(r["peer"], r["group"]): r for r in peer_summary(rows + peer, c)}
    gen = out["pouct:time", "generated"]
    # c8's bounded row is capped with bounds [1, 4]: the peer (4.5) is compared with the lower bound 1
    diffs = [0.5] * 8 + [3.5]
    assert gen["n"] == 9 and gen["diff_bounded"] == pytest.approx(np.mean(diffs))
    assert gen["worse"] == 9 and gen["better"] == 0 and gen["sims"] == 7
    assert out["pouct:nodes", "generated"]["better"] == 8  # 0.2 below bounded, beyond 2 standard errors


def test_outside_cases_use_the_streed_mapping_cut_to_a_small_depth_limited_variant():
    from planner.model.domain import Domain
    from studies.depth3.outside import CALLS, FEATURES, outside_domain, outside_names, streed_module

    mod = streed_module()
    names = outside_names()
    assert len(names) == 12 and len(set(names)) == 12
    d = outside_domain("heart-high")
    Domain.from_dict(d)  # loads
    ds = mod.load_case("heart", "high")
    assert len(d["observations"]) == FEATURES and d["budget"]["limits"] == {"calls": CALLS}
    # the label's prior is the rows' label frequencies, whatever columns were dropped
    counts = np.bincount(ds["labels"], minlength=len(ds["matrix"])) / len(ds["labels"])
    prior = {}
    for e in d["prior"]["joint"]:
        prior[e["state"]["label"]] = prior.get(e["state"]["label"], 0.0) + e["p"]
    assert [prior[f"c{k}"] for k in range(len(counts))] == pytest.approx(counts.tolist())
    # the losses and the test costs are the mapping's own
    full = mod.domain_dict(ds)
    assert d["actions"] == full["actions"]
    for o, spec in d["observations"].items():
        assert spec["cost"]["calls"] == 1
        assert spec["cost"].get("cost") == full["observations"][o].get("cost", {}).get("cost")
    with pytest.raises(Exception, match="no outside case"):
        outside_domain("iris-middle")


def test_matched_simulations_follow_bounded_counted_nodes():
    from studies.depth3.design import NODE_MS, PEER_MS_PER_SIM
    from studies.depth3.pouct import matched_sims

    m = matched_sims(40_000.0, max_sims=1000)
    assert m["pouct:nodes"] == (1000, True)
    assert m["pouct:time"] == (round(40_000 * NODE_MS / PEER_MS_PER_SIM), False)
    assert matched_sims(3.0)["pouct:time"] == (1, False)  # at least one simulation


def test_a_calibrated_interval_contains_the_plain_studentised_one():
    rng = np.random.default_rng(4)
    for _ in range(5):
        x = rng.lognormal(0.0, 1.5, size=12) - 1.0
        lo, hi = interval(x, "studentized")
        lo95, hi95 = interval(x, "studentized@0.95")
        lo99, hi99 = interval(x, "studentized@0.99")
        assert lo99 <= lo95 <= lo < hi <= hi95 <= hi99


def test_the_rule_takes_the_first_method_that_holds_and_marks_a_cell_where_none_does():
    def cov(policy, n, coverages):
        return [{"policy": policy, "n": n, "method": m, "coverage": c, "se": 0.02, "population": "pessimistic"}
                for m, c in zip(INTERVAL_METHODS, coverages)]

    rows = cov("p", 10, [0.70, 0.80, 0.84, 0.93]) + cov("p", 30, [0.80, 0.89, 0.95, 0.97])
    rows += cov("q", 10, [0.40, 0.45, 0.50, 0.55])
    rows += [{"policy": "q", "n": 10, "method": "studentized@0.99", "coverage": 0.99, "se": 0.01,
              "population": "optimistic"}]  # the optimistic population never decides
    assert interval_rule(rows) == {"p": {10: ("studentized@0.99", True), 30: ("studentized", True)},
                                   "q": {10: ("bca", False)}}


def test_an_unknown_interval_method_is_refused():
    assert method_level("studentized@0.95") == ("studentized", 0.95)
    with pytest.raises(ValueError, match="unknown interval method 'wald'"):
        method_level("wald")


NODE_MS_RUN = PREVIEW.parent / "depth3-node-ms"


@pytest.mark.skipif(not (NODE_MS_RUN / "summary.csv").is_file(), reason="no committed node-cost measurement")
def test_the_frozen_node_costs_are_the_committed_measurement():
    import csv

    from studies.depth3.design import NODE_MS_MEASURED

    with open(NODE_MS_RUN / "summary.csv", newline="", encoding="utf-8") as f:
        measured = {r["policy"]: float(r["median_ms_per_node"]) for r in csv.DictReader(f) if r["policy"] != "all"}
    assert set(NODE_MS_MEASURED) == set(measured)
    for policy, value in measured.items():  # frozen to 3 significant figures
        np.testing.assert_allclose(NODE_MS_MEASURED[policy], value, rtol=5e-3, err_msg=policy)


def test_the_sensitivity_section_names_each_moved_pick(monkeypatch):
    # lookahead:2 at a thousandth of the constant's cost per node wins the cells its 1e6 nodes lose
    c = Cases(_rows(_spec()), POLICIES)
    smap = selection_map(c, "select")
    monkeypatch.setattr(rep, "NODE_MS_MEASURED", {"lookahead:2": NODE_MS / 1000})
    lines, note = rep._node_ms_section(c, smap, None)
    before = {r["price"]: r["best"] for r in smap if r["region"] == "all"}
    assert before["0.01"] == before["anchored"] == "one-step" and before["0"] == "lookahead:2"
    assert "anchored: `lookahead:2` +0.936 over `one-step` +0.000" in note and "0.01: `lookahead:2`" in note
    assert "0: `" not in note  # a pick that does not move is not named
    assert "(all 8 selection cases)" in "\n".join(lines)  # counted, not the full run's 72
    monkeypatch.setattr(rep, "NODE_MS_MEASURED", {})
    assert rep._node_ms_section(c, smap, None)[1].endswith("Not re-measured.")



@pytest.mark.parametrize("argv, says", [(["--step", "0"], "--step: 0: must be an integer from 1"),
                                        (["--workers", "x"], "--workers: 'x': not an integer"),
                                        (["--out", "/dev/null/x"], "--out /dev/null/x: cannot create the folder")])
def test_node_ms_refuses_bad_arguments_in_one_line(argv, says, capsys):
    from studies.depth3 import node_ms

    try:
        code = node_ms.main(argv)
    except SystemExit as e:  # argparse's own errors
        code = e.code
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and says in err[-1] and not any("Traceback" in line for line in err)
