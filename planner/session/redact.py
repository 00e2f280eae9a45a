"""Redaction: a receipt as a consumer with fewer entitlements may see it.

Who may see what
----------------
A consumer *may see* an observation iff it needs no entitlement or needs one
the consumer holds (:func:`may_see`). The purpose does not enter: a purpose
restricts what a decision may *use*, and the receipt's purpose was applied
when the decision was taken; the consumer reads that decision, it does not
take one. Freshness does not enter either (that a record is stale is no secret
of its owner). Every other observation is *hidden*: its name, its outcomes and
what its tool said appear nowhere in the redacted receipt.

An allow-list, built from scratch
---------------------------------
:func:`redact_receipt` never copies the receipt and deletes what is
dangerous; it writes a new document holding only what is listed here, each
name checked against the domain (a receipt naming a proposition, value,
action, dimension or observation the domain does not have is refused):

- the receipt's identity: schema version; the domain's name and content hash
  (the domain must hash as the receipt says); purpose; decision time; limit
  overrides; world and seed; the policy spec as the planner spells it and its
  scalar parameters; of the subject's entitlements only those the consumer
  also holds; ``redacted_for`` (the consumer's entitlements);
- every node (before and after each step, and the final one): belief
  marginals, budget spent and remaining, facts, permitted actions, action and
  expected loss. These name propositions, values, actions and dimensions,
  never sources;
- candidate rows of visible observations: name, status, value, penalty, net;
  the reasons, re-rendered from the domain's gates (:class:`planner.gates.admission.Reason`)
  with every hidden observation in a precondition shown as ``(hidden)``; the
  policy columns about the row itself (``q``, ``depth``, ``rank``,
  ``in_cut``, conservative planning's ``interval``); the dependency rule's
  unlock columns (``unlocked_value``,
  ``plan``, ``plan_success``, ``plan_penalty``, ``unlock_score``) only when
  every observation the row's precondition can depend on is visible (the plan
  would name them, its figures price them);
- hidden rows, counted only: rejected ones by gate kind in
  ``hidden_rejections`` (``permission denied``, ``purpose mismatch``, ``stale
  for this decision``, ``budget exceeded``, ``precondition unmet``: no
  dimension, no expression), the others by status in ``hidden_other``;
- a step that acquired a hidden observation: ``chosen``, ``acquired`` and
  ``outcome`` are ``(hidden)``; the nodes around it stay;
- the stop: action, expected loss, stop reason, budget dimension,
  contradictions with hidden sources shown as ``(hidden)``, unknown outcomes
  of visible observations, unresolved uncertainty, belief, budget, facts;
- ``policy_info``: the search's numbers only (``depth``, ``nodes_expanded``,
  ``memo_hits``, ``table_size``, ``tree_nodes``, ``pruned``, ``noops``, ``certain``, ``p_best``,
  ``threshold``, ``depth_rule``; conservative planning's ``quantile``,
  ``draws``, ``seed``, ``draws_used``, ``dropped_draws``, ``value_depth``);
  never a plan, a target or a choice.

Dropped: ``tool_note`` (free text a tool returned), ``domain.source`` (a
path on the producer's machine), every field not listed. A redacted receipt
cannot be redacted again or replayed (its hidden steps cannot be re-derived).
"""

from __future__ import annotations

from lookahead.layout import NOT_TAKEN
from planner.gates.admission import BUDGET, ENTITLEMENT, FRESHNESS, PRECONDITION, PURPOSE, Reason
from planner.gates.andor import precondition_graph
from planner.model.caller import Caller
from planner.errors import CallerError, PolicyError, ReceiptError, SessionError
from planner.model.parts import AllOf, AnyOf, Returned
from planner.policies import parse_policy
from planner.session.receipt import SCHEMA_VERSION, json_path, quote, validate_receipt
from planner.session.session import Session

__all__ = ["HIDDEN", "may_see", "reason_for", "redact_receipt"]

