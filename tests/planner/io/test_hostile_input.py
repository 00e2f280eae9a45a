"""Hostile domain files (issue 10, the loader): one line, exit status 2, bounded work, whatever the input.

Each input here once crashed or hung the loader: alias bombs, self-referencing
aliases, deep nesting, control characters, integers too long to convert, names
ending in a newline, numbers whose penalty or loss overflows, tables too large
to compile, and a misspelt budget dimension. Every case is checked through the
API (the exact :class:`~planner.errors.DomainError`) and the CLI (``validate``
prints ``FILE: <message>``; ``run`` prints ``planner: error: <message>`` on
stderr); a hang guard stops a case that would run away (the speed itself is
measured in ``studies/fuzz_domains.py``, not here).
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys

import numpy as np
import pytest
import yaml

import planner
from conftest import DOMAINS, ROOT, tiny_dict
from planner.cli import main
from planner.compile import compile_domain
from planner.model.domain import Domain, load_domain
from planner.errors import MAX_MESSAGE_CHARS, DomainError
from planner.io.loader import (
    MAX_ARRAY_BYTES,
    MAX_CASE_CHECKS,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_JOINT_STATES,
    MAX_NODES,
    MAX_TEXT_CHARS,
    parse_domain_text,
)

#: A case that takes longer than this has run away (the loader bounds its work
#: before expanding anything; a bounded case takes milliseconds).
HANG_GUARD_S = 20

HEAD = """domain: hostile
world:
  x: {values: [a, b]}
prior:
  x: {a: 0.5, b: 0.5}
actions:
  wait: {loss: 1}
"""


@contextlib.contextmanager
def hang_guard(seconds: float = HANG_GUARD_S):
    """Fail (instead of hanging the suite) when the body runs longer than `seconds`."""
    def _alarm(signum, frame):
        raise TimeoutError(f"ran longer than {seconds} s")
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _error(text: str, *, json_format: bool = False) -> DomainError:
    with hang_guard(), pytest.raises(DomainError) as info:
        Domain.from_dict(parse_domain_text(text, json_format=json_format))
    return info.value


def _one_line(msg: str) -> None:
    assert "\n" not in msg and "\r" not in msg
    assert msg.isprintable(), repr(msg)
    assert len(msg) <= MAX_MESSAGE_CHARS


# --------------------------------------------------------------------------
# the hostile texts


def alias_bomb(levels: int = 8, width: int = 9) -> str:
    """The billion laughs: each level a list of `width` aliases of the level below."""
    lines = [HEAD, "description: bomb\nchecks:\n  - name: c\n    policy: one-step\n    expect:\n"]
    lines.append("      acquisitions: &l0 [" + ", ".join(["lol"] * width) + "]\n")
    for i in range(1, levels + 1):
        lines.append(f"      never_acquired: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]\n"
                     if i == levels else f"      x{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]\n")
    return "".join(lines)


def merge_bomb(levels: int = 12) -> str:
    """Merge keys doubling at every level: `<<: [*m0, *m0]` and so on."""
    lines = [HEAD, "extra:\n  m0: &m0 {a: 1, b: 2}\n"]
    for i in range(1, levels + 1):
        lines.append(f"  m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], k{i}: 1}}\n")
    return "".join(lines)


def text_bomb() -> str:
    """Few nodes, but one long string aliased many times."""
    return HEAD + "extra:\n  s: &s " + "x" * 100_000 + "\n  l: [" + ", ".join(["*s"] * 100) + "]\n"


def size_case(n_obs: int, n_outcomes: int = 500, n_props: int = 12) -> str:
    """Aliases of one `n_outcomes`-outcome observation over 2**n_props states (the issue's 12 KB file)."""
    world = "".join(f"  p{i}: {{values: [a, b]}}\n" for i in range(n_props))
    prior = "".join(f"  p{i}: {{a: 0.5, b: 0.5}}\n" for i in range(n_props))
    lik = ", ".join(f"y{k}: {1 / n_outcomes}" for k in range(n_outcomes))
    obs = f"  o0: &o {{role: inform, likelihood: {{{lik}}}}}\n" + "".join(f"  o{i}: *o\n" for i in range(1, n_obs))
    return f"domain: big\nworld:\n{world}prior:\n{prior}actions:\n  wait: {{loss: 1}}\nobservations:\n{obs}"


# --------------------------------------------------------------------------
# 1. work bounded before expansion


def test_an_alias_bomb_is_refused_while_composing():
    text = alias_bomb()
    assert len(text) < 5000
    err = _error(text)
    assert str(err).startswith("line ") and f"past the cap of {MAX_NODES:,} nodes" in str(err)
    _one_line(str(err))


def test_a_merge_key_bomb_is_refused_while_composing():
    err = _error(merge_bomb(20))
    assert f"past the cap of {MAX_NODES:,} nodes" in str(err)


def test_a_long_string_aliased_many_times_is_refused():
    err = _error(text_bomb())
    assert f"past the cap of {MAX_TEXT_CHARS:,} characters" in str(err)


def test_a_few_aliases_still_work():
    text = HEAD + "extra_free_text: &d hello\ndescription: *d\n"
    assert parse_domain_text(text)["description"] == "hello"


@pytest.mark.parametrize("text, where", [
    (HEAD + "observations: &o\n  me: *o\n", "line 9, column 7"),
    (HEAD + "description: &l [a, *l]\n", "line 8, column 21"),
    (HEAD + "extra: &m {<<: *m}\n", "line 8, column 16"),
])
def test_a_self_referencing_alias_is_refused(text, where):
    err = _error(text)
    assert str(err).startswith(f"{where}: ") and "refers to the node that contains it" in str(err)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 600, 5000])
