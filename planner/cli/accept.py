"""``planner accept ...``: retrieval, calibration, acceptance and settlement of a query, from the command line.

- ``planner accept query QUERY_ID`` (or ``--text TEXT``): one query through
  BM25, the calibrators, the acceptance rule and the traversal; prints the
  settlement and its receipt (``--json``: the receipt itself);
- ``planner accept queries``: the corpus' queries;
- ``planner accept calibrate``: fit one calibrator per index, print the
  reliability by probability bucket and by stratum (held-out test split
  beside the calibration split), write them (``--out``);
- ``planner accept redact RECEIPT``: a settlement receipt as a consumer with
  the given entitlements may see it;
- ``planner accept postfilter``: the post-filter anti-pattern against the
  independent-selectivity model, and the starving list;
- ``planner accept frontier``: the frontier study (table, plot);
- ``planner accept likelihoods``: the settlement likelihoods the
  ``policy_search`` domain declares, measured;
- ``planner accept plan QUERY_ID``: a planner session on ``policy_search``
  whose observation is this query's settlement;
- ``planner accept corpus --out FILE``: write the generated corpus.

Everything that needs BM25 needs the ``retrieval`` extra (``bm25s``); without
it, one line says so.
"""

from __future__ import annotations

import json

from planner.io.atomic import write_text
from planner.model.caller import Caller
from planner.cli.common import Once, parse_pairs, quote, seed_int
from planner.errors import PlannerError

__all__ = ["register"]


# --------------------------------------------------------------------------
# shared option handling


def _corpus(args):
    from planner.retrieval.corpus import load_corpus, read_corpus

    return read_corpus(args.corpus) if getattr(args, "corpus", None) else load_corpus()


def _retrieval(args):
    from planner.retrieval.pipeline import Retrieval

    return Retrieval(_corpus(args))


def _given_calibrators(args):
    """The calibrator file the options name (read before any index is built), or None."""
    from planner.retrieval.pipeline import read_calibrators

    return read_calibrators(args.calibrators) if getattr(args, "calibrators", None) else None


def _calibrators(args, retrieval):
    """The calibrators when no file is named: the shipped ones, or fitted afresh for another corpus."""
    from planner.retrieval.pipeline import shipped_calibrators

    if getattr(args, "corpus", None):  # another corpus: the shipped calibrators belong to the shipped one
        return retrieval.fit(method=getattr(args, "method", "isotonic") or "isotonic")
    return shipped_calibrators()


def _losses(args):
    from planner.retrieval.acceptance import Losses
    from planner.retrieval.errors import QueryError

    c_r = None if args.no_abstain else args.c_r
    try:
        return Losses(c_fp=args.c_fp, c_fn=args.c_fn, c_r=c_r)
    except QueryError as e:
        raise PlannerError(f"--c-fp/--c-fn/--c-r: {e}") from None


def _budget(args):
    from planner.retrieval.errors import QueryError
    from planner.retrieval.topk import QueryBudget

    try:
        return QueryBudget(candidates=args.max_candidates, scoring_tokens=args.max_scoring_tokens,
                           time_ms=args.max_time_ms, context_tokens=args.context_tokens)
    except QueryError as e:
        raise PlannerError(f"{e} (--max-candidates, --max-scoring-tokens, --max-time-ms, --context-tokens)") from None


def _date(text):
    import datetime as _dt

    if text is None:
        return None
    try:
        return _dt.date.fromisoformat(text)
    except ValueError:
        raise PlannerError(f"--decision-date {quote(text)}: not an ISO date (for example 2026-06-30)") from None


def _refuse_after(items) -> dict:
    out = {}
    for k, v in parse_pairs(items, "--refuse-after").items():
        try:
            n = int(v)
        except ValueError:
            raise PlannerError(f"--refuse-after {k}={v}: not a whole number of pages") from None
        if n < 0:
            raise PlannerError(f"--refuse-after {k}={v}: must be >= 0")
        out[k] = n
    return out


