"""Hostile input a second fuzzer found (issue 22): readings that silently change meaning, and paths that hang.

- YAML 1.1 numbers (``0200`` octal, ``10:00`` base 60, ``1_000``, ``0b1``) that YAML 1.2 reads otherwise;
- NEL, U+2028, U+2029 (and the other C1 controls) that end a YAML comment where grep sees none;
- a lineage name typo that turns a second copy into independent evidence;
- FIFOs and devices as the domain path; a byte-order mark.
"""

from __future__ import annotations

import os

import pytest
import yaml

import planner
from conftest import DOMAINS
from planner.errors import DomainError
from planner.io.loader import parse_domain_text, read_domain_file
from planner.model.domain import load_domain

SEED = (DOMAINS / "payment_release.yaml").read_text()


def _error(text: str, **kw) -> str:
    with pytest.raises(DomainError) as e:
        parse_domain_text(text, **kw)
    message = str(e.value)
    assert "\n" not in message
    return message


# --------------------------------------------------------------------------
# YAML 1.1 numbers: a clear error, never octal or base 60


@pytest.mark.parametrize("literal, yaml11", [
    ("0200", 128), ("007", 7), ("-010", -8), ("10:00", 600), ("1:30.5", 90.5), ("1_000", 1000),
    ("0b101", 5), ("1_0.5", 10.5),
])
def test_a_number_yaml_1_1_reads_otherwise_is_refused_with_its_place(literal, yaml11):
    assert yaml.safe_load(f"a: {literal}")["a"] == yaml11  # what a YAML 1.1 reader would have made of it
    text = SEED.replace("latency_ms: 150", f"latency_ms: {literal}")
    line = 1 + text[:text.index(f"latency_ms: {literal}")].count("\n")
    message = _error(text)
    assert message.startswith(f"line {line}, column ")
    assert repr(literal) in message and "YAML 1.1" in message and "YAML 1.2" in message


@pytest.mark.parametrize("literal", ["08", "09"])
def test_a_leading_zero_that_yaml_1_1_reads_as_text_is_refused_too(literal):
    assert yaml.safe_load(f"a: {literal}")["a"] == literal  # YAML 1.1: text; YAML 1.2: a number
    message = _error(f"a: {literal}")
    assert "leading zero" in message and f"YAML 1.2 as {int(literal)}" in message


@pytest.mark.parametrize("literal, value", [
    ("0", 0), ("-0", 0), ("+0", 0), ("200", 200), ("0.5", 0.5), ("1e-3", 1e-3), ("0x1F", 31),
    ("'0200'", "0200"), ('"10:00"', "10:00"),
])
def test_numbers_both_versions_agree_on_still_read(literal, value):
    assert parse_domain_text(f"a: {literal}") == {"a": value}


# --------------------------------------------------------------------------
# line and paragraph separators, C1 controls, byte-order marks


@pytest.mark.parametrize("char", ["\x85", "\u2028", "\u2029", "\x80", "\x9f", "\r"])
@pytest.mark.parametrize("json_format", [False, True])
def test_a_separator_or_c1_control_is_refused_anywhere_comments_included(char, json_format):
    if json_format:
        text = '{"domain": "x' + char + '"}'
        where = "line 1, column 14"
    else:
        # the hidden key: YAML ends the comment at the separator and reads failure_rate: 1.0
        text = SEED.replace("    relevance: 0.80", f"    relevance: 0.80  # note{char}failure_rate: 1.0")
        line = 1 + text[:text.index(char)].count("\n")
        where = f"line {line}, column {text.index(char) - text.rfind(chr(10), 0, text.index(char))}"
    message = _error(text, json_format=json_format)
    assert message.startswith(where + ": ")
    assert f"U+{ord(char):04X}" in message and "comments included" in message


def test_crlf_line_ends_still_read_as_lf(tmp_path):
    path = tmp_path / "crlf.yaml"
    path.write_bytes(SEED.replace("\n", "\r\n").encode())
    assert read_domain_file(path) == parse_domain_text(SEED)


def test_the_hidden_key_would_have_been_read_by_plain_yaml():
    """Why it is refused: the same text through a plain YAML loader gains a key that no diff shows."""
    text = SEED.replace("    relevance: 0.80", "    relevance: 0.80  # note\x85    failure_rate: 1.0")
    assert yaml.safe_load(text)["observations"]["approval_registry"]["failure_rate"] == 1.0


@pytest.mark.parametrize("suffix, text", [(".yaml", SEED), (".json", '{"domain": "x"}')])
def test_a_leading_byte_order_mark_is_dropped_in_yaml_and_json(tmp_path, suffix, text):
    plain, marked = tmp_path / f"plain{suffix}", tmp_path / f"marked{suffix}"
    plain.write_text(text, encoding="utf-8")
    marked.write_text(text, encoding="utf-8-sig")
    assert marked.read_bytes().startswith(b"\xef\xbb\xbf")
    assert read_domain_file(marked) == read_domain_file(plain)


def test_a_byte_order_mark_past_the_start_is_refused():
    message = _error("domain: a\ufeffb")
    assert message.startswith("line 1, column 10: ") and "U+FEFF" in message


# --------------------------------------------------------------------------
# a lineage name typo


def test_a_lineage_typo_is_refused_with_the_name_meant():
    text = (DOMAINS / "second_copy.yaml").read_text()
    first = text.index("lineage: notice_batch_118")
    second = text.index("lineage: notice_batch_118", first + 1)
    typo = text[:second] + "lineage: notice_batch_11" + text[second + len("lineage: notice_batch_118"):]
    with pytest.raises(DomainError) as e:
        planner.Domain.from_dict(parse_domain_text(typo))
    assert str(e.value) == ("observations.aggregator_copy.lineage: lineage group 'notice_batch_11' has no other "
                            "member, nor has 'notice_batch_118' (observations.manufacturer_notice): is it a typo for "
                            "it? A copy outside its record's group counts as independent evidence")


def test_a_lineage_typo_beside_a_real_group_names_the_group():
    data = parse_domain_text((DOMAINS / "second_copy.yaml").read_text())
    third = dict(data["observations"]["aggregator_copy"], lineage="notice_batch_18")
    data["observations"]["wire_copy"] = third
    with pytest.raises(DomainError) as e:
        planner.Domain.from_dict(data)
    assert str(e.value) == ("observations.wire_copy.lineage: lineage group 'notice_batch_18' has no other member "
                            "(did you mean 'notice_batch_118'?); a copy outside its record's group counts as "
                            "independent evidence")


def test_distinct_lineage_groups_of_one_are_still_allowed():
    data = parse_domain_text((DOMAINS / "second_copy.yaml").read_text())
    data["observations"]["aggregator_copy"]["lineage"] = "syndication_feed"
    planner.Domain.from_dict(data)  # a group of one changes nothing (validate says so), and is no typo


# --------------------------------------------------------------------------
# paths that are not regular files


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_as_the_domain_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "domain.yaml"
    os.mkfifo(fifo)
    with pytest.raises(DomainError) as e:  # opening it would block until a writer came
        load_domain(fifo)
    assert str(e.value) == f"(file): cannot read {fifo}: it is a FIFO (named pipe), not a regular file"


def test_a_device_as_the_domain_is_refused():
    with pytest.raises(DomainError, match="it is a character device, not a regular file"):
        load_domain(os.devnull)