def test_deep_yaml_nesting_is_refused(depth):
    err = _error(HEAD + "description: " + "[" * depth + "]" * depth + "\n")
    assert str(err) == f"line 8, column {13 + MAX_DEPTH}: nested deeper than the cap of {MAX_DEPTH} levels"


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1200, 100_000])
def test_deep_json_nesting_is_refused(depth):
    text = '{"domain": "deep",\n "description": ' + "[" * depth + "]" * depth + "}"
    err = _error(text, json_format=True)
    assert str(err) == f"line 2, column {16 + MAX_DEPTH}: nested deeper than the cap of {MAX_DEPTH} levels"


def test_brackets_inside_json_strings_are_not_nesting():
    data = json.loads(json.dumps(tiny_dict()))
    data["description"] = "[{" * 5000 + 'a "quoted" \\ word'
    d = Domain.from_dict(parse_domain_text(json.dumps(data), json_format=True))
    assert d.description.startswith("[{[{")


def test_nesting_up_to_the_cap_is_fine():
    depth = MAX_DEPTH - 1  # the top-level mapping is the first level
    assert parse_domain_text("description: " + "[" * depth + "]" * depth)["description"]


def test_deep_or_cyclic_python_data_is_refused():
    data = tiny_dict()
    deep = []
    for _ in range(5000):
        deep = [deep]
    data["description"] = deep
    with hang_guard(), pytest.raises(DomainError, match=rf"^description[\[\]0]+(\.\.\.)?: nested deeper than the cap of "
                                                        rf"{MAX_DEPTH} levels$"):
        Domain.from_dict(data)
    data = tiny_dict()
    data["observations"]["oracle"]["cost"] = data["observations"]
    with hang_guard(), pytest.raises(DomainError, match=r"^observations\.oracle\.cost: refers to a mapping "
                                                        r"that contains it$"):
        Domain.from_dict(data)
    shared = {"yes": 0.7, "no": 0.3}  # shared but not cyclic: fine
    data = tiny_dict()
    data["observations"]["rumour"]["likelihood"] = {"a": shared, "b": shared}
    Domain.from_dict(data)


def test_too_many_nodes_in_python_data_is_refused():
    data = tiny_dict()
    data["description"] = [0] * (MAX_NODES + 1)
    with hang_guard(), pytest.raises(DomainError, match=rf"^description\[\d+\]: the data holds more than the cap "
                                                        rf"of {MAX_NODES:,} nodes$"):
        Domain.from_dict(data)


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\x7f", "\ufffe"])  # C1 (\x80-\x9f): test_silent_changes
def test_a_control_character_is_one_line_with_its_place(char):
    err = _error(HEAD.replace("domain: hostile", "domain: hos" + char + "tile"))
    assert str(err) == (f"line 1, column 12: YAML syntax error: "
                        f"unacceptable character {char!r} (control characters are not allowed)")
    _one_line(str(err))


def test_control_characters_in_json_strings_are_escaped_in_messages():
    data = json.loads(json.dumps(tiny_dict()))
    data["world"]["x\u0007\r\n"] = {"values": ["a"]}
    err = _error(json.dumps(data), json_format=True)
    assert str(err) == r"world: invalid name 'x\x07\r\n' (letters, digits, '_' and '-', not starting with a digit)"