def _query(args, corpus):
    from planner.retrieval.corpus import Query

    if args.text is not None:
        if args.query_id is not None:
            raise PlannerError("give a query id or --text, not both")
        if not args.text.strip() or len(args.text) > 4000:
            raise PlannerError("--text: give the query's words (at most 4,000 characters)")
        return Query(id="adhoc", text=args.text, split="test",
                     kinds=tuple(args.kind) if args.kind else None,
                     languages=tuple(args.language) if args.language else None,
                     max_age_days=args.max_age_days)
    if args.query_id is None:
        raise PlannerError("give a query id (planner accept queries lists them) or --text TEXT")
    if args.kind or args.language or args.max_age_days is not None:
        raise PlannerError("--kind, --language and --max-age-days go with --text (a corpus query has its own filters)")
    return _corpus_query(corpus, args.query_id)


def _corpus_query(corpus, query_id: str):
    """The corpus query of that id; an unknown one says how to ask free text (``--text``)."""
    from planner.retrieval.errors import CorpusError

    try:
        return corpus.query(query_id)
    except CorpusError as e:
        raise PlannerError(f"{e}; to ask free text, give it as --text {quote(query_id, 40)}") from None


# --------------------------------------------------------------------------
# the readable receipt


_SETTLEMENT_TEXT = {
    "complete": "complete: {delivered} delivered, the limit",
    "partial": "partial: {delivered} delivered, fewer than the limit, and the eligible universe is exhausted",
    "empty": "empty: nothing eligible met the acceptance policy",
    "abstained": "abstained: nothing included; {abstained} too uncertain, routed to review",
    "over_budget": "over_budget ({dimension}): the budget cut the result short ({delivered} delivered)",
    "unavailable": "unavailable: {sources} did not serve the query ({delivered} delivered from the rest)",
    "withheld": "withheld: nothing delivered; {withheld} the policy would include are behind an access boundary",
}


def settlement_line(s: dict) -> str:
    """One line for a receipt's (or a view's) settlement block.

    >>> settlement_line({"kind": "withheld", "withheld": 3, "delivered": 0, "abstained": 0, "dimension": None,
    ...                  "sources": [], "withheld_by_label": {"confidential": 3}})
    'withheld: nothing delivered; 3 the policy would include are behind an access boundary (confidential 3)'
    """
    text = _SETTLEMENT_TEXT[s["kind"]].format(delivered=s["delivered"], abstained=s["abstained"],
                                              withheld=s["withheld"], dimension=s["dimension"],
                                              sources=", ".join(s["sources"]))
    if s.get("withheld_by_label") and s["kind"] != "withheld":
        text += f"; {s['withheld']} withheld"
    if s.get("withheld_by_label"):
        text += " (" + ", ".join(f"{k} {v}" for k, v in sorted(s["withheld_by_label"].items())) + ")"
    return text