#: What a hidden observation's name (or outcome) is replaced by.
HIDDEN = "(hidden)"

#: Hidden rejected rows are counted under their gate's kind: the text of a static gate, the head of the others
#: (the dimension or the expression of a hidden row is itself something to hide).
_GATE_KIND = {**{gate: Reason(gate=gate).text() for gate in (ENTITLEMENT, PURPOSE, FRESHNESS)},
              BUDGET: "budget exceeded", PRECONDITION: "precondition unmet"}

#: Policy columns of a candidate row that describe the row alone, with their JSON types.
_ROW_COLUMNS = {"q": (int, float), "depth": (int,), "rank": (int,), "in_cut": (bool,), "interval": (list,)}
#: The dependency rule's unlock columns: they describe a plan over the row's prerequisites.
_PLAN_COLUMNS = {"unlocked_value": (int, float), "plan": (str,), "plan_success": (int, float),
                 "plan_penalty": (int, float), "unlock_score": (int, float)}
#: Numbers about a policy's search (counts, depth, thresholds); plans and targets are not listed.
_INFO_NUMBERS = ("depth", "nodes_expanded", "memo_hits", "table_size", "tree_nodes", "pruned", "noops", "certain",
                 "p_best", "threshold", "quantile", "draws", "seed", "draws_used", "dropped_draws", "value_depth")
_INFO_WORDS = {"depth_rule": ("auto",)}


def may_see(observation, entitlements) -> bool:
    """Whether a consumer holding `entitlements` may see `observation` (a :class:`planner.model.parts.Observation`).

    True iff the observation needs no entitlement or one the consumer holds;
    purposes and freshness do not enter (see the module's docstring).

    >>> import planner
    >>> d = planner.load_domain("payment_release")
    >>> [(o.name, may_see(o, [])) for o in d.observations][-1]
    ('mailbox_sweep', False)
    >>> may_see(d.observations[-1], "mailbox.read_all")
    True
    """
    held = Caller(entitlements=entitlements).entitlements
    return observation.entitlement is None or observation.entitlement in held


def reason_for(reason, domain, entitlements) -> str:
    """One gate reason as a consumer holding `entitlements` may read it (hidden observations masked).

    An integration's refusal of a tool call says this, and nothing more.

    >>> import planner
    >>> from planner.gates.admission import Reason
    >>> d = planner.load_domain("payment_release")
    >>> reason_for(Reason(gate="entitlement"), d, [])
    'permission denied'
    """
    hidden = frozenset(o.name for o in domain.observations if not may_see(o, entitlements))
    return reason.text(lambda expr: str(_mask(expr, hidden)))


class _Masked:
    """A hidden precondition term: renders as :data:`HIDDEN` inside the domain's own expression syntax."""

    def __str__(self) -> str:
        return HIDDEN


def _mask(expr, hidden: frozenset):
    """`expr` with every ``Returned`` of a hidden observation replaced by a masked term."""
    if isinstance(expr, AllOf):
        return AllOf([_mask(t, hidden) for t in expr.terms])
    if isinstance(expr, AnyOf):
        return AnyOf([_mask(t, hidden) for t in expr.terms])
    if isinstance(expr, Returned) and expr.observation in hidden:
        return _Masked()
    return expr