@pytest.mark.parametrize("literal", ["9" * 5000, "-" + "9" * 5000, "0x" + "f" * 5000, "1_000" * 2000])
def test_an_integer_too_long_to_convert_is_too_large(literal):
    err = _error(HEAD.replace("loss: 1", f"loss: {literal}"))
    assert str(err) == "actions.wait.loss: number too large (more than 1.8e308)"


def test_an_integer_too_long_in_json_is_too_large():
    data = json.loads(json.dumps(tiny_dict()))
    text = json.dumps(data).replace('"wait": {"loss": 2}', '"wait": {"loss": ' + "7" * 5000 + "}")
    err = _error(text, json_format=True)
    assert str(err) == "actions.wait.loss: number too large (more than 1.8e308)"


def test_an_integer_too_long_as_a_key_is_not_a_name():
    err = _error(HEAD + "description:\n  ? " + "9" * 5000 + "\n  : x\n")  # an explicit key: plain ones stop at 1024
    assert str(err) == "description: key is a number too large for a float, not a name: quote it"


def test_a_file_over_the_size_cap_is_refused_before_reading(tmp_path):
    path = tmp_path / "huge.yaml"
    with open(path, "w") as f:
        f.write(HEAD)
        f.truncate(50_000_000)  # a sparse 50 MB file
    with hang_guard(), pytest.raises(DomainError) as info:
        load_domain(path)
    assert str(info.value) == (f"(file): the file is 50,000,000 bytes, over the cap of {MAX_FILE_BYTES:,} bytes "
                               f"({MAX_FILE_BYTES // 1024} KiB)")
    with hang_guard(), pytest.raises(DomainError, match=r"^\(file\): the text is 300,000 characters, over the cap"):
        parse_domain_text("#" * 300_000)
    with hang_guard(), pytest.raises(DomainError, match=r"^\(file\): the text is 300,000 bytes, over the cap"):
        parse_domain_text("é" * 150_000)


def test_a_file_at_the_size_cap_is_read(tmp_path):
    path = tmp_path / "padded.yaml"
    text = (DOMAINS / "payment_release.yaml").read_text(encoding="utf-8")
    path.write_text(text + "#" * (MAX_FILE_BYTES - len(text.encode("utf-8"))), encoding="utf-8")
    assert path.stat().st_size == MAX_FILE_BYTES
    assert load_domain(path).name == "payment_release"


def test_random_bytes_and_directories_are_one_line(tmp_path):
    path = tmp_path / "noise.yaml"
    path.write_bytes(bytes(np.random.default_rng(1).integers(0, 256, 4000, dtype=np.uint8)))
    with pytest.raises(DomainError, match=r"^\(file\): cannot read .*noise\.yaml: 'utf-8' codec can't decode"):
        load_domain(path)
    with pytest.raises(DomainError, match=r"^\(file\): cannot read "):
        load_domain(tmp_path)


# --------------------------------------------------------------------------
# 2. names match the whole string; messages are one safe, bounded line


@pytest.mark.parametrize("where, text", [
    ("world", HEAD.replace("  x: {values", '  "x\\n": {values')),
    ("world.x.values[1]", HEAD.replace("[a, b]", '[a, "b\\n"]')),
    ("domain", HEAD.replace("domain: hostile", 'domain: "hostile\\n"')),
    ("actions", HEAD.replace("  wait: {loss: 1}", '  "wait\\r\\n": {loss: 1}')),
])
def test_a_name_ending_in_a_newline_is_refused(where, text):
    err = _error(text)
    assert str(err).startswith(f"{where}: invalid name ")
    assert "\\n" in str(err)
    _one_line(str(err))


def test_messages_are_capped_with_an_ellipsis():
    err = _error(HEAD.replace("[a, b]", "[a, '" + "y" * 200_000 + " z']"))
    assert len(str(err)) == MAX_MESSAGE_CHARS and str(err).endswith("...")
    assert str(err).startswith("world.x.values[1]: invalid name 'yyy")
    assert str(err) == f"{err.path}: {err.message}"