def format_receipt(r: dict) -> str:
    """The readable form of a settlement receipt (what ``planner accept query`` prints)."""
    q = r["query"]
    filters = []
    if q["kinds"]:
        filters.append("kinds " + ", ".join(q["kinds"]))
    if q["languages"]:
        filters.append("languages " + ", ".join(q["languages"]))
    if q["max_age_days"] is not None:
        filters.append(f"max age {q['max_age_days']} days")
    out = [f"query {q['id']}: {q['text']!r}" + (f"  ({'; '.join(filters)})" if filters else "")]
    c = r["caller"]
    out.append(f"caller: entitlements {', '.join(c['entitlements']) or '(none)'}; decision date {c['decision_date']}")
    rule = {"accept": "ACCEPTED-TOP-K", "plain": "plain top-k", "postfilter": "post-filtered top-k (anti-pattern)"}
    line = f"rule {rule[r['rule']]}  limit {r['limit']}"
    if r["losses"]:
        L, th = r["losses"], r["thresholds"]
        line += f"  losses C_FP {L['c_fp']:g}  C_FN {L['c_fn']:g}" + (f"  C_R {L['c_r']:g}" if L["c_r"] is not None
                                                                    else "  (no abstention)")
        if th["lower"] < th["upper"]:
            line += f"  ->  exclude p < {th['lower']:.3f} <= abstain < {th['upper']:.3f} <= include"
        else:
            line += f"  ->  include at p >= {th['upper']:.3f}"
    out.append(line)
    for cal in r["calibrators"]:
        out.append(f"calibrator {cal['index']}: {cal['id']} ({cal['method']}, {cal['backend']}, {cal['n']} judgments, "
                   f"data sha256:{cal['data_sha256'][:12]}, fitted {cal['date']})")
    parts = []
    for s in r["sources"]:
        if s["status"] == "searched":
            parts.append(f"{s['name']} searched ({s['examined']} examined)")
        elif s["status"] == "rejected":
            parts.append(f"{s['name']} rejected: {'; '.join(s['reasons'])}")
        else:
            parts.append(f"{s['name']} {s['status']}: {s['why']}")
    out.append("sources: " + "; ".join(parts))
    if r["trace"]:
        out.append(f"  {'#':>3}  {'source':<14} {'rank':>4}  {'document':<13} {'label':<12} {'score':>6} {'p':>6}  "
                   f"status")
        for e in r["trace"]:
            status = e["status"]
            if e["reasons"]:
                status += ": " + "; ".join(e["reasons"])
            if e["withheld"]:
                status += " (withheld)"
            out.append(f"  {e['n']:>3}  {e['source']:<14} {e['rank']:>4}  {e['document']:<13} {e['label']:<12} "
                       f"{e['score']:>6.2f} {e['p']:>6.3f}  {status}")
    stop = r["stop"]
    out.append(f"stop: {stop['cause']}" + (f" ({stop['dimension']})" if stop["dimension"] else ""))
    out.append("settlement: " + settlement_line(r["settlement"]))
    if r["delivered"]:
        out.append("delivered: " + ", ".join(r["delivered"]))
    if r["for_review"]:
        out.append("for review: " + ", ".join(r["for_review"]))
    sp, tm = r["budget"]["spent"], r["timing"]
    first = "nothing delivered" if tm["first_accept_ms"] is None else f"first delivered at {tm['first_accept_ms']:.1f} ms"
    out.append(f"spent: {sp['candidates']:g} candidates, {sp['scoring_tokens']:g} scoring tokens, "
               f"{sp['context_tokens']:g} context tokens, {sp['time_ms']:.1f} ms modelled ({first}); "
               f"wall {tm['wall_ms']:.1f} ms")
    return "\n".join(out)


def format_view(v: dict) -> str:
    """The readable form of a consumer view."""
    out = [f"query {v['query']['id']}: {v['query']['text']!r}  (for a consumer holding: "
           f"{', '.join(v['redacted_for']) or 'no entitlement'})"]
    if v["sources"]:
        out.append("sources: " + "; ".join(f"{s['name']} {s['status']}" + (f": {'; '.join(s['reasons'])}"
                                                                           if s["reasons"] else "")
                                           for s in v["sources"]))
    for d in v["documents"]:
        status = d["status"] + (": " + "; ".join(d["reasons"]) if d["reasons"] else "") + \
            (" (withheld)" if d["withheld"] else "")
        out.append(f"  {d['source']:<14} {d['document']:<13} {d['label']:<12} {status}")
    out.append(f"stop: {v['stop']['cause']}" + (f" ({v['stop']['dimension']})" if v["stop"]["dimension"] else ""))
    out.append("settlement: " + settlement_line(v["settlement"]))
    return "\n".join(out)


# --------------------------------------------------------------------------
# handlers


