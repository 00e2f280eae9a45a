"""The frontier: what ACCEPTED-TOP-K buys over plain and post-filtered top-k, across thresholds and loss ratios.

On the shipped corpus' **test** queries (their judgments never fitted a
calibrator), for a caller holding ``staff`` only, with the mix the source
text asks for:

- access-restricted sources: ``hr_index`` needs ``hr.read`` (never asked),
  and the confidential documents of the archive are withheld;
- unavailable sources: every source is down for a query with its declared
  ``failure_rate`` (``partner_index`` 0.2), drawn from (seed, query id);

each configuration runs every query and is scored against the judgments
(:func:`planner.retrieval.pipeline.evaluate`):

- ``accept``: ACCEPTED-TOP-K, limit :data:`LIMIT`, for each loss ratio
  ``C_FP / C_FN`` (``C_FN = 1``), so include threshold ``r / (1 + r)``,
  without abstention and with ``C_R`` half the loss at that threshold
  (``C_R = C_FP C_FN / (2 (C_FP + C_FN))``), which opens a middle region;
- ``plain``: the first k eligible candidates in calibrated order, no
  acceptance rule, k in :data:`KS`;
- ``postfilter``: the top k, then the gates (the anti-pattern), k in :data:`KS`.

Reported per configuration (``frontier.csv``; ``frontier.md`` has the table,
the command, and the post-filter survivors beside the independent-selectivity
model's expectation): cost-weighted false inclusions ``C_FP FP`` and false
exclusions ``C_FN FN`` (relevant eligible documents not delivered, up to
the reader's limit :data:`LIMIT` whatever the method's k) and abstentions
``C_R A``, per query; accepted-set precision; coverage (true inclusions over
``min(LIMIT, relevant eligible)``);
abstention rate (of candidates judged); eligible results delivered per
candidate examined; scoring tokens per query; modelled time to the first
accepted result and to settlement (the wall-clock median beside them); and the
settlements. ``plain`` and ``postfilter`` do not look at the losses; their
costs are computed under each ratio's losses, so every row of one ratio is
priced alike. ``frontier.png`` plots precision against coverage and the
cost-weighted loss against the ratio.
"""

from __future__ import annotations

import csv
import io
import json
import platform
import time
from collections import Counter
from pathlib import Path

import numpy as np

from planner.io.atomic import replacing_folder, write_bytes, write_text
from planner.model.caller import Caller
from planner.retrieval.acceptance import Losses, thresholds
from planner.retrieval.pipeline import Retrieval, evaluate, shipped_calibrators
from planner.retrieval.settlement import SETTLEMENTS
from planner.retrieval.tool import outages

__all__ = ["run_frontier", "sweep", "survivors_on_corpus", "RATIOS", "QUICK_RATIOS", "KS", "LIMIT", "DEFAULT_OUT",
           "FILES"]

RATIOS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
QUICK_RATIOS = (0.5, 2.0, 8.0)
KS = (1, 2, 3, 5, 8, 10)
LIMIT = 5
DEFAULT_OUT = "studies/results/frontier"
FILES = ("frontier.csv", "frontier.md", "frontier.png", "survivors.csv", "meta.json")
CALLER = Caller(entitlements=["staff"])

COLUMNS = ["method", "ratio", "c_fp", "c_fn", "c_r", "threshold", "limit", "queries", "fp_cost", "fn_cost",
           "abstain_cost", "total_cost", "precision", "coverage", "abstention_rate", "found_per_examined",
           "scoring_tokens", "first_accept_ms", "settle_ms", "wall_ms_median", "delivered", "true_inclusions",
           "false_inclusions", "false_exclusions", "abstained", "examined"] + [f"n_{k}" for k in SETTLEMENTS]