class _Redactor:
    """One redaction: the domain's names, who is hidden, and the nodes re-derived from the recorded outcomes."""

    def __init__(self, receipt: dict, domain, consumer: frozenset):
        self.receipt = receipt
        self.domain = domain
        self.consumer = consumer
        try:
            self.session = Session(domain, "none", caller=Caller.from_receipt(receipt))
        except CallerError as e:
            raise ReceiptError(f"the receipt's caller does not fit the domain: {e}") from None
        c = self.c = self.session.compiled
        self.hidden = frozenset(o.name for o in domain.observations if not may_see(o, consumer))
        self.obs = {n: i for i, n in enumerate(c.obs_names)}
        self.values = {p: set(v) for p, v in zip(c.prop_names, c.prop_values)}
        self.actions = set(c.action_names)
        self.dims = set(c.dims)
        self.plan_visible = self._plans_visible()

    # -- names ------------------------------------------------------------
    def known(self, name, allowed, path, what):
        if name not in allowed:
            raise ReceiptError(f"{json_path(path)}: {quote(name)} is not {what} of the domain")
        return name

    def show(self, name):
        return HIDDEN if name in self.hidden else name

    def render(self, expr) -> str:
        return str(_mask(expr, self.hidden))

    def _plans_visible(self) -> list:
        """Per observation: is every observation a prerequisite plan for it could use visible?

        Those are the observations reachable from it in the AND/OR precondition
        graph (the graph the dependency rule plans over): the ones its
        precondition names, the ones that can establish a fact it names, and
        theirs, transitively.
        """
        import networkx as nx

        g = precondition_graph(self.c)
        out = []
        for name in self.c.obs_names:
            reach = nx.descendants(g, ("observation", name))
            out.append(not any(k[0] == "observation" and k[1] in self.hidden for k in reach))
        return out

    # -- nodes ------------------------------------------------------------
    def belief(self, belief: dict, path) -> dict:
        out = {}
        for p, dist in belief.items():
            self.known(p, self.values, path + [p], "a proposition")
            out[p] = {v: float(x) for v, x in dist.items() if self.known(v, self.values[p], path + [p, v], "a value")}
        return out

    def budget(self, budget: dict, path) -> dict:
        return {side: {d: budget[side][d] for d in budget[side] if self.known(d, self.dims, path + [side, d],
                                                                              "a budget dimension")}
                for side in ("spent", "remaining")}

    def facts(self, facts: dict, path) -> dict:
        est = {}
        for p, v in facts["established"].items():
            self.known(p, self.values, path + ["established", p], "a proposition")
            est[p] = self.known(v, self.values[p], path + ["established", p], "a value")
        contra = [self.known(p, self.values, path + ["contradicted", i], "a proposition")
                  for i, p in enumerate(facts["contradicted"])]
        return {"established": est, "contradicted": contra}

    def node(self, summary: dict, path) -> dict:
        return {
            "belief": self.belief(summary["belief"], path + ["belief"]),
            "budget": self.budget(summary["budget"], path + ["budget"]),
            "facts": self.facts(summary["facts"], path + ["facts"]),
            "permitted": [self.known(a, self.actions, path + ["permitted", i], "an action")
                          for i, a in enumerate(summary["permitted"])],
            "action": self.known(summary["action"], self.actions, path + ["action"], "an action"),
            "expected_loss": summary["expected_loss"],
        }

    # -- candidate tables -------------------------------------------------
    def table(self, rows: list, node, path) -> tuple:
        """``(visible rows, hidden_rejections, hidden_other)`` of one candidate table at `node`."""
        visible, rejections, other = [], {}, {}
        for j, row in enumerate(rows):
            where = path + [j]
            name = self.known(row["observation"], self.obs, where + ["observation"], "an observation")
            o = self.obs[name]
            # the row's status and gates, re-derived: the reasons below are rendered from these, not the text
            status = "taken" if node.outcome_of[o] != NOT_TAKEN else ("rejected" if node.reasons[o] else "admitted")
            if row["status"] != status:
                raise ReceiptError(f"{json_path(where)}: {row['status']} in the receipt, {status} in the domain at "
                                   "this point (replay the receipt to find where it departs)")
            reasons = node.reasons[o] if status == "rejected" else ()
            if reasons and (row.get("reason") != reasons[0].text() or row.get("reasons") != [r.text() for r in reasons]):
                raise ReceiptError(f"{json_path(where)}: the reasons differ from the domain's gates at this point "
                                   "(replay the receipt to find where it departs)")
            if name in self.hidden:
                if reasons:
                    kind = _GATE_KIND[reasons[0].gate]
                    rejections[kind] = rejections.get(kind, 0) + 1
                else:
                    other[status] = other.get(status, 0) + 1
                continue
            out = {"observation": name, "status": status}
            if reasons:
                out["reason"] = reasons[0].text(render=self.render)
                out["reasons"] = [r.text(render=self.render) for r in reasons]
            for key in ("value", "net", "penalty"):
                if key in row:
                    out[key] = row[key]
            columns = dict(_ROW_COLUMNS, **(_PLAN_COLUMNS if self.plan_visible[o] else {}))
            for key, types in columns.items():
                if key in row and isinstance(row[key], types) and (bool in types or not isinstance(row[key], bool)):
                    out[key] = row[key]
            visible.append(out)
        return visible, rejections, other

    def policy_info(self, info) -> dict | None:
        if not isinstance(info, dict):
            return None
        out = {k: info[k] for k in _INFO_NUMBERS if isinstance(info.get(k), (bool, int, float))}
        out.update({k: info[k] for k, words in _INFO_WORDS.items() if info.get(k) in words})
        return out or None

    # -- the document -----------------------------------------------------
    def steps(self) -> list:
        out = []
        for i, entry in enumerate(self.receipt["steps"]):
            path = ["steps", i]
            if entry["step"] != i + 1:
                raise ReceiptError(f"{json_path(path + ['step'])}: {entry['step']}, expected {i + 1}")
            node = self.session.node
            before = self.node(entry["before"], path + ["before"])
            candidates, rejections, other = self.table(entry["candidates"], node, path + ["candidates"])
            chosen = entry["chosen"]
            if chosen is not None:
                self.known(chosen, self.obs, path + ["chosen"], "an observation")
            try:
                self.session.record(entry["acquired"], entry["outcome"])
            except SessionError as e:
                raise ReceiptError(f"{json_path(path)}: does not fit the domain: {e}") from None
            acquired = entry["acquired"]
            step = {
                "step": i + 1,
                "before": before,
                "candidates": candidates,
                "hidden_rejections": rejections,
                "hidden_other": other,
                "chosen": None if chosen is None else self.show(chosen),
                "acquired": self.show(acquired),
                "outcome": HIDDEN if acquired in self.hidden else entry["outcome"],
                "after": self.node(entry["after"], path + ["after"]),
            }
            step["unplanned"] = entry.get("unplanned") is True and acquired not in self.hidden
            info = self.policy_info(entry.get("policy_info"))
            if info:
                step["policy_info"] = info
            out.append(step)
        return out

    def final(self) -> dict:
        f, path = self.receipt["final"], ["final"]
        node = self.session.node
        candidates, rejections, other = self.table(f["candidates"], node, path + ["candidates"])
        contradictions = []
        for i, entry in enumerate(f["contradictions"]):
            where = path + ["contradictions", i]
            p = self.known(entry["proposition"], self.values, where + ["proposition"], "a proposition")
            claims = {}
            for v, sources in entry["claims"].items():
                self.known(v, self.values[p], where + ["claims", v], "a value")
                claims[v] = [self.show(self.known(s, self.obs, where + ["claims", v, k], "an observation"))
                             for k, s in enumerate(sources)]
            contradictions.append({"proposition": p, "claims": claims})
        unknown = [self.known(n, self.obs, path + ["unknown_outcomes", i], "an observation")
                   for i, n in enumerate(f["unknown_outcomes"])]
        dim = f["budget_dimension"]
        out = {
            "action": self.known(f["action"], self.actions, path + ["action"], "an action"),
            "expected_loss": f["expected_loss"],
            "stop_reason": f["stop_reason"],
            "budget_dimension": None if dim is None else self.known(dim, self.dims, path + ["budget_dimension"],
                                                                    "a budget dimension"),
            "contradictions": contradictions,
            "unknown_outcomes": [n for n in unknown if n not in self.hidden],
            "unresolved": self.belief(f["unresolved"], path + ["unresolved"]),
            "belief": self.belief(f["belief"], path + ["belief"]),
            "budget": self.budget(f["budget"], path + ["budget"]),
            "facts": self.facts(f["facts"], path + ["facts"]),
            "candidates": candidates,
            "hidden_rejections": rejections,
            "hidden_other": other,
        }
        info = self.policy_info(f.get("policy_info"))
        if info:
            out["policy_info"] = info
        return out

    def policy(self) -> dict:
        spec, params = self.receipt["policy"]["spec"], self.receipt["policy"]["params"]
        try:
            policy = parse_policy(spec)
        except PolicyError as e:
            raise ReceiptError(f"policy.spec: {e}") from None
        declared = policy.params()
        # a parameter is a field of the policy with a scalar value (max_nodes may differ from the spec's)
        kept = {k: v for k, v in params.items()
                if k in declared and (v is None or isinstance(v, (bool, int, float)) or v == declared[k])}
        return {"spec": policy.spec, "params": kept}

    def document(self) -> dict:
        r = self.receipt
        out = {
            "schema_version": SCHEMA_VERSION,
            "domain": {"name": self.domain.name, "content_hash": self.domain.content_hash,
                       **({"calibration": r["domain"]["calibration"]} if "calibration" in r["domain"] else {})},
            "purpose": r["purpose"],
            "entitlements": sorted(set(r["entitlements"]) & self.consumer),
            "decision_time": r["decision_time"],
            "limits_override": {d: v for d, v in r.get("limits_override", {}).items()
                                if self.known(d, self.dims, ["limits_override", d], "a budget dimension")},
            "policy": self.policy(),
            "steps": self.steps(),
        }
        if "world" in r:
            out["world"] = {p: self.known(v, self.values.get(p, ()), ["world", p], "a value")
                            for p, v in r["world"].items() if self.known(p, self.values, ["world", p],
                                                                         "a proposition")}
        if "seed" in r:
            out["seed"] = r["seed"]
        if "final" in r:
            out["final"] = self.final()
        out["redacted_for"] = sorted(self.consumer)
        return out