def cmd_query(args) -> int:
    from planner.retrieval.receipt import consumer_view, settlement_receipt

    # every option is checked before any index is built (a bad one is one line, at once, with or without bm25s)
    if args.consumer and not args.view:
        raise PlannerError("--consumer goes with --view")
    losses = _losses(args)
    budget = _budget(args)
    date = _date(args.decision_date)
    refuse = _refuse_after(args.refuse_after)
    if not 1 <= args.limit <= 1000:
        raise PlannerError(f"--limit {args.limit}: must be a whole number from 1 to 1000")
    corpus = _corpus(args)
    query = _query(args, corpus)
    for name in list(args.down) + list(refuse):
        corpus.source(name)
    given = _given_calibrators(args)
    retrieval = _retrieval_for(args, corpus)
    cals = given or _calibrators(args, retrieval)
    caller = Caller(entitlements=args.entitlement, purpose=args.purpose)
    t = retrieval.run(query, calibrators=cals, losses=losses, limit=args.limit, caller=caller, budget=budget,
                      rule=args.rule, down=args.down, refuse_after=refuse, decision_date=date,
                      audience=args.consumer if args.view else None)
    receipt = settlement_receipt(t)
    if args.receipt:
        write_text(args.receipt, json.dumps(receipt, indent=2) + "\n")
    if args.view:
        view = consumer_view(receipt, args.consumer)
        print(json.dumps(view, indent=2) if args.json else format_view(view))
        return 0
    print(json.dumps(receipt, indent=2) if args.json else format_receipt(receipt))
    return 0


def _retrieval_for(args, corpus):
    from planner.retrieval.pipeline import Retrieval

    return Retrieval(corpus)


def cmd_queries(args) -> int:
    corpus = _corpus(args)
    if args.split is not None and args.split not in ("calibration", "test"):
        raise PlannerError(f"--split {quote(args.split)}: calibration or test")
    for q in corpus.queries:
        if args.split and q.split != args.split:
            continue
        print(f"{q.id}  {q.split:<11}  {len(q.relevant)} relevant  {q.text}")
    return 0


def cmd_calibrate(args) -> int:
    from planner.retrieval.calibration import reliability

    if not 1 <= args.bins <= 100:
        raise PlannerError(f"--bins {args.bins}: must be from 1 to 100")
    date = _date(args.date)
    retrieval = _retrieval(args)
    cals = retrieval.fit(method=args.method, backend=args.backend, date=date)
    report = {"calibrators": [c.identity() for c in cals.calibrators], "reliability": {}}
    lines = []
    for split in ("calibration", "test"):
        js = retrieval.judgments(split, stratum=args.stratum)
        for cal in cals.calibrators:
            rel = reliability(cal, js[cal.index], bins=args.bins)
            report["reliability"].setdefault(cal.index, {})[split] = rel.to_json()
            o = rel.overall
            if not o["n"]:
                lines.append(f"{cal.index} on {split} judgments: none (no {split} query matches this index)")
                continue
            lines.append(f"{cal.index} on {split} judgments ({o['n']}, {int(round(o['observed'] * o['n']))} relevant): "
                         f"ECE {o['ece']:.3f}  Brier {o['brier']:.4f}  log loss {o.get('log_loss', 0):.3f}")
            if split == "test":
                for b in rel.buckets:
                    if b["n"]:
                        lo, hi = b["interval"]
                        lines.append(f"    p in [{b['lo']:.1f}, {b['hi']:.1f}{']' if b['hi'] == 1 else ')'}: "
                                     f"{b['n']:>4} judged, mean p {b['mean_p']:.3f}, observed {b['observed']:.3f} "
                                     f"[{lo:.3f}, {hi:.3f}]{'' if b['within'] else '  <- outside'}")
                for name, g in rel.strata:
                    lines.append(f"    {args.stratum} {name:<14} {g['n']:>4} judged, mean p {g['mean_p']:.3f}, "
                                 f"observed {g['observed']:.3f}, ECE {g['ece']:.3f}")
    if args.out:
        write_text(args.out, json.dumps(cals.to_json(), indent=1) + "\n")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for c in cals.calibrators:
            print(f"{c.index}: {c.id}  {c.method} ({c.backend}), {c.n} judgments ({c.n_relevant} relevant), "
                  f"data sha256:{c.data_sha256[:12]}, {c.date}")
        print("\n".join(lines))
        if args.out:
            print(f"wrote {args.out}")
    return 0