def test_domain_error_escapes_and_caps_whatever_it_is_given():
    err = DomainError(["world", "a\nb"], "bad \x1b[31mred\x1b[0m\r\n" + "z" * 1000)
    _one_line(str(err))
    assert str(err).startswith("world.a\\nb: bad \\x1b[31mred\\x1b[0m\\r\\nzzz")
    assert str(err).endswith("...")
    assert str(err) == f"{err.path}: {err.message}"


# --------------------------------------------------------------------------
# 3. numbers whose penalty, loss or sums overflow


def _budgeted(**budget) -> dict:
    d = tiny_dict()
    d["budget"] = budget
    return d


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["budget"]["weights"].update(calls=1e308) or d["observations"]["oracle"]["cost"].update(calls=10),
     "observations.oracle.cost.calls: weight 1e+308 x cost 10 overflows the penalty (more than 1.8e308)"),
    (lambda d: d["budget"].update(weights={"calls": 1e308, "tokens": 1e308}, limits={"calls": 2, "tokens": 9})
     or d["observations"]["oracle"]["cost"].update(tokens=1.5),
     "observations.oracle.cost: the penalty (the sum of weight x cost) overflows (more than 1.8e308)"),
    (lambda d: d["budget"].update(weights={"calls": 1.0}, limits={"calls": 1e308})
     or [d["observations"][o]["cost"].update(calls=1e308) for o in ("oracle", "rumour")],
     "observations.rumour.cost.calls: the cost of every observation together overflows (more than 1.8e308)"),
    (lambda d: d["budget"].update(weights={"calls": 1e154}, limits={"calls": 1e308})
     or [d["observations"][o]["cost"].update(calls=1.5e154) for o in ("oracle", "rumour")],
     "observations.rumour.cost: the penalties of every observation together overflow (more than 1.8e308)"),
    (lambda d: d["actions"]["act"].update(loss={"x": {"a": 0, "b": 1e308}, "y": {"u": 1e308}})
     or d["world"].update(y={"values": ["u"]}) or d["prior"].update(y={"u": 1.0}),
     "actions.act.loss: the loss summed over the propositions overflows (more than 1.8e308)"),
    (lambda d: d["actions"]["wait"].update(loss=1.7e308) or d["budget"]["weights"].update(calls=1e307),
     "actions.wait.loss: its largest loss plus the penalties of every observation overflow (more than 1.8e308)"),
])
def test_numbers_that_overflow_a_penalty_loss_or_sum_are_refused(mutate, message):
    d = tiny_dict()
    mutate(d)
    with pytest.raises(DomainError) as info:
        Domain.from_dict(d)
    assert str(info.value) == message


def test_the_largest_finite_numbers_that_do_not_overflow_are_fine():
    d = tiny_dict()
    d["budget"] = {"limits": {"calls": 1e308}, "weights": {"calls": 1e100}}
    d["actions"]["act"]["loss"] = {"x": {"a": 0, "b": 1e300}}
    c = compile_domain(Domain.from_dict(d))
    assert np.isfinite(c.penalty).all() and np.isfinite(c.loss).all()


def test_a_receipt_of_a_huge_but_finite_domain_replays(tmp_path, capsys):
    d = tiny_dict()
    d["budget"] = {"limits": {"calls": 2}, "weights": {"calls": 1e300}}
    path = tmp_path / "huge_weight.yaml"
    path.write_text(yaml.safe_dump(d), encoding="utf-8")
    receipt = tmp_path / "receipt.json"
    assert main(["run", str(path), "--world", "x=a", "--receipt", str(receipt)]) == 0
    assert "Infinity" not in receipt.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["replay", str(receipt), str(path)]) == 0


# --------------------------------------------------------------------------
# 4. table sizes: the compiled arrays are capped by bytes


def test_the_issues_12_kb_file_is_one_line():
    text = size_case(390)
    assert len(text) < 13_000
    _one_line(str(_error(text)))


def test_aliases_of_a_large_observation_name_the_likelihood_product():
    err = _error(size_case(40, n_outcomes=100))
    entries = 40 * 101 * 4096
    assert str(err) == (f"observations: the likelihood table needs 40 observations x 101 outcome slots x "
                        f"4,096 states = {entries:,} entries ({entries * 8 / 1e6:.0f} MB), "
                        f"over the cap of {MAX_ARRAY_BYTES / 1e6:.0f} MB")


def test_the_issues_33_kb_file_is_one_line_not_an_allocation_failure():
    text = size_case(1500)
    assert len(text) > 23_000
    _one_line(str(_error(text)))


