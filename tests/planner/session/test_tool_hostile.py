"""Hostile tools: whatever a tool returns or raises, the session records ``unavailable`` (or the outcome) and goes on.

Each case here escaped the guard, or was stored unbounded, on main 00fc5fb.
"""

from __future__ import annotations

import asyncio
import json
import math
import re

import numpy as np
import pytest
import yaml

import planner
from planner.session.receipt import MAX_RECEIPT_BYTES, read_receipt, validate_receipt
from planner.session.replay import replay
from planner.session.tools import MAX_NOTE_CHARS, Tool
from studies.fuzz_inputs import _TRAPPED as TRAPPED
from studies.fuzz_inputs import _TrapStr, _Unrenderable

MESSAGE = {"manager_message": lambda: "unclear"}
# the fuzzer's hostile str (every comparison and rendering raises, and is counted in TRAPPED)
CALLED = TRAPPED
TrapStr = _TrapStr


Unprintable = _Unrenderable  # its __str__ and __repr__ raise


class UnprintableArgs(Exception):
    """Its own __str__ raises and its argument's too."""

    def __init__(self):
        super().__init__(Unprintable())

    def __str__(self):
        raise RuntimeError("no str")


class Bare(BaseException):
    """Not an Exception: a library's own control-flow signal leaking out of a tool."""


class Opaque:
    def __repr__(self):
        raise ValueError("no repr")


def _raises(e):
    def tool(*_):
        raise e
    return tool


@pytest.fixture(scope="module")
def with_result(tmp_path_factory):
    raw = yaml.safe_load((planner.DOMAINS / "payment_release.yaml").read_text())
    raw.pop("checks", None)
    raw["observations"]["approval_registry"]["result"] = {"field": "status",
                                                          "values": {"APPROVED": "approved", "PENDING": "pending"}}
    path = tmp_path_factory.mktemp("d") / "payment_with_result.json"
    path.write_text(json.dumps(raw))
    return planner.load_domain(path)


def _first(domain, tool, timeout=None):
    s = planner.Session(domain)
    s.run({"approval_registry": tool, **MESSAGE}, timeout=timeout)
    step = s.steps[0]
    receipt = s.receipt()
    validate_receipt(receipt)
    assert replay(receipt, domain)[0]
    return step


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_a_str_subclass_is_read_as_plain_text_without_calling_its_methods(payment, timeout):
    CALLED.clear()
    step = _first(payment, lambda: TrapStr("pending"), timeout)
    assert step.outcome == "pending" and type(step.outcome) is str
    assert CALLED == []


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_a_str_subclass_from_a_mapper_or_a_result_block_is_plain_text(payment, with_result, timeout):
    CALLED.clear()
    step = _first(payment, Tool(lambda: {"s": 1}, mapper=lambda r: TrapStr("approved")), timeout)
    assert step.outcome == "approved" and type(step.outcome) is str
    step = _first(with_result, lambda: {"status": TrapStr("PENDING")}, timeout)
    assert step.outcome == "pending"
    step = _first(payment, lambda: TrapStr("maybe" * 100), timeout)  # not an outcome: described, not rendered
    assert step.outcome == "unavailable" and "500 characters" in step.note
    assert CALLED == []


@pytest.mark.parametrize("timeout", [None, 5.0])
@pytest.mark.parametrize("error, note", [
    (Unprintable(), "raised _Unrenderable (its message could not be read)"),
    (UnprintableArgs(), "raised UnprintableArgs (its message could not be read)"),
    (Bare("signal"), "raised Bare: signal"),
])
def test_exceptions_that_cannot_be_rendered_and_bare_base_exceptions_are_unavailable(payment, error, note, timeout):
    step = _first(payment, _raises(error), timeout)
    assert (step.outcome, step.note) == ("unavailable", note)


def test_a_mapper_raising_a_bare_base_exception_or_an_unrenderable_one_is_unavailable(payment):
    step = _first(payment, Tool(lambda: 1, mapper=_raises(Bare())))
    assert step.note == "the mapper raised Bare"
    step = _first(payment, Tool(lambda: 1, mapper=_raises(Unprintable())))
    assert step.note == "the mapper raised _Unrenderable (its message could not be read)"


@pytest.mark.parametrize("record", [np.array([1, 2]), np.array(["pending"]), np.float64("nan"), Opaque(), b"\x00" * 10**6,
                                    {"status": np.array(["PENDING"])}],
                         ids=["array", "str-array", "nan", "opaque", "bytes", "array-field"])
def test_records_that_are_not_text_are_unavailable_with_a_bounded_note(payment, with_result, record):
    for domain in (payment, with_result):
        step = _first(domain, lambda: record)
        assert step.outcome == "unavailable"
        assert step.note.isprintable() and len(step.note) <= 200
    step = _first(payment, Tool(lambda: 0, mapper=lambda r: record))
    assert step.outcome == "unavailable" and step.note.startswith("the mapper returned ")


def test_a_numpy_str_is_an_outcome(payment):
    assert _first(payment, lambda: np.str_("pending")).outcome == "pending"


