"""The domain-file loader: every malformed file gives one exact line, valid files load.

The malformed examples live in ``tests/malformed/``; the exact message each must
give is kept in one place, ``tests/malformed/expected.yaml``.
"""

from __future__ import annotations

import copy
import json
import math
import pathlib
import re
import subprocess
import sys

import jsonschema
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import planner
from planner.tolerances import PROB_TOL
from conftest import DOMAINS, ROOT, tiny_dict
from planner.cli import main
from planner.errors import DomainError
from planner.model.domain import Domain, load_domain
from planner.io.loader import (
    MAX_ARRAY_BYTES,
    MAX_CASE_CHECKS,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_INT_DIGITS,
    MAX_JOINT_STATES,
    MAX_NODES,
    MAX_TEXT_CHARS,
    content_hash,
    domain_schema,
    parse_domain_text,
    read_domain_file,
)

domain_from_dict = Domain.from_dict
from strategies import domain_dicts

MALFORMED = ROOT / "tests" / "malformed"
EXPECTED = yaml.safe_load((MALFORMED / "expected.yaml").read_text(encoding="utf-8"))
CASES = sorted(EXPECTED)
PAYMENT = DOMAINS / "payment_release.yaml"


def _rel(path: pathlib.Path) -> str:
    return str(path.relative_to(ROOT))


# --------------------------------------------------------------------------
# the manifest


def test_manifest_lists_every_malformed_file_and_nothing_else():
    on_disk = {p.name for p in MALFORMED.iterdir() if p.name != "expected.yaml"}
    assert on_disk == set(EXPECTED)
    assert len(EXPECTED) >= 25


def test_manifest_covers_the_required_error_kinds():
    # The list: each kind has at least one file whose message says so.
    messages = list(EXPECTED.values())
    for needle in ("YAML syntax error", "JSON syntax error", "missing field", "unknown field",
                   "sums to", "must be >= 0", "must be <= 1", "must be a finite number",
                   "unknown proposition", "unknown value", "unknown outcome",
                   "unknown proposition or observation", "cannot return", "duplicate key",
                   "duplicate value", "cyclic preconditions", "exceed the cap", "reserved",
                   "unknown budget dimension", "at least one must have none",
                   # hostile input (issue 10)
                   "aliases expand the file past the cap", "refers to the node that contains it",
                   "nested deeper than the cap", "unacceptable character", "number too large",
                   "overflows", "the likelihood table needs", "case checks, over the cap",
                   "appears nowhere else", "duplicate dimension"):
        assert any(needle in m for m in messages), needle


@pytest.mark.parametrize("name", CASES)
def test_manifest_messages_are_one_line_and_name_a_place(name):
    msg = EXPECTED[name]
    assert "\n" not in msg
    where, _, what = msg.partition(": ")
    assert where and what
    assert not where.startswith("<"), "a path or a line in the file"


def test_design_example_message():
    # The format documentation quotes this message verbatim.
    assert EXPECTED["likelihood_sum.yaml"] == "observations.approval_registry.likelihood.pending: sums to 0.97, not 1"
    assert EXPECTED["json_likelihood_sum.json"] == EXPECTED["likelihood_sum.yaml"]


# --------------------------------------------------------------------------
# malformed files: the API


@pytest.mark.parametrize("name", CASES)
def test_load_domain_gives_the_exact_message(name):
    with pytest.raises(DomainError) as info:
        load_domain(MALFORMED / name)
    err = info.value
    assert str(err) == EXPECTED[name]
    assert str(err) == f"{err.path}: {err.message}"
    assert err.__cause__ is None and (err.__suppress_context__ or err.__context__ is None)


@pytest.mark.parametrize("name", CASES)
def test_domain_from_dict_agrees_on_data_that_parses(name):
    # Errors found after parsing do not depend on how the data arrived.
    try:
        data = read_domain_file(MALFORMED / name)
    except DomainError as e:
        assert str(e) == EXPECTED[name]
        return
    with pytest.raises(DomainError) as info:
        domain_from_dict(data)
    assert str(info.value) == EXPECTED[name]


# --------------------------------------------------------------------------
# malformed files: the CLI


@pytest.mark.parametrize("name", CASES)
def test_cli_validate_prints_one_line_and_exits_2(name, capsys):
    path = str(MALFORMED / name)
    rc = main(["validate", path])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == f"{path}: {EXPECTED[name]}\n"
    assert "Traceback" not in out + err