def _row(method, losses, limit, outcomes, threshold) -> dict:
    n = len(outcomes)
    tp = sum(o.true_inclusions for o in outcomes)
    fp = sum(o.false_inclusions for o in outcomes)
    fn = sum(o.false_exclusions for o in outcomes)
    ab = sum(o.abstained for o in outcomes)
    delivered = sum(o.delivered for o in outcomes)
    examined = sum(o.examined for o in outcomes)
    judged = sum(o.judged for o in outcomes)
    cap = sum(min(o.want, o.relevant_eligible) for o in outcomes)
    firsts = [o.first_accept_ms for o in outcomes if o.first_accept_ms is not None]
    c_r = losses.c_r or 0.0
    row = {
        "method": method, "ratio": losses.c_fp / losses.c_fn, "c_fp": losses.c_fp, "c_fn": losses.c_fn,
        "c_r": losses.c_r if losses.c_r is not None else "", "threshold": threshold, "limit": limit, "queries": n,
        "fp_cost": losses.c_fp * fp / n, "fn_cost": losses.c_fn * fn / n, "abstain_cost": c_r * ab / n,
        "total_cost": (losses.c_fp * fp + losses.c_fn * fn + c_r * ab) / n,
        "precision": tp / delivered if delivered else float("nan"),
        "coverage": tp / cap if cap else float("nan"),
        "abstention_rate": ab / judged if judged else 0.0,
        "found_per_examined": delivered / examined if examined else 0.0,
        "scoring_tokens": float(np.mean([o.scoring_tokens for o in outcomes])),
        "first_accept_ms": float(np.mean(firsts)) if firsts else float("nan"),
        "settle_ms": float(np.mean([o.settle_ms for o in outcomes])),
        "wall_ms_median": float(np.median([o.wall_ms for o in outcomes])),
        "delivered": delivered, "true_inclusions": tp, "false_inclusions": fp, "false_exclusions": fn,
        "abstained": ab, "examined": examined,
    }
    counts = Counter(o.settlement for o in outcomes)
    row.update({f"n_{k}": counts.get(k, 0) for k in SETTLEMENTS})
    return row


def sweep(retrieval: Retrieval, calibrators, *, ratios=RATIOS, ks=KS, limit: int = LIMIT, seed: int = 0,
          split: str = "test", caller: Caller = CALLER) -> list:
    """Every configuration of the module docstring on `split`; one dict per row (:data:`COLUMNS`)."""
    queries = retrieval.corpus.split(split)
    down = {q.id: outages(retrieval.corpus, q.id, seed) for q in queries}
    relevant = {q.id: retrieval.relevant_eligible(q, caller) for q in queries}

    def run(q, **kw):
        t = retrieval.run(q, calibrators=calibrators, caller=caller, down=down[q.id], **kw)
        return evaluate(t, q.relevant, relevant[q.id], want=limit)

    baselines = {}
    for k in ks:
        for rule in ("plain", "postfilter"):
            baselines[(rule, k)] = [run(q, rule=rule, limit=k) for q in queries]
    rows = []
    for r in ratios:
        plain_losses = Losses(c_fp=r, c_fn=1.0)
        for abstain in (False, True):
            losses = plain_losses if not abstain else Losses(c_fp=r, c_fn=1.0, c_r=r / (2 * (r + 1)))
            th = thresholds(losses)
            outs = [run(q, rule="accept", losses=losses, limit=limit) for q in queries]
            rows.append(_row("accept+abstain" if abstain else "accept", losses, limit, outs,
                             f"{float(th.lower):.3f}-{float(th.upper):.3f}" if abstain else f"{float(th.upper):.3f}"))
        for (rule, k), outs in baselines.items():
            rows.append(_row(f"{rule} top-k", plain_losses, k, outs, ""))
    return rows