def cmd_redact(args) -> int:
    from planner.retrieval.receipt import consumer_view, read_settlement_receipt

    view = consumer_view(read_settlement_receipt(args.receipt), args.entitlement)
    print(json.dumps(view, indent=2) if args.json else format_view(view))
    return 0


def cmd_postfilter(args) -> int:
    from planner.retrieval.postfilter import simulate_survivors, starvation_case

    if not 1 <= args.k <= 1000:
        raise PlannerError(f"--k {args.k}: must be from 1 to 1000")
    if not 0 <= args.s <= 1:
        raise PlannerError(f"--s {args.s}: a selectivity is a probability from 0 to 1")
    if not 1 <= args.draws <= 100_000:
        raise PlannerError(f"--draws {args.draws}: must be from 1 to 100,000")
    if args.seed < 0:
        raise PlannerError(f"--seed {args.seed}: must be >= 0")
    r = simulate_survivors(args.k, args.s, draws=args.draws, seed=args.seed)
    print(f"post-filtered top-{r.k}, selectivity {r.s:g}: Binomial({r.k}, {r.s:g}) expects {r.expected:.3f} survivors; "
          f"measured mean over {r.draws} seeded draws {r.measured:.3f} (95% interval of the mean "
          f"[{r.lo:.3f}, {r.hi:.3f}]: {'within' if r.within else 'OUTSIDE'})")
    case = starvation_case()
    print(f"starving list: the 10 best candidates are confidential, {case['eligible_below_cutoff']} eligible sit below; "
          f"post-filtered top-10 delivers {case['postfiltered']} ({case['post'].settlement.kind}), ACCEPTED-TOP-K "
          f"(limit 5) delivers {case['accepted']} ({case['acc'].settlement.kind}, {case['acc'].examined} examined)")
    return 0


def cmd_frontier(args) -> int:
    from planner.cli.bench import load_study

    if args.seed < 0:
        raise PlannerError(f"--seed {args.seed}: must be >= 0")
    study = load_study("studies.frontier")
    out = args.out or study.DEFAULT_OUT
    command = "planner accept frontier" + (f" --out {out}" if args.out else "") + (" --quick" if args.quick else "") \
        + (f" --seed {args.seed}" if args.seed else "") + (" --no-plot" if args.no_plot else "")
    res = study.run_frontier(out=out, quick=args.quick, seed=args.seed, plot=not args.no_plot, command=command)
    for note in res["notes"]:
        print(f"note: {note}")
    print(f"wrote {', '.join(res['files'])} to {out} ({res['rows']} rows, {res['seconds']:.0f} s)")
    return 0