@pytest.mark.slow
@pytest.mark.parametrize("name", ["yaml_syntax_error.yaml", "likelihood_sum.yaml", "json_nan.json",
                                  "cycle_three.yaml", "state_space_cap.yaml", "empty.yaml"])
def test_cli_validate_as_a_subprocess(name):
    path = _rel(MALFORMED / name)
    proc = subprocess.run([sys.executable, "-m", "planner.cli", "validate", path],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout == f"{path}: {EXPECTED[name]}\n"
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_cli_validate_reports_each_file_and_fails_if_any_fails():
    good, bad = _rel(PAYMENT), _rel(MALFORMED / "prior_sum.yaml")
    proc = subprocess.run([sys.executable, "-m", "planner.cli", "validate", good, bad],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"ok {good}: ")
    assert f"{bad}: {EXPECTED['prior_sum.yaml']}" in lines
    assert "Traceback" not in proc.stderr


def test_cli_validate_missing_file(capsys, tmp_path):
    path = str(tmp_path / "nope.yaml")
    assert main(["validate", path]) == 2
    out, _ = capsys.readouterr()
    assert out == f"{path}: (file): no such file: {path}\n"


# --------------------------------------------------------------------------
# valid files


@pytest.mark.parametrize("path", sorted(DOMAINS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_domains_load_and_validate(path, capsys):
    d = load_domain(path)
    assert d.content_hash.startswith("sha256:")
    assert main(["validate", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith(f"ok {path}: ")


def test_payment_domain_reads_as_the_design_says():
    d = load_domain(PAYMENT)
    assert [p.name for p in d.propositions] == ["approval"]
    assert d.prior.marginals == (("approval", (("approved", 0.55), ("pending", 0.45))),)
    reg = d.observation("approval_registry")
    assert reg.outcomes == ("approved", "pending")
    assert reg.establishes == (("approved", "approved"), ("pending", "pending"))
    assert dict(reg.cost) == {"calls": 1.0, "tokens": 120.0, "latency_ms": 150.0, "privacy": 0.10}
    assert d.observation("manager_message").establishes == ()
    assert [a.name for a in d.actions] == ["release", "hold"]
    assert str(d.actions[0].requires) == "approval=approved"
    assert d.actions[1].requires is None
    assert d.budget.dimensions == ("calls", "tokens", "latency_ms", "privacy")


def test_json_and_yaml_give_equal_domains_and_hashes(tmp_path):
    data = read_domain_file(PAYMENT)
    path = tmp_path / "payment_release.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    from_yaml, from_json = load_domain(PAYMENT), load_domain(path)
    assert from_json == from_yaml
    assert from_json.content_hash == from_yaml.content_hash
    # Formatting and key order of the text do not change the hash.
    path.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
    assert load_domain(path).content_hash == from_yaml.content_hash


def test_json_schema_is_valid_draft_2020_12():
    schema = domain_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    shipped = ROOT / "planner" / "schema" / "domain.schema.json"
    assert schema == json.loads(shipped.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", sorted(DOMAINS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_domains_satisfy_the_schema(path):
    jsonschema.Draft202012Validator(domain_schema()).validate(read_domain_file(path))


def _outcome_domain(outcomes: str, likelihood: str) -> str:
    return f"""
domain: words
world:
  ok: {{values: [yes, no]}}
prior:
  ok: {{yes: 0.5, no: 0.5}}
actions:
  go: {{loss: {{ok: {{yes: 0, no: 5}}}}, requires: {{ok: yes}}}}
  stay: {{loss: 1}}
observations:
  check:
    role: establish
    bears_on: ok
    outcomes: {outcomes}
    likelihood: {likelihood}
  later:
    role: inform
    requires: {{check: on}}
    likelihood: {{off: 0.5, n: 0.5}}
"""


def test_yaml_words_stay_strings():
    text = _outcome_domain("[yes, no, on, off]",
                           "{yes: {yes: 0.7, on: 0.3}, no: {no: 0.6, off: 0.4}}")
    d = domain_from_dict(parse_domain_text(text))
    assert d.proposition("ok").values == ("yes", "no")
    check = d.observation("check")
    assert check.outcomes == ("yes", "no", "on", "off")
    assert check.establishes == (("yes", "yes"), ("no", "no"))
    assert str(d.observation("later").requires) == "check returned on"
    assert d.observation("later").outcomes == ("off", "n")
    assert str(d.actions[0].requires) == "ok=yes"


def test_only_true_and_false_are_booleans_and_times_stay_strings():
    data = parse_domain_text("a: [true, False, yes, No, on, OFF]\nb: 2026-01-05T09:30:00Z\nc: 2026-01-05")
    assert data == {"a": [True, False, "yes", "No", "on", "OFF"], "b": "2026-01-05T09:30:00Z", "c": "2026-01-05"}


def test_exponent_numbers_read_as_numbers():
    # YAML 1.1 reads 4e-4 as a string; the loader reads it as JSON and YAML 1.2 do.
    assert parse_domain_text("w: [4e-4, 1.5e3, -2E+2, 0.08, 7]") == {"w": [0.0004, 1500.0, -200.0, 0.08, 7]}


def test_as_of_quoted_or_not_gives_the_same_time():
    base = read_domain_file(PAYMENT)
    spec = base["observations"]["approval_registry"]
    del spec["age_minutes"]
    text = yaml.safe_dump(base, sort_keys=False)
    unquoted = text.replace("  max_age_minutes: 5\n", "  max_age_minutes: 5\n    as_of: 2026-01-05T09:30:00Z\n", 1)
    quoted = unquoted.replace("as_of: 2026-01-05T09:30:00Z", "as_of: '2026-01-05T09:30:00+00:00'")
    assert unquoted != quoted
    a, b = (domain_from_dict(parse_domain_text(t)) for t in (unquoted, quoted))
    assert a.observation("approval_registry").as_of == b.observation("approval_registry").as_of
    assert a.observation("approval_registry").as_of.isoformat() == "2026-01-05T09:30:00+00:00"


def test_anchors_and_merge_keys_are_not_duplicates():
    text = """
domain: anchors
world:
  x: {values: [a, b]}
prior:
  x: {a: 0.5, b: 0.5}
actions:
  wait: {loss: 1}
budget:
  weights: {calls: 0.1, tokens: 0.001}
observations:
  first: &source
    role: inform
    bears_on: x
    likelihood: &lik
      a: {hit: 0.9, miss: 0.1}
      b: {hit: 0.2, miss: 0.8}
    cost: {calls: 1, tokens: 10}
  second:
    <<: *source
    cost: {calls: 1, tokens: 20}
  third:
    role: inform
    bears_on: x
    likelihood: *lik
"""
    d = domain_from_dict(parse_domain_text(text))
    assert [o.name for o in d.observations] == ["first", "second", "third"]
    assert dict(d.observation("second").cost) == {"calls": 1.0, "tokens": 20.0}
    assert d.observation("third").likelihood == d.observation("first").likelihood


# --------------------------------------------------------------------------
# rules at their boundaries


def test_sum_tolerance_is_inclusive_of_reading_noise():
    assert PROB_TOL == 1e-9
    d = domain_from_dict(tiny_dict(prior={"x": {"a": 0.5 + 5e-10, "b": 0.5}}))
    assert dict(d.prior.marginals)["x"][0][1] == pytest.approx(0.5)
    # 0.1 + 0.2 + 0.7 is not exactly 1 in floating point, and must pass.
    d = tiny_dict()
    d["world"]["x"]["values"] = ["a", "b", "c"]
    d["prior"] = {"x": {"a": 0.1, "b": 0.2, "c": 0.7}}
    d["actions"]["act"]["loss"] = {"x": {"a": 0, "b": 10, "c": 10}}
    d["observations"]["oracle"]["likelihood"]["c"] = {"b": 1.0}
    d["observations"]["rumour"]["likelihood"]["c"] = {"yes": 0.3, "no": 0.7}
    domain_from_dict(d)
    with pytest.raises(DomainError, match=r"^prior\.x: sums to 1\.000000002, not 1$"):
        domain_from_dict(tiny_dict(prior={"x": {"a": 0.5 + 2e-9, "b": 0.5}}))


def _binary_world(n: int) -> dict:
    props = {f"p{i}": {"values": ["a", "b"]} for i in range(n)}
    return {"domain": "wide", "world": props, "prior": {p: {"a": 0.5, "b": 0.5} for p in props},
            "actions": {"wait": {"loss": 1}}}


def _square_world(n_values: int) -> dict:
    vals = [f"v{i}" for i in range(n_values)]
    props = {p: {"values": vals} for p in ("p", "q")}
    return {"domain": "wide", "world": props, "prior": {p: {v: 1 / n_values for v in vals} for p in props},
            "actions": {"wait": {"loss": 1}}}


def test_joint_state_cap_is_inclusive():
    # As many states as the byte cap allows for one single-outcome observation (16 bytes a state).
    assert MAX_JOINT_STATES == MAX_ARRAY_BYTES // 16 == 1_000_000
    d = domain_from_dict(_square_world(1000))
    assert math.prod(len(p.values) for p in d.propositions) == MAX_JOINT_STATES
    with pytest.raises(DomainError, match=r"^world: 1,002,001 joint states exceed the cap of 1,000,000$"):
        domain_from_dict(_square_world(1001))
    with pytest.raises(DomainError, match=r"^world: 2,097,152 joint states exceed the cap of 1,000,000$"):
        domain_from_dict(_binary_world(21))
    with pytest.raises(DomainError, match=r"^world: about 10\^60 joint states exceed the cap of 1,000,000$"):
        domain_from_dict(_binary_world(200))


def test_requirement_no_observation_can_establish_is_not_an_error():
    # A reachability problem, reported as a warning by `planner validate`, not malformed.
    d = tiny_dict()
    del d["observations"]["oracle"]
    dom = domain_from_dict(d)
    assert str(dom.actions[0].requires) == "x=a"
    assert all(o.role == "inform" for o in dom.observations)


def test_required_outcome_with_zero_probability_is_not_an_error():
    d = tiny_dict()
    d["observations"]["rumour"]["outcomes"] = ["yes", "no", "maybe"]
    d["observations"]["oracle"]["requires"] = {"rumour": "maybe"}
    assert str(domain_from_dict(d).observation("oracle").requires) == "rumour returned maybe"


def test_requires_unavailable_with_a_failure_rate():
    d = tiny_dict()
    d["observations"]["oracle"]["failure_rate"] = 0.1
    d["observations"]["rumour"]["requires"] = {"oracle": "unavailable"}
    assert str(domain_from_dict(d).observation("rumour").requires) == "oracle returned unavailable"


def test_fallback_may_be_an_escalate_action():
    d = tiny_dict()
    d["actions"]["wait"]["requires"] = {"x": "b"}
    with pytest.raises(DomainError, match=r"^actions: every action has requires"):
        domain_from_dict(d)
    d["actions"]["refer"] = {"kind": "escalate", "loss": 3}
    assert [a.kind for a in domain_from_dict(d).actions] == ["decide", "decide", "escalate"]


def test_preconditions_in_file_order_are_fine_and_a_chain_is_not_a_cycle():
    d = tiny_dict()
    d["observations"]["rumour"]["requires"] = {"oracle": "a"}
    d["observations"]["third"] = {"role": "inform", "likelihood": {"z": 1.0}, "requires": {"rumour": "yes"}}
    dom = domain_from_dict(d)
    assert str(dom.observation("third").requires) == "rumour returned yes"


@pytest.mark.parametrize("data, message", [
    (None, "(top level): the file is empty (expected a mapping with domain, world, prior and actions)"),
    ([], "(top level): expected a mapping with domain, world, prior and actions, got a list"),
    ({1: 2}, "(top level): key 1 is a number, not a name (letters, digits, '_' and '-', not starting with a digit)"),
    ({"domain": float("nan")}, "domain: must be a finite number, got nan"),
])
def test_domain_from_dict_rejects_non_domains(data, message):
    with pytest.raises(DomainError) as info:
        domain_from_dict(data)
    assert str(info.value) == message


@pytest.mark.slow
@given(domain_dicts())
def test_random_valid_domains_round_trip_through_yaml_and_json(data):
    direct = domain_from_dict(data)
    via_yaml = domain_from_dict(parse_domain_text(yaml.safe_dump(data, sort_keys=False)))
    via_json = domain_from_dict(parse_domain_text(json.dumps(data), json_format=True))
    assert via_yaml == direct == via_json
    assert via_yaml.content_hash == direct.content_hash == via_json.content_hash == content_hash(data)


def test_public_names():
    import planner.io.loader as loader

    for name in ("domain_fields", "read_domain_file", "parse_domain_text", "domain_schema",
                 "content_hash", "MAX_JOINT_STATES", "MAX_FILE_BYTES", "MAX_DEPTH",
                 "MAX_NODES", "MAX_TEXT_CHARS", "MAX_INT_DIGITS", "MAX_ARRAY_BYTES", "MAX_CASE_CHECKS"):
        assert name in loader.__all__
    assert planner.load_domain is load_domain


# --------------------------------------------------------------------------
# every feature of the format at once, as documented in docs/domain-format.md

KITCHEN_SINK = """
domain: kitchen_sink
purpose: payment_release
max_age_minutes: 1440
world:
  approval: {values: [approved, pending], max_age_minutes: 60}
  identity: {values: [verified, mismatch]}
prior:
  joint:
    - {state: {approval: approved, identity: verified}, p: 0.50}
    - {state: {approval: pending,  identity: verified}, p: 0.40}
    - {state: {approval: pending,  identity: mismatch}, p: 0.10}
actions:
  release:
    requires: {all: [{approval: approved}, {any: [{kyc_lookup: match}, {identity: verified}]}]}
    loss:
      cases:
        - {when: {approval: approved, identity: verified}, loss: 0}
        - {when: {approval: approved}, loss: 30}
        - {loss: 100}
  hold:
    loss: {approval: {approved: 8, pending: 1}, identity: {verified: 0, mismatch: 2}}
  escalate: {kind: escalate, loss: 3, description: ask a person}
budget:
  limits: {calls: 4}
  weights: {calls: 0.08, latency_ms: 0.0005}
observations:
  identity_resolution:
    role: inform
    outcomes: [resolved, not_found]
    likelihood: {resolved: 0.9, not_found: 0.1}
    cost: {calls: 1, latency_ms: 40}
    failure_rate: 0.05
  identity_check:
    role: establish
    bears_on: identity
    requires: {identity_resolution: resolved}
    likelihood:
      verified: {ok: 0.95, bad: 0.05}
      mismatch: {ok: 0.10, bad: 0.90}
    establishes: {ok: verified, bad: mismatch}
    cost: {calls: 1}
    as_of: 2026-01-05T09:30:00Z
  kyc_lookup:
    role: corroborate
    depends_on: [approval, identity]
    likelihood:
      cases:
        - {when: {approval: approved, identity: verified}, p: {match: 0.95, no_match: 0.05}}
        - {when: {identity: mismatch}, p: {match: 0.10, no_match: 0.90}}
        - {p: {match: 0.50, no_match: 0.50}}
    cost: {calls: 1}
  approval_registry:
    role: establish
    bears_on: approval
    lineage: approval_record
    likelihood:
      approved: {approved: 0.99, pending: 0.01}
      pending:  {approved: 0.01, pending: 0.99}
    cost: {calls: 1}
    age_minutes: 0
    max_age_minutes: 5
  approval_cache:
    role: establish
    bears_on: approval
    lineage: approval_record
    likelihood:
      approved: {approved: 0.99, pending: 0.01}
      pending:  {approved: 0.01, pending: 0.99}
    cost: {calls: 1, latency_ms: 5}
  treasury_override:
    role: supersede
    bears_on: approval
    requires: {identity_resolution: unavailable}
    entitlement: treasury.override
    purposes: [payment_release, fraud_investigation]
    likelihood:
      approved: {approved: 1.0}
      pending: {pending: 1.0}
    cost: {calls: 1}
    relevance: 0.5
"""


def test_every_documented_feature_loads_and_compiles():
    from planner.compile import compile_domain

    d = domain_from_dict(parse_domain_text(KITCHEN_SINK))
    assert d.prior.joint is not None and len(d.prior.joint) == 3
    assert [a.kind for a in d.actions] == ["decide", "decide", "escalate"]
    assert str(d.actions[0].requires) == "(approval=approved and (kyc_lookup returned match or identity=verified))"
    assert d.observation("identity_check").establishes == (("ok", "verified"), ("bad", "mismatch"))
    assert d.observation("identity_check").as_of.isoformat() == "2026-01-05T09:30:00+00:00"
    assert d.observation("kyc_lookup").likelihood.depends_on == ("approval", "identity")
    assert d.observation("treasury_override").outcomes == ("approved", "pending")
    assert d.budget.dimensions == ("calls", "latency_ms")
    c = compile_domain(d)
    # 4 world states times the 2 outcomes of the lineage record
    assert c.n_states == 8
    assert c.var_names == ("approval", "identity", "lineage:approval_record")
    np_loss = {s: c.loss[0, i] for i, s in enumerate(map(tuple, c.states[:, :2]))}
    assert np_loss[(0, 0)] == 0 and np_loss[(0, 1)] == 30 and np_loss[(1, 0)] == 100


# --------------------------------------------------------------------------
# the format documentation stays true

DOC = ROOT / "docs" / "domain-format.md"


def _doc_blocks(text: str) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", text, flags=re.S)


def test_doc_worked_example_is_the_payment_file():
    text = DOC.read_text(encoding="utf-8")
    marker = text.index("<!-- payment-example:")
    block = _doc_blocks(text[marker:])[0]
    # The file may end with a `checks:` block (the check harness's, documented there).
    lines = PAYMENT.read_text(encoding="utf-8").splitlines(keepends=True)
    end = next((i for i, line in enumerate(lines) if line.startswith("checks:")), len(lines))
    while end > 0 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    assert block.rstrip() == "".join(lines[:end]).rstrip()


def test_doc_yaml_snippets_parse():
    for block in _doc_blocks(DOC.read_text(encoding="utf-8")):
        assert isinstance(parse_domain_text(block), dict)


def test_doc_error_examples_match_the_manifest():
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("<!-- error-examples:"):]
    found = re.findall(r"^- .*?: `(.+)` \(`([^`]+)`\)$", section, flags=re.M)
    assert len(found) >= 25
    for message, name in found:
        assert EXPECTED[name] == message, name


def test_doc_mentions_the_caps_and_the_schema():
    text = DOC.read_text(encoding="utf-8")
    for name, value in [("MAX_FILE_BYTES", MAX_FILE_BYTES), ("MAX_DEPTH", MAX_DEPTH), ("MAX_NODES", MAX_NODES),
                        ("MAX_TEXT_CHARS", MAX_TEXT_CHARS), ("MAX_INT_DIGITS", MAX_INT_DIGITS),
                        ("MAX_JOINT_STATES", MAX_JOINT_STATES), ("MAX_ARRAY_BYTES", MAX_ARRAY_BYTES),
                        ("MAX_CASE_CHECKS", MAX_CASE_CHECKS)]:
        assert f"| `planner.io.loader.{name}` | {value:,} |" in text, name
    from planner.errors import MAX_MESSAGE_CHARS
    assert f"| `planner.errors.MAX_MESSAGE_CHARS` | {MAX_MESSAGE_CHARS} |" in text
    assert PROB_TOL == 1e-9 and "| `planner.tolerances.PROB_TOL` | 1e-9 |" in text
    assert "planner/schema/domain.schema.json" in text


# --------------------------------------------------------------------------
# no input gives a traceback

_JUNK = [None, True, 0, -1, 1.5, "x", "all", "unavailable", "bad name", "", [], {}, ["a"], {"a": 1},
         {"cases": []}, {"any": [{}]}, [{"when": {}, "loss": 1}], [{"p": {"a": 1}}], {"joint": []}, 1e308]


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


@given(domain_dicts(), st.lists(st.tuples(st.integers(0, 10 ** 6), st.sampled_from(range(len(_JUNK))),
                                          st.sampled_from(["set", "delete", "add"])), min_size=1, max_size=3))
def test_mutated_domains_load_or_raise_one_line_domain_errors(data, edits):
    for pick, junk, op in edits:
        paths = [p for p in _paths(data) if p]
        path = paths[pick % len(paths)]
        parent = data
        for k in path[:-1]:
            parent = parent[k]
        if op == "delete" and isinstance(parent, dict):
            del parent[path[-1]]
        elif op == "add" and isinstance(parent, dict):
            parent[("x", "cases", "all", "joint", "when")[pick % 5]] = copy.deepcopy(_JUNK[junk])
        else:
            parent[path[-1]] = copy.deepcopy(_JUNK[junk])
    try:
        domain_from_dict(data)
    except DomainError as e:
        assert "\n" not in str(e)