def survivors_on_corpus(retrieval: Retrieval, calibrators, *, ks=(5, 10, 20), split: str = "test",
                        caller: Caller = CALLER) -> list:
    """Post-filter survivors on the corpus beside the independent-selectivity expectation.

    For each query: its selectivity s is the eligible share of every
    candidate it matches (all sources up), n how many it matches; under the
    model a top-k keeps ``Binomial(min(k, n), s)`` eligible ones. The rows give
    the mean expectation and the measured mean of
    :func:`~planner.retrieval.topk.postfiltered_top_k`, per k.
    """
    queries = retrieval.corpus.split(split)
    sel = {}
    for q in queries:
        t = retrieval.run(q, calibrators=calibrators, caller=caller, rule="plain", limit=1000)
        n = t.examined
        sel[q.id] = (n, (len(t.delivered) / n) if n else 0.0)
    rows = []
    for k in ks:
        expected, measured, zero, zero_with_eligible_below = [], [], 0, 0
        for q in queries:
            n, s = sel[q.id]
            expected.append(min(k, n) * s)
            t = retrieval.run(q, calibrators=calibrators, caller=caller, rule="postfilter", limit=k)
            measured.append(len(t.delivered))
            if not t.delivered:
                zero += 1
                zero_with_eligible_below += (s * n) >= 1
        rows.append({"k": k, "queries": len(queries), "mean_selectivity": float(np.mean([sel[q.id][1] for q in queries])),
                     "expected_survivors": float(np.mean(expected)), "measured_survivors": float(np.mean(measured)),
                     "queries_with_zero": zero, "zero_but_eligible_below": zero_with_eligible_below})
    return rows


def _csv(rows, columns) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    return buf.getvalue()


def _f(x, d=3) -> str:
    return "-" if x != x else f"{x:.{d}f}"


def _settlements(r) -> str:
    return ", ".join(f"{k} {r['n_' + k]}" for k in SETTLEMENTS if r["n_" + k])


def _markdown(rows, surv, binom, meta) -> str:
    out = ["# The frontier: ACCEPTED-TOP-K against plain and post-filtered top-k", "",
           f"Made by `{meta['command']}` ({meta['seconds']:.0f} s on {meta['machine']}; {meta['queries']} test queries of "
           f"the shipped corpus, caller `staff`; `hr_index` rejected (needs `hr.read`), confidential archive "
           f"documents withheld, sources down at their declared failure rates with seed {meta['seed']}: "
           f"{meta['outages']} queries had a source down). Calibrators: {', '.join(meta['calibrators'])}. "
           f"Method: `planner/retrieval/frontier.py` (docstring); design: `docs/settlements.md`.", "",
           f"Costs are per query, under the row's losses (C_FN = 1): FP = C_FP x false inclusions, FN = C_FN x false "
           f"exclusions (relevant eligible documents not delivered, up to the reader's limit {LIMIT} for every "
           f"method), A = C_R x abstentions. Precision: of the delivered; coverage: true inclusions / "
           f"min({LIMIT}, relevant eligible); abstention: of "
           "the candidates judged; found/examined: delivered per candidate examined; tokens: scored per query; "
           "first/settle: modelled ms to the first delivery and to the settlement (mean); wall: measured median ms.",
           ""]
    out += ["## Across loss ratios: ACCEPTED-TOP-K against plain and post-filtered top-5", "",
            "| C_FP/C_FN | method | threshold | FP | FN | A | total | precision | coverage | abstain | "
            "found/examined | tokens | first ms | settle ms | wall ms | settlements |", "|" + "---|" * 16]
    for r in rows:
        if r["method"].endswith("top-k") and r["limit"] != LIMIT:
            continue
        name = r["method"] if not r["method"].endswith("top-k") else r["method"].replace("top-k", f"top-{r['limit']}")
        out.append(f"| {r['ratio']:g} | {name} | {r['threshold'] or '-'} | {_f(r['fp_cost'])} | "
                   f"{_f(r['fn_cost'])} | {_f(r['abstain_cost'])} | **{_f(r['total_cost'])}** | {_f(r['precision'])} | "
                   f"{_f(r['coverage'])} | {_f(r['abstention_rate'])} | {_f(r['found_per_examined'])} | "
                   f"{r['scoring_tokens']:.0f} | {_f(r['first_accept_ms'], 1)} | {_f(r['settle_ms'], 1)} | "
                   f"{_f(r['wall_ms_median'], 2)} | {_settlements(r)} |")
    first = min(r["ratio"] for r in rows)
    out += ["", "## The baselines across k (they ignore the losses; costs at C_FP/C_FN = 1)", "",
            "| method | k | false incl. | false excl. | total (ratio 1) | precision | coverage | found/examined | "
            "tokens | first ms | settle ms | settlements |", "|" + "---|" * 12]
    for r in rows:
        if r["method"].endswith("top-k") and r["ratio"] == first:
            total1 = r["false_inclusions"] / r["queries"] + r["false_exclusions"] / r["queries"]
            out.append(f"| {r['method']} | {r['limit']} | {r['false_inclusions']} | {r['false_exclusions']} | "
                       f"{total1:.3f} | {_f(r['precision'])} | {_f(r['coverage'])} | {_f(r['found_per_examined'])} | "
                       f"{r['scoring_tokens']:.0f} | {_f(r['first_accept_ms'], 1)} | {_f(r['settle_ms'], 1)} | "
                       f"{_settlements(r)} |")
    out += ["", "Post-filtered top-k settles `over_budget` (candidates) when its cut holds fewer than k eligible "
            "candidates: the cut is a budget of k candidates examined, which is what the anti-pattern is.", "",
            "## Post-filtering against the independent-selectivity model", "",
            f"Simulated (`planner accept postfilter`): k = {binom['k']}, s = {binom['s']}: Binomial expects "
            f"{binom['expected']:.3f} survivors; the mean over {binom['draws']} seeded draws of the real "
            f"post-filtered top-k is {binom['measured']:.3f} (95% interval of the mean [{binom['lo']:.3f}, "
            f"{binom['hi']:.3f}]: {'within' if binom['within'] else 'outside'}).", "",
            f"The starving list (10 confidential candidates on top, 5 eligible below): post-filtered top-10 delivers "
            f"{binom['starving_post']}, ACCEPTED-TOP-K (limit 5) {binom['starving_accepted']}.", "",
            "On the corpus (test queries, all sources up): s is each query's eligible share of the candidates it "
            "matches; the model expects min(k, n) s survivors.", "",
            "| k | mean s | expected survivors | measured survivors | queries with none | of them, with eligible candidates below the cut |",
            "|---|---|---|---|---|---|"]
    for s in surv:
        out.append(f"| {s['k']} | {s['mean_selectivity']:.3f} | {s['expected_survivors']:.3f} | "
                   f"{s['measured_survivors']:.3f} | {s['queries_with_zero']} | {s['zero_but_eligible_below']} |")
    out.append("")
    return "\n".join(out)