def cmd_likelihoods(args) -> int:
    from planner.retrieval.tool import OUTCOMES, WORLDS, measure_likelihoods

    given = _given_calibrators(args)
    retrieval = _retrieval(args)
    m = measure_likelihoods(retrieval, given or _calibrators(args, retrieval), split=args.split, seed=args.seed)
    if args.json:
        print(json.dumps({"split": m.split, "queries": m.queries, "counts": m.counts, "rows": m.rows,
                          "failure_rate": m.failure_rate, "unavailable": m.unavailable, "total": m.total,
                          "mean_scoring_tokens": m.mean_scoring_tokens, "mean_time_ms": m.mean_time_ms}, indent=2))
        return 0
    print(f"settlements of the policy_search query on the {m.split} split (limit 3, C_FP 4, C_FN 3, C_R 1, caller "
          f"staff; counts with every provider up, then rows smoothed by half a count):")
    print(f"  {'world':<11} {'queries':>7}  " + "  ".join(f"{k:>11}" for k in OUTCOMES))
    for w in WORLDS:
        print(f"  {w:<11} {m.queries[w]:>7}  " + "  ".join(f"{m.counts[w][k]:>4} {m.rows[w][k]:.3f}"
                                                         .rjust(11) for k in OUTCOMES))
    print(f"  unavailable with outages drawn at the declared failure rates (seed {args.seed}): {m.unavailable} of "
          f"{m.total} -> failure_rate {m.failure_rate:.3f}")
    print(f"  mean scoring tokens {m.mean_scoring_tokens:.1f}, mean modelled time {m.mean_time_ms:.1f} ms")
    return 0


def cmd_plan(args) -> int:
    import planner
    from planner.cli.common import policy_from_args
    from planner.cli.format import format_trace
    from planner.retrieval.tool import SettlementTool

    policy = policy_from_args(args.policy, args)
    corpus = _corpus(args)
    query = _corpus_query(corpus, args.query_id)
    for name in args.down:
        corpus.source(name)
    domain = planner.load_domain(args.domain)
    if not any(o.name == "policy_index_search" for o in domain.observations):
        raise PlannerError(f"{args.domain}: has no observation policy_index_search for the retrieval tool")
    given = _given_calibrators(args)
    retrieval = _retrieval_for(args, corpus)
    tool = SettlementTool(retrieval=retrieval, query=query, calibrators=given or _calibrators(args, retrieval),
                          caller=Caller(entitlements=args.entitlement or ["staff"]), down=tuple(args.down))
    session = planner.Session(domain, policy, caller=Caller(entitlements=args.entitlement or ["staff"]))
    session.run({"policy_index_search": tool})
    receipt = session.receipt()
    if args.json:
        print(json.dumps({"session": receipt, "settlements": tool.receipts}, indent=2))
        return 0
    print(format_trace(receipt))
    for r in tool.receipts:
        print()
        print(f"policy_index_search ran query {r['query']['id']} ({r['query']['text']!r}):")
        print("  settlement: " + settlement_line(r["settlement"]))
        print("  calibrators: " + ", ".join(c["id"] for c in r["calibrators"]))
    return 0


def cmd_corpus(args) -> int:
    from planner.retrieval.corpus import generate_corpus

    if args.seed < 0:
        raise PlannerError(f"--seed {args.seed}: must be >= 0")
    c = generate_corpus(args.seed)
    write_text(args.out, json.dumps(c.to_json(), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}: {len(c.documents)} documents, {len(c.queries)} queries, {len(c.sources)} sources "
          f"(seed {args.seed})")
    return 0


# --------------------------------------------------------------------------
# the parser


def _add_corpus(p, calibrators=True):
    p.add_argument("--corpus", metavar="FILE", action=Once,
                   help="a corpus file (planner accept corpus --out FILE); default: the shipped corpus")
    if calibrators:
        p.add_argument("--calibrators", metavar="FILE", action=Once,
                       help="a calibrator file (planner accept calibrate --out FILE); default: the shipped ones "
                            "(fitted afresh for another --corpus)")


