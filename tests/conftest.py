"""Shared fixtures: the shipped domains and tiny hand-made ones."""

from __future__ import annotations

import pathlib

import pytest
from hypothesis import HealthCheck, settings

import planner

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