def _plot(rows, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 5))
    ratios = sorted({r["ratio"] for r in rows})
    styles = {"accept": ("tab:blue", "o"), "accept+abstain": ("tab:green", "s"),
              "plain top-k": ("tab:gray", "^"), "postfilter top-k": ("tab:red", "v")}
    for method in ("accept", "accept+abstain"):
        pts = [r for r in rows if r["method"] == method]
        col, mk = styles[method]
        a.plot([r["coverage"] for r in pts], [r["precision"] for r in pts], marker=mk, color=col,
               label=f"{'ACCEPTED-TOP-K' if method == 'accept' else 'ACCEPTED-TOP-K with abstention'} (limit {LIMIT})")
        for i, r in enumerate(pts):
            if method == "accept":  # alternate sides: neighbouring thresholds land close together
                a.annotate(f"t={float(r['threshold']):.2f}", (r["coverage"], r["precision"]), fontsize=7,
                           textcoords="offset points", xytext=(6, -3) if i % 2 else (-34, -3))
    first = ratios[0]
    for method in ("plain top-k", "postfilter top-k"):
        pts = sorted((r for r in rows if r["method"] == method and r["ratio"] == first), key=lambda r: r["limit"])
        col, mk = styles[method]
        a.plot([r["coverage"] for r in pts], [r["precision"] for r in pts], marker=mk, color=col, linestyle="--",
               label=f"{method} (k = {', '.join(str(r['limit']) for r in pts)})")
        for r in pts:
            a.annotate(f"k={r['limit']}", (r["coverage"], r["precision"]), fontsize=7, color=col,
                       textcoords="offset points", xytext=(4, 3))
    a.set_xlabel(f"coverage (true inclusions / min({LIMIT}, relevant eligible))")
    a.set_ylabel("accepted-set precision")
    a.set_xlim(0, 1)
    a.set_ylim(0, 1.05)
    a.grid(alpha=0.3)
    a.legend(fontsize=8, loc="lower left")
    a.set_title("precision against coverage (test queries)")
    for method, k in (("accept", None), ("accept+abstain", None), ("plain top-k", LIMIT), ("postfilter top-k", LIMIT)):
        pts = sorted((r for r in rows if r["method"] == method and (k is None or r["limit"] == k)),
                     key=lambda r: r["ratio"])
        col, mk = styles[method]
        name = {"accept": "ACCEPTED-TOP-K", "accept+abstain": "ACCEPTED-TOP-K, abstention"}.get(method, f"{method}, k={k}")
        b.plot([r["ratio"] for r in pts], [r["total_cost"] for r in pts], marker=mk, color=col, label=name,
               linestyle="-" if k is None else "--")
    b.set_xscale("log", base=2)
    b.set_yscale("log")
    b.set_xlabel("loss ratio C_FP / C_FN (include threshold r / (1 + r))")
    b.set_ylabel("C_FP FP + C_FN FN + C_R A per query (log)")
    b.grid(alpha=0.3)
    b.legend(fontsize=8)
    b.set_title("cost-weighted loss against the loss ratio")
    fig.suptitle("ACCEPTED-TOP-K vs plain and post-filtered top-k: caller staff, hr_index rejected, "
                 "confidential withheld, outages drawn", fontsize=10)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    write_bytes(path, buf.getvalue())