def test_a_table_under_the_cap_compiles():
    text = size_case(3, n_outcomes=50, n_props=10)
    c = compile_domain(Domain.from_dict(parse_domain_text(text)))
    assert c.lik.shape == (3, 51, 1024)
    np.testing.assert_allclose(c.lik.sum(axis=1), 1.0)


def _wide(n_values: int, n_props: int, **extra) -> dict:
    vals = [f"v{i}" for i in range(n_values)]
    world = {f"p{i}": {"values": vals} for i in range(n_props)}
    prior = {p: {v: 1 / n_values for v in vals} for p in world}
    d = {"domain": "wide", "world": world, "prior": prior, "actions": {"wait": {"loss": 1}}}
    d.update(extra)
    return d


def test_the_joint_state_cap_is_a_count_and_the_arrays_a_byte_cap():
    assert MAX_JOINT_STATES == MAX_ARRAY_BYTES // 16 == 1_000_000
    # 2 propositions of 1000 values: 1,000,000 states (the cap is inclusive), 2 variables: the state table fits
    c = compile_domain(Domain.from_dict(_wide(1000, 2)))
    assert c.states.shape == (1000 ** 2, 2) and c.states.nbytes == MAX_ARRAY_BYTES
    assert c.prior[0] == c.prior[-1] and c.loss.shape == (1, 1000 ** 2)
    with pytest.raises(DomainError, match=rf"^world: 1,002,001 joint states exceed the cap of "
                                          rf"{MAX_JOINT_STATES:,}$"):
        Domain.from_dict(_wide(1001, 2))
    # 3 propositions of 100 values: 1,000,000 states x 3 variables = 24 MB of state table
    with pytest.raises(DomainError, match=r"^world: the state table needs 1,000,000 states x 3 variables = "
                                          r"3,000,000 entries \(24 MB\), over the cap of 16 MB$"):
        Domain.from_dict(_wide(100, 3))


def test_the_loss_table_is_capped():
    d = _wide(1000, 2)
    d["actions"] = {f"a{i}": {"loss": 1} for i in range(5)}
    with pytest.raises(DomainError, match=r"^actions: the loss table needs 5 actions x 1,000,000 states = "
                                          r"5,000,000 entries \(40 MB\), over the cap of 16 MB$"):
        Domain.from_dict(d)


def test_cases_are_matched_under_a_work_cap():
    d = _wide(64, 2)
    d["world"]["q"] = {"values": [f"w{i}" for i in range(64)]}
    d["prior"]["q"] = {f"w{i}": 1 / 64 for i in range(64)}
    cases = [{"when": {"p0": "v0"}, "loss": 1}] * 80 + [{"loss": 2}]
    d["actions"]["wait"]["loss"] = {"cases": cases}
    # 81 cases x 64 states of p0: fine, whatever the other propositions
    Domain.from_dict(d)
    d["actions"]["wait"]["loss"] = {"cases": [{"when": {"p0": "v0", "p1": "v1", "q": f"w{i % 64}"}, "loss": 1}
                                              for i in range(70)] + [{"loss": 2}]}
    with pytest.raises(DomainError, match=rf"^actions\.wait\.loss\.cases: matching 71 cases against 262,144 states "
                                          rf"takes the file's case tables to 18,612,224 case checks, over the cap "
                                          rf"of {MAX_CASE_CHECKS:,}$"):
        Domain.from_dict(d)


def test_an_uncovered_state_is_found_among_many():
    d = _wide(40, 3)
    d["actions"]["wait"]["loss"] = {"cases": [{"when": {"p1": f"v{i}"}, "loss": 1} for i in range(40) if i != 17]}
    with pytest.raises(DomainError, match=r"^actions\.wait\.loss\.cases: no case matches state p0=v0, p1=v17, "
                                          r"p2=v0 \(add a last case without 'when' as a default\)$"):
        Domain.from_dict(d)


# --------------------------------------------------------------------------
# 5. a budget dimension named only once is a typo unless declared


def _reviewer(weights: dict, dimensions=None) -> dict:
    d = tiny_dict()
    d["budget"] = {"limits": {"calls": 2, "interruptions": 1}, "weights": weights}
    if dimensions is not None:
        d["budget"]["dimensions"] = dimensions
    d["observations"]["human_review"] = {
        "role": "establish", "bears_on": "x", "likelihood": {"a": {"a": 1.0}, "b": {"b": 1.0}},
        "cost": {"calls": 1, "interruptions": 1}}
    return d