def register(sub) -> None:
    from planner.cli.common import Parser, add_policy_arg

    acc = sub.add_parser("accept", help="retrieval for a machine reader: calibrated acceptance, ACCEPTED-TOP-K, "
                                        "typed settlements (accept COMMAND --help)")
    cmds = acc.add_subparsers(dest="accept_command", parser_class=Parser)
    acc.set_defaults(func=lambda args: _no_subcommand(acc))

    p = cmds.add_parser("query", help="run one query through retrieval, calibration, acceptance and settlement")
    p.add_argument("query_id", nargs="?",
                   help="a query of the corpus (planner accept queries lists them); free text goes in --text")
    p.add_argument("--text", action=Once, help="an ad-hoc query instead (no relevance judgments)")
    p.add_argument("--kind", action="append", default=[], help="with --text: a kind the reader accepts (repeatable)")
    p.add_argument("--language", action="append", default=[],
                   help="with --text: a language the reader accepts (repeatable)")
    p.add_argument("--max-age-days", type=int, action=Once, help="with --text: older documents are stale")
    p.add_argument("--rule", choices=("accept", "plain", "postfilter"), default="accept", action=Once,
                   help="accept: ACCEPTED-TOP-K (default); plain: the first LIMIT eligible, no acceptance rule; "
                        "postfilter: the top LIMIT first, the gates after (the anti-pattern)")
    p.add_argument("--limit", type=int, default=3, action=Once, help="results wanted (default 3)")
    p.add_argument("--c-fp", type=float, default=4.0, action=Once,
                   help="loss of including an irrelevant candidate (default 4)")
    p.add_argument("--c-fn", type=float, default=3.0, action=Once,
                   help="loss of excluding a relevant candidate (default 3)")
    p.add_argument("--c-r", type=float, default=1.0, action=Once, help="loss of abstaining, routing to review (default 1)")
    p.add_argument("--no-abstain", action="store_true", help="no abstention: include or exclude only")
    p.add_argument("--entitlement", action="append", default=[], metavar="E",
                   help="an entitlement the caller holds (repeatable): staff, confidential.read, legal.restricted, "
                        "hr.read")
    p.add_argument("--purpose", action=Once, help="the caller's purpose (sources may serve only some)")
    p.add_argument("--decision-date", metavar="DATE", action=Once,
                   help="ISO date the ages are taken at (default: the corpus' snapshot date)")
    p.add_argument("--max-candidates", type=int, action=Once, help="query budget: candidates examined")
    p.add_argument("--max-scoring-tokens", type=int, action=Once, help="query budget: tokens scored")
    p.add_argument("--max-time-ms", type=float, action=Once, help="query budget: modelled milliseconds")
    p.add_argument("--context-tokens", type=int, action=Once, help="the reader's context: tokens delivered")
    p.add_argument("--down", action="append", default=[], metavar="SOURCE",
                   help="a source that is unavailable for this query (repeatable)")
    p.add_argument("--refuse-after", action="append", default=[], metavar="SOURCE=PAGES",
                   help="a source that refuses the work after PAGES pages (repeatable)")
    _add_corpus(p)
    p.add_argument("--json", action="store_true", help="print the receipt (JSON)")
    p.add_argument("--receipt", metavar="FILE", action=Once, help="also write the receipt to FILE")
    p.add_argument("--view", action="store_true",
                   help="run the query for a consumer (holding the --consumer entitlements, none if not given: "
                        "nothing it may not see is walked) and print its view instead")
    p.add_argument("--consumer", action="append", default=[], metavar="E",
                   help="with --view: an entitlement the consumer holds (repeatable)")
    p.set_defaults(func=cmd_query)

    p = cmds.add_parser("queries", help="list the corpus' queries")
    p.add_argument("--split", action=Once, help="calibration or test")
    _add_corpus(p, calibrators=False)
    p.set_defaults(func=cmd_queries)

    p = cmds.add_parser("calibrate", help="fit one calibrator per index; reliability by bucket and by stratum")
    p.add_argument("--method", choices=("isotonic", "platt"), default="isotonic", action=Once,
                   help="isotonic (pool-adjacent-violators, the default) or platt (logistic)")
    p.add_argument("--backend", choices=("numpy", "sklearn"), default="numpy", action=Once,
                   help="numpy (default) or sklearn (scikit-learn, the retrieval extra)")
    p.add_argument("--stratum", choices=("kind", "language", "label"), default="kind", action=Once,
                   help="what the reliability report groups by (default kind)")
    p.add_argument("--bins", type=int, default=10, action=Once, help="probability buckets (default 10)")
    p.add_argument("--date", action=Once, help="the date the calibrators carry (default today)")
    p.add_argument("--out", metavar="FILE", action=Once, help="write the calibrators to FILE")
    p.add_argument("--json", action="store_true", help="print identities and reliability as JSON")
    _add_corpus(p, calibrators=False)
    p.set_defaults(func=cmd_calibrate)

    p = cmds.add_parser("redact", help="a settlement receipt as a consumer with these entitlements may see it")
    p.add_argument("receipt", help="a settlement receipt (planner accept query ... --receipt FILE)")
    p.add_argument("--entitlement", action="append", default=[], metavar="E",
                   help="an entitlement the consumer holds (repeatable)")
    p.add_argument("--json", action="store_true", help="print the view as JSON")
    p.set_defaults(func=cmd_redact)

    p = cmds.add_parser("postfilter", help="post-filtered top-k against Binomial(k, s), and the starving list")
    p.add_argument("--k", type=int, default=20, action=Once, help="the cut (default 20)")
    p.add_argument("--s", type=float, default=0.15, action=Once, help="the selectivity (default 0.15)")
    p.add_argument("--draws", type=int, default=2000, action=Once, help="seeded ranked lists (default 2000)")
    p.add_argument("--seed", type=seed_int, default=0, action=Once, help="seed of the ranked lists (default 0)")
    p.set_defaults(func=cmd_postfilter)

    p = cmds.add_parser("frontier", help="the frontier study over thresholds and loss ratios (table, plot; needs the "
                                        "studies package of a checkout)")
    p.add_argument("--out", metavar="DIR", action=Once, help="output folder (default studies/results/frontier)")
    p.add_argument("--quick", action="store_true", help="fewer loss ratios")
    p.add_argument("--seed", type=seed_int, default=0, action=Once, help="seed of the provider outages")
    p.add_argument("--no-plot", action="store_true", help="no PNG (the plot needs matplotlib)")
    p.set_defaults(func=cmd_frontier)

    p = cmds.add_parser("likelihoods", help="measure the settlement likelihoods policy_search declares")
    p.add_argument("--split", choices=("calibration", "test"), default="calibration", action=Once,
                   help="which queries to measure on (default calibration: the ones the domain was made from)")
    p.add_argument("--seed", type=seed_int, default=0, action=Once, help="seed of the provider outages")
    p.add_argument("--json", action="store_true", help="print the counts and rows as JSON")
    _add_corpus(p)
    p.set_defaults(func=cmd_likelihoods)

    p = cmds.add_parser("plan", help="a planner session whose observation is this query's settlement")
    p.add_argument("query_id", help="a query of the corpus")
    p.add_argument("--domain", default="policy_search", action=Once,
                   help="the domain (default policy_search; its observation policy_index_search runs the query)")
    add_policy_arg(p)
    p.add_argument("--entitlement", action="append", default=[], metavar="E",
                   help="the caller's entitlements (default staff)")
    p.add_argument("--down", action="append", default=[], metavar="SOURCE", help="an unavailable source")
    _add_corpus(p)
    p.add_argument("--json", action="store_true", help="print the session receipt and the settlement receipts")
    p.set_defaults(func=cmd_plan)

    p = cmds.add_parser("corpus", help="write the generated corpus (the shipped one is seed 13)")
    p.add_argument("--out", metavar="FILE", required=True, action=Once, help="the file to write (JSON)")
    p.add_argument("--seed", type=seed_int, default=13, action=Once, help="the generator's seed (default 13, shipped)")
    p.set_defaults(func=cmd_corpus)


def _no_subcommand(parser) -> int:
    import sys

    parser.print_help(sys.stderr)
    raise PlannerError("give an accept command (planner accept --help lists them)")

