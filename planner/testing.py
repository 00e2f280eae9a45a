"""The policy contract as code: :func:`check_policy` checks any policy against the five points of ``Policy``.

The contract is written on :class:`planner.policies.base.Policy`; this module
is the same contract, executable, in the way scikit-learn's ``check_estimator``
is for estimators. One parametrized test runs it over every registered policy
(``tests/planner/policies/test_contract.py``); a new policy passes it, or its
registration fails that test.

The checks, at the nodes of small generated domains whose hard budget binds
(the benchmark family, :func:`planner.generators.benchmark_domain`, with a
calls limit below the number of useful observations) plus the seed's payment
case, or at the nodes of the domains given:

1. *A decision is a deterministic function of the node*: the policy as given
   (warm: it decided every other node of the domain first, on one compiled
   domain) and a cold copy (a deep copy, asked on a freshly compiled domain
   with nothing decided before) give the same choice, the same ``limited``
   flag and the same candidate values (within
   :data:`~planner.tolerances.VALUE_TOL`) at every node; so do the node reached
   by the same pairs in the reverse order (a permuted history) and a repeat.
2. It only chooses an observation that is ``eligible`` at the node.
3. Its candidate table lists every observation once, in file order: taken
   rows ``taken``, rejected rows ``rejected`` with the node's first gate
   reason and no value, penalty or net (never scored), the others ``admitted``
   (and eligible: a node that masks an observation gives the reason why).
4. ``spec`` rebuilds an equal policy through :func:`planner.policies.parse_policy`.
5. :meth:`~planner.policies.base.Policy.choose` gives exactly ``decide``'s
   choice and ``limited`` flag.

A failure raises :class:`AssertionError` naming the point, the domain and the
node (its pairs), so that the message says what to fix.

>>> from planner.policies import parse_policy
>>> check_policy(parse_policy("one-step"))
"""

from __future__ import annotations

import copy
import math

from planner.compile import compile_domain
from planner.gates.admission import admit
from planner.model.domain import Domain, load_domain
from planner.node import root_node
from planner.tolerances import VALUE_TOL

__all__ = ["check_policy", "contract_domains", "POINTS"]

#: The five contract points, by number.
POINTS = {
    1: "a decision is a deterministic function of the node (cold against warm, permuted histories)",
    2: "only eligible observations are chosen",
    3: "the candidate table lists every observation once, in file order, rejected rows unscored",
    4: "spec round-trips through parse_policy",
    5: "choose equals decide's choice and limited flag",
}


def contract_domains() -> list:
    """The default domains of :func:`check_policy`: three budget-bound generated domains and the payment case.

    Each generated domain has 8 observations over 8 states behind a 2-step
    prerequisite chain, with 3 calls allowed: more useful sources than the
    budget pays for, so that a planner's budget and the hard limits bind.
    """
    from planner.generators import benchmark_domain

    out = []
    for seed in (1, 2, 3):
        d = benchmark_domain(8, 8, seed=seed, chain=2)
        d["budget"]["limits"]["calls"] = 3
        out.append(Domain.from_dict(d))
    out.append(load_domain("payment_release"))
    return out


def _nodes(policy, root, limit: int) -> list:
    """Up to `limit` nodes: the root, every child of the root, then the policy's own tree, breadth first."""
    from planner.evaluation.evaluate import policy_children

    seen, out, queue = set(), [], [root]
    for o in range(len(root.eligible)):
        if root.eligible[o]:
            queue += [child for _, _, child in policy_children(root, o)]
    while queue and len(out) < limit:
        node = queue.pop(0)
        if node.key in seen:
            continue
        seen.add(node.key)
        out.append(node)
        o, _ = policy.choose(node)
        if o is not None and node.eligible[o]:
            queue += [child for _, _, child in policy_children(node, o)]
    return out


def _pairs(node) -> list:
    return [(o, int(y)) for o, y in enumerate(node.outcome_of) if y >= 0]


def _rebuild(compiled, admission, pairs):
    node = root_node(compiled, admission)
    for o, y in pairs:
        node = node.child(o, y)
    return node


def _where(domain, node) -> str:
    c = node.compiled
    seen = ", ".join(f"{c.obs_names[o]}={c.outcome_names[o][y]}" for o, y in _pairs(node)) or "nothing seen"
    return f"on {domain.name} at the node ({seen})"


def _values(decision) -> list:
    return [(r.observation, r.status, r.value, r.penalty, r.net) for r in decision.candidates]