def test_a_misspelt_weight_dimension_is_refused_with_a_hint():
    with pytest.raises(DomainError) as info:
        Domain.from_dict(_reviewer({"calls": 1.0, "interruption": 4.0}))
    assert str(info.value) == ("budget.weights.interruption: budget dimension 'interruption' appears nowhere else "
                               "(did you mean 'interruptions'?); declare it in budget.dimensions if it is meant")


def test_the_spelt_right_penalty_counts_the_reviewer():
    c = compile_domain(Domain.from_dict(_reviewer({"calls": 1.0, "interruptions": 4.0})))
    assert c.penalty[c.obs_index("human_review")] == 5.0


def test_a_declared_dimension_may_appear_once():
    d = Domain.from_dict(_reviewer({"calls": 1.0, "interruptions": 4.0, "spare": 0.5}, dimensions=["spare"]))
    assert d.budget.dimensions == ("calls", "interruptions", "spare")
    d = Domain.from_dict(_reviewer({"calls": 1.0, "interruptions": 4.0}, dimensions=["audit_minutes"]))
    assert d.budget.dimensions == ("calls", "interruptions", "audit_minutes")


def test_a_limit_named_once_is_refused_too():
    d = _reviewer({"calls": 1.0, "interruptions": 4.0})
    d["budget"]["limits"]["tokenz"] = 100
    with pytest.raises(DomainError, match=r"^budget\.limits\.tokenz: budget dimension 'tokenz' appears nowhere else"):
        Domain.from_dict(d)


def test_dimensions_must_be_distinct_names():
    d = _reviewer({"calls": 1.0, "interruptions": 4.0}, dimensions=["spare", "spare"])
    with pytest.raises(DomainError, match=r"^budget\.dimensions\[1\]: duplicate dimension 'spare'$"):
        Domain.from_dict(d)
    d = _reviewer({"calls": 1.0, "interruptions": 4.0}, dimensions=["bad name"])
    with pytest.raises(DomainError, match=r"^budget\.dimensions\[0\]: invalid name 'bad name'"):
        Domain.from_dict(d)


# --------------------------------------------------------------------------
# the CLI: one line, exit 2, for every hostile file


HOSTILE = {
    "alias_bomb.yaml": alias_bomb,
    "merge_bomb.yaml": lambda: merge_bomb(20),
    "self_alias.yaml": lambda: HEAD + "observations: &o\n  me: *o\n",
    "deep.yaml": lambda: HEAD + "description: " + "[" * 600 + "]" * 600 + "\n",
    "deep.json": lambda: '{"domain": "deep", "description": ' + "[" * 1200 + "]" * 1200 + "}",
    "control.yaml": lambda: HEAD.replace("hostile", "hos\x07tile"),
    "bigint.yaml": lambda: HEAD.replace("loss: 1", "loss: " + "9" * 5000),
    "newline_name.yaml": lambda: HEAD.replace("  x: {values", '  "x\\n": {values'),
    "long_name.yaml": lambda: HEAD.replace("[a, b]", '[a, "' + "y" * 200_000 + '\\r\\n"]'),
    "penalty.yaml": lambda: HEAD + "budget: {weights: {calls: 1e308}, limits: {calls: 3}}\n"
                                   "observations:\n  o: {role: inform, likelihood: {y: 1}, cost: {calls: 10}}\n",
    "size12k.yaml": lambda: size_case(390),
    "typo.yaml": lambda: yaml.safe_dump(_reviewer({"calls": 1.0, "interruption": 4.0})),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_cli_gives_one_line_and_exit_2(name, tmp_path, capsys):
    path = tmp_path / name
    path.write_text(HOSTILE[name](), encoding="utf-8")
    with hang_guard():
        rc_validate = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert rc_validate == 2 and err == ""
    assert out.count("\n") == 1 and out.startswith(f"{path}: ")
    _one_line(out[len(f"{path}: "):-1])
    with hang_guard():
        rc_run = main(["run", str(path), "--seed", "1"])
    out, err = capsys.readouterr()
    assert rc_run == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("planner: error: ")
    _one_line(err[len("planner: error: "):-1])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["alias_bomb.yaml", "deep.json", "size12k.yaml"])
def test_cli_subprocess_is_one_line(name, tmp_path):
    path = tmp_path / name
    path.write_text(HOSTILE[name](), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "planner.cli", "run", str(path), "--seed", "1"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("planner: error: ")