async def _arun(domain, tool, timeout=None):
    s = planner.Session(domain)
    await s.arun({"approval_registry": tool, **MESSAGE}, timeout=timeout)
    return s.steps[0]


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_arun_types_the_same_faults(payment, timeout):
    async def bare():
        raise Bare("async")

    async def trap():
        return TrapStr("approved")

    CALLED.clear()
    assert asyncio.run(_arun(payment, Tool(bare), timeout)).note == "raised Bare: async"
    assert asyncio.run(_arun(payment, _raises(Unprintable()), timeout)).note == (
        "raised _Unrenderable (its message could not be read)")
    assert asyncio.run(_arun(payment, Tool(trap), timeout)).outcome == "approved"
    assert CALLED == []


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_system_exit_still_exits_and_the_receipt_says_interrupted(payment, timeout):
    s = planner.Session(payment)
    with pytest.raises(SystemExit):
        s.run({"approval_registry": _raises(SystemExit(3)), **MESSAGE}, timeout=timeout)
    assert s.stop.reason == "interrupted" and s.steps[0].note == "interrupted (SystemExit)"
    assert replay(s.receipt(), payment)[0]


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_keyboard_interrupt_still_interrupts(payment, timeout):
    s = planner.Session(payment)
    stop = s.run({"approval_registry": _raises(KeyboardInterrupt()), **MESSAGE}, timeout=timeout)
    assert stop.reason == "interrupted"


@pytest.mark.parametrize("bad", [-1, 0, 0.0, -0.0, math.nan, math.inf, -math.inf, True, False, "3", [1], 1e300],
                         ids=str)
def test_bad_timeouts_are_refused_when_built_naming_the_tool(payment, bad):
    def fetch_status():
        return "pending"

    with pytest.raises(planner.SessionError, match=r"^Tool\(.*fetch_status\): timeout") as e:
        Tool(fetch_status, timeout=bad)
    assert "\n" not in str(e.value)
    s = planner.Session(payment)
    with pytest.raises(planner.SessionError, match=r"^Session\.run: timeout"):
        s.run({"approval_registry": fetch_status, **MESSAGE}, timeout=bad)
    assert s.steps == []  # refused before any tool ran
    with pytest.raises(planner.SessionError, match=r"^Session\.arun: timeout"):
        asyncio.run(s.arun({"approval_registry": fetch_status, **MESSAGE}, timeout=bad))


@pytest.mark.parametrize("good", [0.5, 2, np.float64(1.5), np.int64(3)])
def test_good_timeouts_are_kept_as_seconds(good):
    assert Tool(lambda: "pending", timeout=good).timeout == float(good)


def test_a_70_mb_result_is_kept_bounded_with_its_length_and_sha256(payment, tmp_path):
    import hashlib

    huge = "z" * 70_000_000
    s = planner.Session(payment)
    s.run({"approval_registry": lambda: huge, **MESSAGE})
    note = s.steps[0].note
    assert s.steps[0].outcome == "unavailable"
    assert "70,000,000 characters" in note and hashlib.sha256(huge.encode()).hexdigest() in note
    assert len(note) <= MAX_NOTE_CHARS
    path = tmp_path / "r.json"
    path.write_text(json.dumps(s.receipt()))
    assert path.stat().st_size < 100_000
    assert replay(read_receipt(path), payment)[0]


def test_a_huge_note_recorded_by_hand_or_by_an_integration_is_cut_and_says_so(payment, tmp_path):
    import hashlib

    page = "<html>" + "e" * 20_000_000
    s = planner.Session(payment)
    s.next()
    s.record("approval_registry", "unavailable", note=page)
    note = s.steps[0].note
    assert len(note) <= MAX_NOTE_CHARS and note.startswith("<html>eee")
    m = re.search(r"\[cut: ([\d,]+) characters, sha256 ([0-9a-f]{64})\]$", note)
    assert m and int(m[1].replace(",", "")) == len(page) and m[2] == hashlib.sha256(page.encode()).hexdigest()
    s.end()
    path = tmp_path / "r.json"
    path.write_text(json.dumps(s.receipt()))
    assert path.stat().st_size < MAX_RECEIPT_BYTES // 100
    assert replay(read_receipt(path), payment)[0]


def test_record_refuses_a_non_string_outcome_in_one_line(payment):
    s = planner.Session(payment)
    s.next()
    with pytest.raises(planner.SessionError, match="the outcome must be a string, got ndarray"):
        s.record("approval_registry", np.array(["pending"]))


def test_an_outcome_the_model_rules_out_is_unavailable_with_why_not_an_escape():
    from conftest import tiny_dict

    d = tiny_dict()
    d["observations"]["oracle"]["likelihood"] = {"a": {"a": 1.0, "never": 0.0}, "b": {"b": 1.0, "never": 0.0}}
    domain = planner.Domain.from_dict(d)
    s = planner.Session(domain)
    s.run({"oracle": lambda: "never", "rumour": lambda: "yes"})
    step = s.steps[0]
    assert (step.acquired, step.outcome) == ("oracle", "unavailable")
    assert step.note.startswith("the tool returned 'never', which the domain rules out here: ")
    assert replay(s.receipt(), domain)[0]


def test_a_note_with_line_breaks_or_escape_sequences_is_one_printable_line(payment):
    step = _first(payment, _raises(ValueError("bad\x1b[2J\rplanner: error: forged")))
    assert step.note.isprintable() and "\\x1b" in step.note
    s = planner.Session(payment)
    s.next()
    s.record("approval_registry", "unavailable", note="one\nplanner: error: two\u2028three")
    assert s.steps[0].note == "one\\nplanner: error: two\\u2028three"
