"""An exploring logging policy: epsilon-greedy over one-step, with the propensity of every choice.

A log written by a deterministic policy only ever holds what that policy
acquires: a source it never buys (a prerequisite chain behind a source it
trusts, say) is never logged, and calibration cannot correct it. A log
written by ``explore:EPS:SEED`` holds every eligible source with positive
probability at every step, and each acquisition carries the probability
the policy had of choosing it there (its *propensity*), which the session
stores in the outcome log (``docs/outcome-log.md``) so that a reader can
reweight the log or size what it holds.

The randomised rule, at a node with eligible observations ``E`` (admitted,
available, affordable, not taken: the same hard gates and budget as every
policy) and one-step's choice ``g`` (an observation, or stop):

- ``P(o) = (1 - EPS) [g = o] + EPS / |E|`` for every ``o`` in ``E``;
- ``P(stop) = (1 - EPS) [g = stop]``; with ``E`` empty, stop with probability 1.

The draw is a deterministic function of the node and ``SEED``: the uniform is
the BLAKE2b hash of the seed and the node's seen outcomes (one entry per
observation, so the order they were seen in does not matter), mapped to
``[0, 1)``, and the choice is the inverse CDF over ``E`` in file order, then
stop. The same node under the same spec gives the same decision (contract
point 1); a log with a fresh seed per session draws its sessions
independently, and the propensities are the probabilities of the rule
above, over that uniform.
"""

from __future__ import annotations

import hashlib

import attrs
import numpy as np

from planner.errors import PolicyError
from planner.node import Decision
from planner.policies.base import Policy, pick_best
from planner.policies.onestep import one_step_table

__all__ = ["Explore", "node_uniform", "explore_distribution"]


def node_uniform(seed: int, outcome_of) -> float:
    """A uniform in [0, 1) that is a deterministic function of `seed` and a node's seen outcomes.

    >>> u = node_uniform(3, np.array([-1, 0, -1]))
    >>> 0.0 <= u < 1.0, u == node_uniform(3, np.array([-1, 0, -1])), u == node_uniform(4, np.array([-1, 0, -1]))
    (True, True, False)
    """
    h = hashlib.blake2b(digest_size=8)
    h.update(int(seed).to_bytes(8, "little", signed=False))
    h.update(np.ascontiguousarray(outcome_of, dtype=np.int64).tobytes())
    return int.from_bytes(h.digest(), "little") / 2.0**64


def explore_distribution(eps: float, eligible, greedy) -> tuple:
    """``(probabilities float64[O], stop probability)`` of the exploring rule at a node.

    `eligible` is the node's mask, `greedy` one-step's choice (an index or None).

    >>> p, stop = explore_distribution(0.5, np.array([True, False, True]), 2)
    >>> p.tolist(), stop
    ([0.25, 0.0, 0.75], 0.0)
    >>> p, stop = explore_distribution(0.5, np.array([True, False, True]), None)
    >>> p.tolist(), stop
    ([0.25, 0.0, 0.25], 0.5)
    """
    eligible = np.asarray(eligible, dtype=bool)
    p = np.zeros(len(eligible))
    n = int(eligible.sum())
    if n == 0:
        return p, 1.0
    p[eligible] = eps / n
    if greedy is None:
        return p, 1.0 - eps
    p[greedy] += 1.0 - eps
    return p, 0.0


@attrs.frozen
class Explore(Policy):
    """Epsilon-greedy over the one-step rule, randomised by a seed, with known propensities.

    With probability ``1 - eps`` it does what one-step does (acquire its
    choice, or stop); with probability ``eps`` it acquires an eligible
    observation chosen uniformly. Each admitted row of the candidate table
    carries its ``propensity`` (the probability of being chosen at this
    node) beside one-step's EVSI, penalty and net; ``info`` holds the
    chosen one's ``propensity`` and the ``stop_propensity``. The session
    logs the acquired row's propensity with the acquisition.

    Examples
    --------
    >>> import planner
    >>> s = planner.Session(planner.load_domain("payment_release"), "explore:0.5:1")
    >>> step = s.next()
    >>> step.observation, step.info["propensity"]
    ('manager_message', 0.25)
    >>> {r.observation: r.extra["propensity"] for r in step.candidates if "propensity" in r.extra}
    {'approval_registry': 0.75, 'manager_message': 0.25}
    """

    eps: float = attrs.field(converter=float)
    seed: int = attrs.field(converter=int)

    name = "explore"
    arg = "EPS:SEED"
    forms = ("explore:EPS:SEED",)
    summary = ("logging policy: epsilon-greedy over one-step, randomised by SEED (EPS in [0, 1]), "
               "each acquisition's propensity logged")
    study = {}  # not compared by the depth study: a logger

    @classmethod
    def from_arg(cls, arg, spec):
        eps_text, sep, seed_text = (arg or "").partition(":")
        try:
            eps = float(eps_text)
        except ValueError:
            eps = float("nan")
        if not sep or not 0.0 <= eps <= 1.0:
            raise PolicyError(f"policy '{spec[:60]}': expected explore:EPS:SEED with EPS a number in [0, 1]")
        try:
            seed = int(seed_text)
        except ValueError:
            seed = -1
        if not 0 <= seed <= 2**63 - 1:
            raise PolicyError(f"policy '{spec[:60]}': the seed after EPS must be an integer from 0 to 2**63-1")
        return cls(eps=eps, seed=seed)

    @property
    def spec(self) -> str:
        return f"explore:{self.eps!r}:{self.seed}"

    def _draw(self, node, net):
        c = node.compiled
        greedy = pick_best(net, c.penalty, node.eligible)
        p, stop = explore_distribution(self.eps, node.eligible, greedy)
        u = node_uniform(self.seed, node.outcome_of)
        acc = 0.0
        for o in np.flatnonzero(p > 0):
            acc += p[o]
            if u < acc:
                return int(o), p, stop
        if stop > 0:
            return None, p, stop
        return int(np.flatnonzero(p > 0)[-1]), p, stop  # rounding left the sum just under u

    def decide(self, node):
        net, rows = one_step_table(node)
        o, p, stop = self._draw(node, net)
        rows = [attrs.evolve(r, extra={**r.extra, "propensity": float(p[k])}) if r.status == "admitted"
                and node.eligible[k] else r for k, r in enumerate(rows)]
        info = {"explore": self.eps, "stop_propensity": float(stop)}
        if o is not None:
            info["propensity"] = float(p[o])
        return Decision(observe=o, candidates=tuple(rows), info=info)

    def choose(self, node):
        from planner.policies.onestep import one_step_values

        return self._draw(node, one_step_values(node) - node.compiled.penalty)[0], False
