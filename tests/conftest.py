"""Shared fixtures: the shipped domains and tiny hand-made ones."""

from __future__ import annotations

import pathlib

import pytest
from hypothesis import HealthCheck, settings

import lookahead.jit
import planner

# The suite runs the kernels compiled, as a large domain does; tests/lookahead/test_jit.py holds the Python
# tier (what small problems run, and the doctests) equal to it, and the CLI's subprocess tests run the default.
lookahead.jit.ensure_compiled()

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOMAINS = planner.DOMAINS

settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile("ci")


@pytest.fixture(scope="session")
def payment():
    """The seed's worked payment case (approved 0.55 / pending 0.45; registry EVSI 3.911)."""
    return planner.load_domain(DOMAINS / "payment_release.yaml")


@pytest.fixture(scope="session")
def exact_lookup():
    """The negative control: one decisive, current, authorised record."""
    return planner.load_domain(DOMAINS / "exact_lookup.yaml")


@pytest.fixture(scope="session")
def identity():
    """The payment case behind an identity resolution (the seed's case for depth)."""
    return planner.load_domain(DOMAINS / "identity_registry.yaml")


@pytest.fixture(scope="session")
def kyc():
    """Three prerequisites with an OR branch before the decisive registry."""
    return planner.load_domain(DOMAINS / "kyc_chain.yaml")


def tiny_dict(**overrides) -> dict:
    """A two-world domain with one establishing and one informing source."""
    d = {
        "domain": "tiny",
        "purpose": "test",
        "world": {"x": {"values": ["a", "b"]}},
        "prior": {"x": {"a": 0.5, "b": 0.5}},
        "actions": {
            "act": {"requires": {"x": "a"}, "loss": {"x": {"a": 0, "b": 10}}},
            "wait": {"loss": 2},
        },
        "budget": {"limits": {"calls": 2}, "weights": {"calls": 0.1}},
        "observations": {
            "oracle": {
                "role": "establish",
                "bears_on": "x",
                "likelihood": {"a": {"a": 1.0}, "b": {"b": 1.0}},
                "cost": {"calls": 1},
            },
            "rumour": {
                "role": "inform",
                "bears_on": "x",
                "likelihood": {"a": {"yes": 0.7, "no": 0.3}, "b": {"yes": 0.4, "no": 0.6}},
                "cost": {"calls": 1},
            },
        },
    }
    d.update(overrides)
    return d


# --------------------------------------------------------------------------
# calibrated domains (planner.calibration.calibrate): for conservative planning


def calibrated(domain, sessions, **options):
    """`domain` calibrated on the logged `sessions` (mappings with ``acquisitions`` and ``resolution``)."""
    from planner.calibration.calibrate import calibrate, calibrated_data

    return planner.Domain.from_dict(calibrated_data(calibrate(domain, sessions, **options), date="2026-12-01"))


def simulated_log(domain, policy, n: int, *, first_seed: int = 0) -> list:
    """`n` resolved sessions of `policy` on `domain`, simulated with seeds ``first_seed, first_seed + 1, ...``."""
    from planner.session.simulate import simulate

    log = []
    for k in range(first_seed, first_seed + n):
        s = planner.Session(domain, policy)
        _, world = simulate(s, seed=k)
        log.append({"acquisitions": [(r.acquired, r.outcome) for r in s.steps], "resolution": world})
    return log


def payment_log(n: int, seed: int = 1, *, registry=(0.9, 0.1), message=(0.95, 0.05)) -> list:
    """`n` resolved sessions of the payment case that read the message and the registry.

    ``registry = (P(approved | approved), P(approved | pending))``; ``message`` likewise for ``sounds_approved``.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    log = []
    for _ in range(n):
        w = "approved" if rng.random() < 0.55 else "pending"
        y = "approved" if rng.random() < registry[0 if w == "approved" else 1] else "pending"
        m = "sounds_approved" if rng.random() < message[0 if w == "approved" else 1] else "unclear"
        log.append({"acquisitions": [("manager_message", m), ("approval_registry", y)], "resolution": {"approval": w}})
    return log


@pytest.fixture(scope="session")
def cal_payment(payment):
    """The payment case calibrated on 60 sessions: wide enough posteriors that conservatism matters.

    The conservative tests' scenarios were built at prior strength 10; the fixtures name it, so that
    the library's default (:data:`planner.calibration.calibrate.PRIOR_STRENGTH`) can change without moving them.
    The registry errs 5% of the time in its log: with the half-count prior and the world prior estimated, one that
    errs 10% leaves its one-step net's 5% quantile below 0 at 60 sessions, and the conservative one-step rule stops.
    """
    return calibrated(payment, payment_log(60, registry=(0.95, 0.05)), prior_strength=10.0)


@pytest.fixture(scope="session")
def cal_payment_tight(payment):
    """The payment case calibrated on 4,000 sessions of its own likelihoods: a concentrated posterior."""
    return calibrated(payment, payment_log(4000, registry=(0.99, 0.01), message=(0.80, 0.35)), prior_strength=10.0)


@pytest.fixture(scope="session")
def cal_kyc(kyc):
    """kyc_chain (a precondition chain) calibrated on 20 sessions of the bounded planner."""
    return calibrated(kyc, simulated_log(kyc, "bounded", 20), prior_strength=10.0)


@pytest.fixture(scope="session")
def cal_second_copy():
    """second_copy (two records of one lineage) calibrated on 20 sessions of the one-step rule."""
    d = planner.load_domain(DOMAINS / "second_copy.yaml")
    return calibrated(d, simulated_log(d, "one-step", 20), prior_strength=10.0)


def pytest_collection_modifyitems(config, items):
    """The studies' doctests run parts of the studies (a case of the depth study): slow, like the studies' tests.

    (A doctest cannot carry ``@pytest.mark.slow``; every other slow test is marked where it is written.)
    """
    for item in items:
        if item.nodeid.startswith("studies/"):
            item.add_marker(pytest.mark.slow)