def redact_receipt(receipt: dict, domain, entitlements) -> dict:
    """The receipt as a consumer holding `entitlements` may see it (a new document; `receipt` is not changed).

    Parameters
    ----------
    receipt : dict
        A receipt made on `domain` (checked against the schema first).
    domain : Domain
        The domain the receipt was made on: its content hash must be the
        receipt's, since who is hidden and how reasons read come from it.
    entitlements : iterable of str, or str
        What the consumer holds (a bare string is one entitlement).

    Raises
    ------
    ReceiptError
        The receipt does not match the schema, was made on another domain
        (content hash), names something the domain does not have, disagrees
        with the domain's gates, or is itself redacted.

    Examples
    --------
    >>> import json, planner
    >>> from planner.session.simulate import simulate
    >>> d = planner.load_domain("payment_release")
    >>> s = planner.Session(d)
    >>> _ = simulate(s, {"approval": "pending"})
    >>> red = redact_receipt(s.receipt(), d, [])
    >>> red["steps"][0]["hidden_rejections"], "mailbox_sweep" in json.dumps(red)
    ({'permission denied': 1}, False)
    """
    validate_receipt(receipt)
    if "redacted_for" in receipt:
        raise ReceiptError(f"already redacted (for {', '.join(map(quote, receipt['redacted_for'])) or 'no entitlement'}); "
                           "redact the original receipt")
    if receipt["domain"]["content_hash"] != domain.content_hash:
        raise ReceiptError(f"domain content hash {receipt['domain']['content_hash']} differs from the domain's "
                           f"{domain.content_hash}: redact against the domain the receipt was made on")
    consumer = Caller(entitlements=entitlements).entitlements
    return _Redactor(receipt, domain, consumer).document()