def _same(a, b) -> bool:
    """Two decisions alike: choice and flag exactly, candidate rows alike, values within VALUE_TOL."""
    if (a.observe, a.limited) != (b.observe, b.limited) or len(a.candidates) != len(b.candidates):
        return False
    for x, y in zip(_values(a), _values(b)):
        if x[:2] != y[:2]:
            return False
        for u, v in zip(x[2:], y[2:]):
            if (u is None) != (v is None) or (u is not None and not (
                    u == v or (math.isfinite(u) and math.isfinite(v) and abs(u - v) <= VALUE_TOL))):
                return False
    return True


def _fail(point: int, spec: str, where: str, detail: str) -> None:
    raise AssertionError(f"policy {spec}: contract point {point} ({POINTS[point]}) fails {where}: {detail}")


def check_policy(policy, *, domains=None, caller=None, nodes: int = 10, points=(1, 2, 3, 4, 5)) -> None:
    """Check `policy` against the contract of :class:`~planner.policies.base.Policy` (see the module docstring).

    Parameters
    ----------
    policy : Policy
    domains : list of Domain, optional
        Where to check it (default :func:`contract_domains`); a policy that
        needs a calibrated domain (``conservative``) is given calibrated ones.
    caller : Caller, optional
        The caller of every session.
    nodes : int
        Nodes checked per domain (the root, its children, then the policy's
        own tree): few, so that the check runs in a test suite.
    points : tuple of int
        Which contract points to check (default all five).

    Raises
    ------
    AssertionError
        The first point that fails, naming the domain and the node.
    """
    from planner.errors import PolicyError
    from planner.policies import parse_policy

    spec = policy.spec
    if 4 in points:
        try:
            again = parse_policy(spec)
        except PolicyError as e:
            _fail(4, spec, "", str(e))
        if again != policy or again.spec != spec:
            _fail(4, spec, "", f"parse_policy({spec!r}) gives {again!r}, not {policy!r}")
    for domain in (contract_domains() if domains is None else domains):
        warm_c = compile_domain(domain)
        warm_adm = admit(warm_c, caller)
        warm_nodes = _nodes(policy, root_node(warm_c, warm_adm), nodes)
        warm = [policy.decide(n) for n in warm_nodes]  # every node decided, on one compiled domain
        for node, d in zip(warm_nodes, warm):
            where = _where(domain, node)
            c = node.compiled
            if 2 in points and d.observe is not None and not node.eligible[d.observe]:
                _fail(2, spec, where, f"it chose {c.obs_names[d.observe]}, which is not eligible")
            if 3 in points:
                _check_table(spec, where, node, d)
            if 5 in points and tuple(policy.choose(node)) != (d.observe, d.limited):
                _fail(5, spec, where, f"choose gives {policy.choose(node)}, decide ({d.observe}, {d.limited})")
            if 1 in points:
                pairs = _pairs(node)
                cold_c = compile_domain(domain)
                cold = copy.deepcopy(policy).decide(_rebuild(cold_c, admit(cold_c, caller), pairs))
                if not _same(cold, d):
                    _fail(1, spec, where, f"a cold copy on a fresh compile chooses {_choice(c, cold)}, the warm "
                                          f"policy {_choice(c, d)} (or their candidate values differ)")
                permuted = policy.decide(_rebuild(warm_c, warm_adm, pairs[::-1]))
                if not _same(permuted, d):
                    _fail(1, spec, where, f"the same pairs in the reverse order give {_choice(c, permuted)}, "
                                          f"not {_choice(c, d)}")
                if not _same(policy.decide(node), d):
                    _fail(1, spec, where, "asking again gives another decision")


def _choice(c, d) -> str:
    return "stop" if d.observe is None else c.obs_names[d.observe]


def _check_table(spec, where, node, d) -> None:
    c = node.compiled
    names = [r.observation for r in d.candidates]
    if names != list(c.obs_names):
        _fail(3, spec, where, f"rows {names}, not every observation once in file order {list(c.obs_names)}")
    for o, row in enumerate(d.candidates):
        if node.outcome_of[o] >= 0:
            want = "taken"
        elif node.reasons[o]:
            want = "rejected"
            if row.reason != node.reasons[o][0]:
                _fail(3, spec, where, f"{row.observation}: reason {row.reason}, the node's is {node.reasons[o][0]}")
        else:
            want = "admitted"
            if not node.eligible[o]:  # a gate the masks apply must say so in the reasons (the stop reads them)
                _fail(3, spec, where, f"{row.observation} is not eligible, but the node gives no reason")
        if row.status != want:
            _fail(3, spec, where, f"{row.observation}: status {row.status!r}, not {want!r}")
        if want != "admitted" and (row.value, row.penalty, row.net) != (None, None, None):
            _fail(3, spec, where, f"{row.observation} is {want} but scored ({row.value}, {row.penalty}, {row.net})")