def run_frontier(*, out=DEFAULT_OUT, quick: bool = False, seed: int = 0, plot: bool = True,
                 command: str = "python3 -m studies.frontier") -> dict:
    """Run the sweep and write ``frontier.csv``, ``frontier.md``, ``survivors.csv``, ``meta.json`` and the plot."""
    from planner.retrieval.postfilter import simulate_survivors, starvation_case

    started = time.perf_counter()
    notes = []
    files = ["frontier.csv", "survivors.csv", "frontier.md", "meta.json"]
    # the folder first: a bad --out is one line before half a minute of work, not after
    with replacing_folder(out, keep=lambda n: n in FILES) as swap:
        retrieval = Retrieval()
        cals = shipped_calibrators()
        ratios = QUICK_RATIOS if quick else RATIOS
        rows = sweep(retrieval, cals, ratios=ratios, seed=seed)
        surv = survivors_on_corpus(retrieval, cals)
        sim = simulate_survivors(20, 0.15, draws=2000, seed=seed)
        case = starvation_case()
        binom = {"k": sim.k, "s": sim.s, "draws": sim.draws, "expected": sim.expected, "measured": sim.measured,
                 "lo": sim.lo, "hi": sim.hi, "within": sim.within, "starving_post": case["postfiltered"],
                 "starving_accepted": case["accepted"]}
        queries = retrieval.corpus.split("test")
        meta = {"command": command, "seed": seed, "quick": quick, "queries": len(queries),
                "outages": sum(1 for q in queries if outages(retrieval.corpus, q.id, seed)),
                "calibrators": [c.id for c in cals.calibrators], "machine": f"{platform.machine()}, "
                f"Python {platform.python_version()}", "limit": LIMIT, "ratios": list(ratios), "ks": list(KS),
                "postfilter_simulation": binom}
        write_text(Path(swap.path) / "frontier.csv", _csv(rows, COLUMNS))
        write_text(Path(swap.path) / "survivors.csv", _csv(surv, list(surv[0])))
        if plot:
            try:
                _plot(rows, Path(swap.path) / "frontier.png")
                files.append("frontier.png")
            except ImportError:
                notes.append("no plot: matplotlib is not installed (pip install matplotlib)")
        meta["seconds"] = time.perf_counter() - started
        write_text(Path(swap.path) / "frontier.md", _markdown(rows, surv, binom, meta))
        write_text(Path(swap.path) / "meta.json", json.dumps(meta, indent=2) + "\n")
    return {"rows": len(rows), "files": files, "notes": notes, "seconds": meta["seconds"]}


if __name__ == "__main__":  # python3 -m studies.frontier [--quick] [--out DIR] [--seed N]: planner accept frontier
    import sys

    from planner.cli import main

    sys.exit(main(["accept", "frontier", *sys.argv[1:]]))
