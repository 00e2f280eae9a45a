"""Seeded fuzzing of the loader, the compiler and a session's first step, over the shipped domains.

Usage (from the repository root; about 5-10 minutes for 10,000 mutants on 2 cores)::

    python3 -m studies.fuzz_domains --mutations 10000 --seed 1   # writes studies/results/fuzz/counts.{json,md}
    python3 -m studies.fuzz_domains --mutations 300 --seed 7 --out /tmp/fuzz
    python3 -m studies.fuzz_domains --seed 1 --only 4711           # replay one mutant, print its text

Each mutant is one shipped domain (``planner/domains/*.yaml``) changed by one to
three mutations, drawn from a seeded generator (mutant ``i`` of seed ``s`` is
the same on every machine):

- of the parsed data: delete, duplicate, rename or retype a key or an item;
  huge, tiny, negative, NaN and infinite numbers; integers of thousands of
  digits; long names and names with control characters, newlines and lone
  surrogates; reserved words; deep nesting; shared and self-referencing parts
  (written as YAML anchors and aliases, or passed as Python data); alias
  bombs; scaled probabilities; tables blown up (many values, outcomes,
  observations, cases);
- of the text (YAML or JSON): truncation, random bytes and characters,
  deleted, duplicated and re-indented lines, YAML tags, control characters,
  a BOM, CR line ends, padding past the file-size cap, the wrong format.

Every mutant is read as text (``parse_domain_text``) or passed as data
(``Domain.from_dict``), compiled, and, when accepted, asked for one
``Session(compiled).next()`` with the default policy. A
:class:`planner.errors.PlannerError` is a rejection and must be one printable
line (a :class:`~planner.errors.DomainError` at most
:data:`planner.errors.MAX_MESSAGE_CHARS` characters); any other exception, a
run over :data:`TIME_LIMIT_S` or a multi-line message is a failure. A sample of
mutants also goes through the CLI (``planner validate FILE`` and ``planner run
FILE --seed 1``): a rejection is one line and exit status 2.

The count file lists the mutants tried, accepted and rejected by error class
(and by stage, mutation and reason), the slowest runs and every failure.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import io
import json
import os
import platform
import random
import re
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

import planner  # noqa: E402
from planner.compile import compile_domain  # noqa: E402
from planner.model.domain import Domain  # noqa: E402
from planner.errors import MAX_MESSAGE_CHARS, DomainError, PlannerError  # noqa: E402
from planner.io.loader import MAX_FILE_BYTES, parse_domain_text, read_domain_file  # noqa: E402
from planner.policies import DEFAULT_POLICY  # noqa: E402
from planner.session.session import Session  # noqa: E402

__all__ = ["Mutant", "make_mutant", "run_mutant", "cli_check", "fuzz", "TIME_LIMIT_S"]

#: A run (load, compile, one session step) that takes longer than this, in CPU
#: time of this process, is a failure. CPU time, because the machine is shared
#: (as in ``bench/bench_lookahead.py``): wall time is reported next to it, and a
#: run that waits instead of computing is caught by :data:`HANG_S`.
TIME_LIMIT_S = 2.0

#: A run still going after this long is stopped and counted as a failure (a hang).
HANG_S = 30.0

#: Every this many mutants also goes through the CLI (validate and run).
CLI_EVERY = 25

OUT = ROOT / "studies" / "results" / "fuzz"

#: Values a retyped field may become.
JUNK = [None, True, False, 0, -1, 1, 1.5, -0.5, "", "x", "all", "unavailable", "bad name", "1abc", [], {}, ["a"],
        {"a": 1}, {"cases": []}, {"any": [{}]}, [{"when": {}, "loss": 1}], [{"p": {"a": 1}}], {"joint": []},
        {"all": [{"x": "y"}]}, "2026-01-05T09:30:00Z"]

#: Numbers a numeric field may become.
NUMBERS = [0, 0.0, -1, -1e-9, 1e-300, 5e-324, 1e308, -1e308, 1.7976931348623157e308, 1e154, 2.0, 1.0000001,
           0.9999999, 10 ** 400, -(10 ** 400), 10 ** 5000, float("nan"), float("inf"), float("-inf"), 4096, 2 ** 63]

#: Strings that are not names, or are names where they should not be.
ODD_NAMES = ["a\n", "a\r\n", "\na", "a b", "a\x00b", "a\x1b[2Jb", "a\u2028b", "a\ud800", "\ufeffa", "é", "a" * 300,
             "b" * 20_000, "all", "any", "cases", "joint", "unavailable", "true", "null", "0", "-", "_", "a:b", "a.b",
             "'", '"', "\\", "*a", "&a", "!!str", "{}", "[]", "#", "%", "@"]

#: YAML tags injected into the text.
TAGS = ["!!python/object/apply:os.system ['true']", "!!binary aGVsbG8=", "!!timestamp nonsense", "!!bool maybe",
        "!!int x", "!!float x", "!!set {a, b}", "!!omap [a]", "!!str 1", "!!null ''", "!!map [1]", "!custom x",
        "!!merge x", "!!pairs [a]", "!!seq {a: 1}"]


class Mutant:
    """One mutant: its origin, the mutations applied, and what to run (text and its format, or data)."""

    def __init__(self, index: int, source: str, mutations: list, text: str | None, fmt: str, data=None):
        self.index, self.source, self.mutations, self.text, self.fmt, self.data = (
            index, source, mutations, text, fmt, data)

    def describe(self) -> str:
        return f"#{self.index} {self.source} [{self.fmt}] " + "; ".join(self.mutations)


# --------------------------------------------------------------------------
# the mutator


def _paths(node, path=()):
    """Every path below the root (keys and list indices)."""
    stack = [(node, path)]
    seen = set()
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        if isinstance(node, (dict, list)):
            seen.add(id(node))
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for k, v in items:
                stack.append((v, path + (k,)))
        if path:
            yield path


def _parent(data, path):
    node = data
    for k in path[:-1]:
        node = node[k]
    return node


def _pick_path(rng, data, want=None):
    paths = [p for p in _paths(data)]
    if want is not None:
        paths = [p for p in paths if want(_parent(data, p)[p[-1]], p)]
    return rng.choice(paths) if paths else None


def _is_number(v, _p) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_container(v, _p) -> bool:
    return isinstance(v, (dict, list))


def _in_mapping(data):
    return lambda v, p: isinstance(_parent(data, p), dict)


def _rename(parent: dict, old, new) -> None:
    """Rename key `old` of `parent` to `new` in place, keeping the order."""
    items = list(parent.items())
    parent.clear()
    for k, v in items:
        parent[new if k == old else k] = v


def _nest(depth: int, kind: str):
    node = [] if kind == "list" else {}
    for _ in range(depth):
        node = [node] if kind == "list" else {"a": node}
    return node


def _bomb(levels: int, width: int):
    """Nested sharing: dumped as YAML, anchors and aliases (the billion laughs)."""
    node = ["lol"] * width
    for _ in range(levels):
        node = [node] * width
    return node


def _typo(name: str, rng) -> str:
    if len(name) < 2:
        return name + "x"
    i = rng.randrange(len(name))
    op = rng.randrange(3)
    if op == 0:
        return name[:i] + name[i + 1:]
    if op == 1:
        return name[:i] + name[i] * 2 + name[i:]
    return name[:i] + rng.choice("abcdefghijklmnopqrstuvwxyz_") + name[i + 1:]


def _data_mutation(rng, data) -> str:
    """Apply one mutation to the parsed `data` in place; return its description."""
    op = rng.choice(DATA_OPS)
    return op(rng, data)


def _op_delete(rng, data):
    p = _pick_path(rng, data)
    parent = _parent(data, p)
    del parent[p[-1]]
    return f"delete {_fmt_path(p)}"


def _op_duplicate(rng, data):
    p = _pick_path(rng, data)
    parent = _parent(data, p)
    value = copy.deepcopy(parent[p[-1]])
    if isinstance(parent, dict):
        parent[f"{p[-1]}_copy" if isinstance(p[-1], str) else "copy"] = value
    else:
        parent.insert(p[-1], value)
    return f"duplicate {_fmt_path(p)}"


def _op_retype(rng, data):
    p = _pick_path(rng, data)
    _parent(data, p)[p[-1]] = copy.deepcopy(rng.choice(JUNK))
    return f"retype {_fmt_path(p)}"


def _op_number(rng, data):
    p = _pick_path(rng, data, _is_number) or _pick_path(rng, data)
    value = rng.choice(NUMBERS)
    _parent(data, p)[p[-1]] = value
    return f"number {_fmt_path(p)} = {_short(value)}"


def _op_negate(rng, data):
    p = _pick_path(rng, data, _is_number)
    if p is None:
        return "negate (no number)"
    parent = _parent(data, p)
    parent[p[-1]] = -parent[p[-1]] if parent[p[-1]] else -1
    return f"negate {_fmt_path(p)}"


def _op_scale_probability(rng, data):
    p = _pick_path(rng, data, lambda v, _p: _is_number(v, _p) and 0 < v <= 1)
    if p is None:
        return "scale (no probability)"
    factor = rng.choice([2.0, 0.5, 1 + 1e-8, 1 - 1e-10, 1e300, 0.0])
    parent = _parent(data, p)
    parent[p[-1]] = parent[p[-1]] * factor
    return f"scale {_fmt_path(p)} x {factor:g}"


def _op_odd_name(rng, data):
    p = _pick_path(rng, data, _in_mapping(data))
    new = rng.choice(ODD_NAMES)
    _rename(_parent(data, p), p[-1], new)
    return f"rename {_fmt_path(p)} to {_short(new)}"


def _op_odd_value(rng, data):
    p = _pick_path(rng, data, lambda v, _p: isinstance(v, str))
    if p is None:
        return "odd value (no string)"
    value = rng.choice(ODD_NAMES)
    _parent(data, p)[p[-1]] = value
    return f"string {_fmt_path(p)} = {_short(value)}"


def _op_typo(rng, data):
    p = _pick_path(rng, data, lambda v, q: isinstance(_parent(data, q), dict) or isinstance(v, str))
    parent = _parent(data, p)
    if isinstance(parent, dict) and isinstance(p[-1], str) and rng.random() < 0.5:
        new = _typo(p[-1], rng)
        if new not in parent:
            _rename(parent, p[-1], new)
            return f"typo key {_fmt_path(p)} -> {new}"
    if isinstance(parent[p[-1]], str):
        parent[p[-1]] = _typo(parent[p[-1]], rng)
        return f"typo value {_fmt_path(p)}"
    return "typo (nothing)"


def _op_swap_names(rng, data):
    """Replace a string with another string of the same file: references that resolve to the wrong thing."""
    strings = [p for p in _paths(data) if isinstance(_parent(data, p)[p[-1]], str)]
    keys = [p[-1] for p in _paths(data) if isinstance(p[-1], str)]
    if not strings or not keys:
        return "swap (nothing)"
    p = rng.choice(strings)
    _parent(data, p)[p[-1]] = rng.choice(keys)
    return f"swap {_fmt_path(p)}"


def _op_deep(rng, data):
    p = _pick_path(rng, data)
    depth = rng.choice([10, 40, 63, 64, 65, 100, 600, 1200, 5000])
    _parent(data, p)[p[-1]] = _nest(depth, rng.choice(["list", "dict"]))
    return f"nest {_fmt_path(p)} {depth} deep"


def _op_share(rng, data):
    """Make two parts the same object (YAML: an anchor and an alias)."""
    containers = [p for p in _paths(data) if _is_container(_parent(data, p)[p[-1]], p)]
    if len(containers) < 2:
        return "share (nothing)"
    a, b = rng.sample(containers, 2)
    if a[:len(b)] == b or b[:len(a)] == a:  # one inside the other: a cycle
        return "share (nested)"
    _parent(data, b)[b[-1]] = _parent(data, a)[a[-1]]
    return f"share {_fmt_path(b)} := {_fmt_path(a)}"


def _op_cycle(rng, data):
    """Make a part contain itself (a YAML self-reference, or a cycle in Python data)."""
    containers = [p for p in _paths(data) if _is_container(_parent(data, p)[p[-1]], p)]
    p = rng.choice(containers)
    target = _parent(data, p)[p[-1]]
    if isinstance(target, dict):
        target["self"] = target
    else:
        target.append(target)
    return f"cycle at {_fmt_path(p)}"


def _op_bomb(rng, data):
    levels, width = rng.choice([(3, 9), (5, 9), (8, 9), (12, 4), (30, 2)])
    where = rng.choice(["description", "extra", "checks"])
    if where == "checks":
        data["checks"] = [{"name": "bomb", "policy": "one-step", "expect": {"acquisitions": _bomb(levels, width)}}]
    else:
        data[where] = _bomb(levels, width)
    return f"bomb {levels}x{width} in {where}"


def _op_blow_up(rng, data):
    """Make a table large: many values, outcomes, observations or cases."""
    kind = rng.choice(["values", "outcomes", "observations", "cases", "props"])
    n = rng.choice([50, 500, 3000, 20_000])
    if kind == "values" and isinstance(data.get("world"), dict) and data["world"]:
        p = rng.choice(list(data["world"]))
        if isinstance(data["world"][p], dict) and isinstance(data["world"][p].get("values"), list):
            data["world"][p]["values"] = data["world"][p]["values"] + [f"v{i}" for i in range(n)]
    elif kind == "outcomes" and isinstance(data.get("observations"), dict) and data["observations"]:
        o = rng.choice(list(data["observations"]))
        if isinstance(data["observations"][o], dict):
            data["observations"][o]["likelihood"] = {f"y{i}": 1 / n for i in range(n)}
            data["observations"][o].pop("outcomes", None)
            data["observations"][o].pop("depends_on", None)
    elif kind == "observations" and isinstance(data.get("observations"), dict) and data["observations"]:
        o = rng.choice(list(data["observations"]))
        spec = data["observations"][o]
        for i in range(min(n, 3000)):
            data["observations"][f"{o}_{i}"] = spec  # shared: aliases in YAML
    elif kind == "props" and isinstance(data.get("world"), dict):
        for i in range(min(n // 10, 400)):
            data["world"][f"p{i}"] = {"values": ["a", "b"]}
            if isinstance(data.get("prior"), dict) and "joint" not in data["prior"]:
                data["prior"][f"p{i}"] = {"a": 0.5, "b": 0.5}
    elif kind == "cases" and isinstance(data.get("actions"), dict) and data["actions"]:
        a = rng.choice(list(data["actions"]))
        if isinstance(data["actions"][a], dict):
            data["actions"][a]["loss"] = {"cases": [{"loss": i} for i in range(min(n, 3000))]}
    return f"blow up {kind} {n}"


def _op_reorder(rng, data):
    p = _pick_path(rng, data, _is_container)
    node = _parent(data, p)[p[-1]]
    if isinstance(node, dict):
        items = list(node.items())
        rng.shuffle(items)
        node.clear()
        node.update(items)
    else:
        rng.shuffle(node)
    return f"reorder {_fmt_path(p)}"


DATA_OPS = [_op_delete, _op_duplicate, _op_retype, _op_number, _op_negate, _op_scale_probability, _op_odd_name,
            _op_odd_value, _op_typo, _op_swap_names, _op_deep, _op_share, _op_cycle, _op_bomb, _op_blow_up,
            _op_reorder, _op_delete, _op_retype, _op_number, _op_typo]


def _text_mutation(rng, text: str) -> tuple:
    """One mutation of the text; returns (text, description)."""
    op = rng.randrange(12)
    n = len(text)
    if n == 0:  # an earlier truncation left nothing
        return chr(rng.randrange(0x20, 0x7F)), "one random character"
    if op == 0:
        cut = rng.randrange(n + 1)
        return text[:cut], f"truncate at {cut}"
    if op == 1:
        k = rng.randrange(1, 8)
        out = list(text)
        for _ in range(k):
            out.insert(rng.randrange(len(out) + 1), chr(rng.randrange(0, 0x250)))
        return "".join(out), f"insert {k} random characters"
    if op == 2:
        i = rng.randrange(n)
        j = min(n, i + rng.randrange(1, 40))
        noise = bytes(rng.randrange(256) for _ in range(j - i)).decode("latin-1")
        return text[:i] + noise + text[j:], f"random bytes at {i}"
    lines = text.split("\n")
    if op == 3:
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i] + lines[i + 1:]), f"delete line {i + 1}"
    if op == 4:
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i + 1] + lines[i:]), f"duplicate line {i + 1}"
    if op == 5:
        i = rng.randrange(len(lines))
        shift = rng.choice([-2, -1, 1, 2, 4])
        lines[i] = (" " * shift + lines[i]) if shift > 0 else lines[i][-shift:]
        return "\n".join(lines), f"indent line {i + 1} by {shift}"
    if op == 6:
        i = rng.randrange(len(lines))
        value = rng.choice(TAGS + ["9" * 5000, "-" + "1_0" * 2000, "0x" + "f" * 3000, "1" + "0" * 400 + ".5"])
        if ": " in lines[i]:
            head, _, _ = lines[i].partition(": ")
            lines[i] = f"{head}: {value}"
        return "\n".join(lines), f"value {_short(value)} on line {i + 1}"
    if op == 7:
        i = rng.randrange(n + 1)
        ch = rng.choice(["\x00", "\x07", "\x1b", "\x7f", "\x85", "\u2028", "\ufeff", "\t", "\r", "\ufffe", "\x0c"])
        return text[:i] + ch + text[i:], f"control character {ch!r} at {i}"
    if op == 8:
        return "\ufeff" + text.replace("\n", "\r\n"), "BOM and CRLF"
    if op == 9:
        i = rng.randrange(len(lines))
        m = re.match(r"^(\s*)([A-Za-z_][\w-]*):\s*(.+)$", lines[i])
        if m:  # give a line's value an anchor and alias it from the top level
            lines[i] = f"{m.group(1)}{m.group(2)}: &fz {m.group(3)}"
            lines.append(f"description: *fz")
        return "\n".join(lines), f"anchor on line {i + 1}"
    if op == 10:
        return text + "#" * (MAX_FILE_BYTES + 1 - len(text.encode("utf-8", "surrogatepass"))), "pad past the size cap"
    i, j = sorted(rng.randrange(n + 1) for _ in range(2))
    return text[:i] + text[j:], f"delete characters {i}-{j}"


def _fmt_path(p) -> str:
    out = ""
    for k in p:
        out += f"[{k}]" if isinstance(k, int) else ("." if out else "") + _short(k, 30)
    return out


def _short(x, n: int = 24) -> str:
    r = repr(x)
    return r if len(r) <= n else r[:n - 3] + "..."


def _dump(data, fmt: str) -> str:
    if fmt == "json":  # ASCII with escapes, so that lone surrogates survive as \ud800
        return json.dumps(data, ensure_ascii=True)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=1_000_000)


_SOURCES = None


def _sources() -> list:
    global _SOURCES
    if _SOURCES is None:
        _SOURCES = []
        for name in planner.shipped_domains():
            path = planner.DOMAINS / f"{name}.yaml"
            _SOURCES.append((name, path.read_text(encoding="utf-8"), read_domain_file(path)))
    return _SOURCES


def _expanded_size(data, limit: int) -> int:
    """Nodes of `data` with shared parts counted each time (stops past `limit`; a cycle counts as past it)."""
    n, stack, on_path = 0, [data], set()
    while stack and n <= limit:
        node = stack.pop()
        n += 1
        if isinstance(node, (dict, list)):
            if id(node) in on_path:
                return limit + 1
            if len(on_path) < 10_000:
                on_path.add(id(node))  # an approximation of the path: enough to stop a cycle
            stack.extend(node.values() if isinstance(node, dict) else node)
    return n


def make_mutant(seed: int, index: int) -> Mutant:
    """Mutant `index` of `seed` (the same on every machine)."""
    rng = random.Random(f"{seed}:{index}")
    name, text, data = rng.choice(_sources())
    data = copy.deepcopy(data)
    mutations = []
    fmt = rng.choices(["yaml", "json", "dict"], weights=[6, 3, 1])[0]
    n_data = rng.choice([0, 1, 1, 1, 2, 2, 3]) if rng.random() < 0.8 else 0
    for _ in range(n_data):
        try:
            mutations.append(_data_mutation(rng, data))
        except (IndexError, KeyError, TypeError, ValueError, AttributeError, RecursionError):
            mutations.append("(mutation skipped)")  # the mutator's own limits, not the loader's
    if fmt == "json" and _expanded_size(data, 200_000) > 200_000:
        fmt = "dict"  # JSON would write out every shared part: pass the data (the loader counts the same)
        mutations.append("(as data)")
    if fmt == "dict":
        return Mutant(index, name, mutations, None, fmt, data)
    try:
        out = _dump(data, fmt) if (n_data or fmt == "json") else text
    except (ValueError, RecursionError, yaml.YAMLError):  # a cycle JSON cannot write: pass the data itself
        return Mutant(index, name, mutations + ["(as data)"], None, "dict", data)
    if rng.random() < 0.45 or not mutations:
        for _ in range(rng.choice([1, 1, 2])):
            out, what = _text_mutation(rng, out)
            mutations.append(what)
    if rng.random() < 0.02:  # the wrong parser for the text
        fmt = "json" if fmt == "yaml" else "yaml"
        mutations.append(f"read as {fmt}")
    return Mutant(index, name, mutations, out, fmt)


# --------------------------------------------------------------------------
# running one mutant


class _Hang(Exception):
    pass


@contextlib.contextmanager
def _hang_guard(seconds: float):
    if not hasattr(signal, "SIGALRM"):  # pragma: no cover - Windows: no guard
        yield
        return

    def _alarm(signum, frame):
        raise _Hang(f"still running after {seconds} s")
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _one_line_problem(err: PlannerError) -> str | None:
    """Why a rejection's message is not one printable line (None when it is)."""
    msg = str(err)
    if "\n" in msg or "\r" in msg or not msg.isprintable():
        return f"not one printable line: {msg[:200]!r}"
    if isinstance(err, DomainError) and len(msg) > MAX_MESSAGE_CHARS:
        return f"{len(msg)} characters, over {MAX_MESSAGE_CHARS}"
    return None


def run_mutant(m: Mutant, policy: str | None = None) -> dict:
    """Load, compile and take one session step (`policy`, default the library's); the outcome as a plain dict.

    Keys: ``outcome`` (accepted, rejected or failure), ``stage`` (where it
    stopped: parse, load, compile, session), ``error_class``, ``message``,
    ``seconds`` (wall) and ``cpu_seconds``.
    """
    stage = "parse"
    t0, c0 = time.perf_counter(), time.process_time()
    res = {"outcome": "accepted", "stage": "done", "error_class": None, "message": None}
    try:
        with _hang_guard(HANG_S):
            data = m.data if m.fmt == "dict" else parse_domain_text(m.text, json_format=m.fmt == "json")
            stage = "load"
            domain = Domain.from_dict(data)
            stage = "compile"
            compiled = compile_domain(domain)
            stage = "session"
            Session(compiled, policy).next()
    except PlannerError as e:
        res.update(outcome="rejected", stage=stage, error_class=type(e).__name__, message=str(e))
        problem = _one_line_problem(e)
        if problem:
            res.update(outcome="failure", kind="message", failure=f"rejection message {problem}")
    except Exception as e:  # anything but a PlannerError is a bug (a hang too)
        tb = traceback.format_exception(type(e), e, e.__traceback__)
        res.update(outcome="failure", kind="hang" if isinstance(e, _Hang) else "exception", stage=stage,
                   error_class=type(e).__name__, message=str(e)[:300], failure="".join(tb[-6:])[-3000:])
    res["seconds"] = time.perf_counter() - t0
    res["cpu_seconds"] = time.process_time() - c0
    if res["outcome"] != "failure" and res["cpu_seconds"] > TIME_LIMIT_S:
        res.update(outcome="failure", kind="time",
                   failure=f"took {res['cpu_seconds']:.2f} s of CPU (limit {TIME_LIMIT_S} s)")
    return res


def cli_check(m: Mutant, result: dict, tmpdir: Path) -> str | None:
    """Run the mutant through ``planner validate`` and ``planner run``; the problem, or None.

    A rejected mutant must print one line and exit 2 in both (validate: ``FILE:
    message`` on stdout; run: ``planner: error: message`` on stderr); an
    accepted one must validate (exit 0) and run to the end or fail in one line.
    """
    from planner.cli import main

    if m.fmt == "dict":
        return None
    path = tmpdir / f"mutant{m.index}.{'json' if m.fmt == 'json' else 'yaml'}"
    path.write_text(m.text, encoding="utf-8", errors="surrogatepass")
    try:
        for argv in (["validate", str(path)], ["run", str(path), "--seed", "1"]):
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _hang_guard(HANG_S):
                try:
                    rc = main(argv)
                except SystemExit as e:  # argparse
                    rc = e.code
            out, err = out.getvalue(), err.getvalue()
            if result["outcome"] == "rejected":
                if rc != 2:
                    return f"{argv[0]}: exit {rc} for a rejected mutant"
                if argv[0] == "validate":
                    if out.count("\n") != 1 or not out.startswith(f"{path}: ") or err:
                        return f"validate: not one line: {out[:200]!r} {err[:200]!r}"
                elif err.count("\n") != 1 or not err.startswith("planner: error: "):
                    return f"run: not one line on stderr: {err[:200]!r}"
            elif argv[0] == "validate" and rc != 0:
                return f"validate: exit {rc} for an accepted mutant: {out[:200]!r}"
            elif rc not in (0, 2) or (rc == 2 and err.count("\n") != 1):
                return f"run: exit {rc}: {err[:200]!r}"
    except Exception as e:  # a traceback through the CLI
        return f"{type(e).__name__}: {str(e)[:200]}"
    finally:
        path.unlink(missing_ok=True)
    return None


# --------------------------------------------------------------------------
# the campaign


_REASON_SUBS = [(re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""), "'_'"),
                (re.compile(r"line \d+, column \d+"), "line L, column C"),
                (re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?(?:e[+-]?\d+)?"), "N")]


def _reason(message: str) -> str:
    """A message with its path, names and numbers taken out: the kind of rejection."""
    where, _, what = message.partition(": ")
    if where.startswith("line "):
        what = message.split(": ", 1)[1]
    for rx, sub in _REASON_SUBS:
        what = rx.sub(sub, what)
    what = re.sub(r"\(did you mean '_'\?\)|\([a-z ]+: [^)]*\)", "(...)", what)
    return what[:90]


def _warm_up(policy: str | None = None) -> None:
    """Compile the numba kernels once, so that no mutant's time includes it."""
    Session(compile_domain(planner.load_domain("payment_release")), policy).next()


def fuzz(mutations: int, seed: int, *, cli_every: int = CLI_EVERY, policy: str | None = None, progress=None) -> dict:
    """Run `mutations` mutants of seed `seed`; return the counts (see the module docstring).

    `policy` is the policy of the session step (default: the library's
    :data:`planner.policies.DEFAULT_POLICY`); the CLI sample runs ``planner
    run`` with its own default.
    """
    _warm_up(policy)
    tried = accepted = rejected = 0
    by_class, by_stage, by_reason, by_format = Counter(), Counter(), Counter(), Counter()
    by_mutation = defaultdict(Counter)
    slowest, failures, cli_failures = [], [], []
    times, cpu_times = [], []
    cli_checked = primitive = 0
    over = over_wall = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fuzz-cli-") as tmp:
        for i in range(mutations):
            m = make_mutant(seed, i)
            tried += 1
            primitive += len(m.mutations)
            r = run_mutant(m, policy)
            times.append(r["seconds"])
            cpu_times.append(r["cpu_seconds"])
            over += r["cpu_seconds"] > TIME_LIMIT_S
            over_wall += r["seconds"] > TIME_LIMIT_S
            by_format[m.fmt] += 1
            for what in m.mutations:
                by_mutation[what.split(" ")[0]][r["outcome"]] += 1
            if r["outcome"] == "accepted":
                accepted += 1
            elif r["outcome"] == "rejected":
                rejected += 1
                by_class[r["error_class"]] += 1
                by_stage[r["stage"]] += 1
                by_reason[_reason(r["message"])] += 1
            else:
                failures.append({"mutant": i, "what": m.describe()[:400], "stage": r["stage"], "kind": r["kind"],
                                 "error_class": r["error_class"], "failure": r.get("failure", "")})
            entry = {"mutant": i, "seconds": round(r["seconds"], 4), "cpu_seconds": round(r["cpu_seconds"], 4),
                     "outcome": r["outcome"], "stage": r["stage"], "what": m.describe()[:200]}
            slowest = sorted(slowest + [entry], key=lambda e: -e["cpu_seconds"])[:10]
            if cli_every and i % cli_every == 0 and r["outcome"] != "failure":
                cli_checked += 1
                problem = cli_check(m, r, Path(tmp))
                if problem:
                    cli_failures.append({"mutant": i, "what": m.describe()[:300], "problem": problem})
            if progress and (i + 1) % 500 == 0:
                progress(i + 1, mutations, time.perf_counter() - started)
    return {
        "command": f"python3 -m studies.fuzz_domains --mutations {mutations} --seed {seed}"
                   + (f" --policy {policy}" if policy else ""),
        "seed": seed,
        "policy": policy or DEFAULT_POLICY,
        "sources": [name for name, _, _ in _sources()],
        "mutations_tried": tried,
        "primitive_mutations": primitive,
        "accepted": accepted,
        "rejected": rejected,
        "failures": len(failures),
        "uncaught_exceptions": sum(1 for f in failures if f["kind"] == "exception"),
        "hangs": sum(1 for f in failures if f["kind"] == "hang"),
        "multi_line_or_long_messages": sum(1 for f in failures if f["kind"] == "message"),
        "rejected_by_error_class": dict(by_class.most_common()),
        "rejected_by_stage": dict(by_stage.most_common()),
        "rejected_by_reason": dict(by_reason.most_common(40)),
        "mutants_by_format": dict(by_format.most_common()),
        "outcomes_by_mutation": {k: dict(v) for k, v in sorted(by_mutation.items())},
        "time_limit_s": TIME_LIMIT_S,
        "runs_over_time_limit": over,
        "runs_over_time_limit_wall": over_wall,
        "cpu_seconds": _quantiles(cpu_times),
        "seconds": _quantiles(times),
        "slowest": slowest,
        "cli": {"checked": cli_checked, "every": cli_every, "failures": cli_failures},
        "failure_examples": failures[:50],
        "machine": f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
                   f"{os.cpu_count()} cores, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}"
                   if hasattr(os, "getloadavg") else platform.platform(),
    }


def _quantiles(xs) -> dict:
    xs = sorted(xs)
    if not xs:
        return {"max": 0.0, "p99": 0.0, "median": 0.0, "total": 0.0}
    return {"max": round(xs[-1], 4), "p99": round(xs[int(0.99 * (len(xs) - 1))], 4),
            "median": round(xs[len(xs) // 2], 4), "total": round(sum(xs), 1)}


def _markdown(c: dict) -> str:
    lines = [
        "# Fuzzing the loader, compiler and first session step",
        "",
        f"Command: `{c['command']}` ({c['machine']}); session step with policy `{c['policy']}`. "
        "Mutants of the shipped domains "
        f"({len(c['sources'])} files), {c['primitive_mutations']:,} mutations in all; see "
        "`studies/fuzz_domains.py` for the mutations and the checks. Counts are the same on every machine for a seed; "
        "times are this machine's.",
        "",
        "| mutants tried | accepted | rejected | failures | uncaught exceptions | runs over "
        f"{c['time_limit_s']:g} s (CPU / wall) | slowest run (CPU / wall) | CLI checked | CLI failures |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {c['mutations_tried']:,} | {c['accepted']:,} | {c['rejected']:,} | {c['failures']} | "
        f"{c['uncaught_exceptions']} | {c['runs_over_time_limit']} / {c['runs_over_time_limit_wall']} | "
        f"{c['cpu_seconds']['max']:.3f} s / {c['seconds']['max']:.3f} s | "
        f"{c['cli']['checked']} | {len(c['cli']['failures'])} |",
        "",
        f"Per run (load, compile, one session step): median {c['cpu_seconds']['median'] * 1000:.1f} ms CPU "
        f"({c['seconds']['median'] * 1000:.1f} ms wall), 99th percentile {c['cpu_seconds']['p99'] * 1000:.0f} ms "
        f"CPU ({c['seconds']['p99'] * 1000:.0f} ms wall). The limit applies to CPU time (the machine is shared); "
        "a run still going after 30 s of wall time would count as a hang.",
        "",
        "## Rejections by error class and stage",
        "",
        "| error class | rejected |", "|---|---:|",
        *[f"| {k} | {v:,} |" for k, v in c["rejected_by_error_class"].items()],
        "",
        "| stage | rejected |", "|---|---:|",
        *[f"| {k} | {v:,} |" for k, v in c["rejected_by_stage"].items()],
        "",
        "## The most frequent reasons (paths, names and numbers taken out)",
        "",
        "| reason | rejected |", "|---|---:|",
        *[f"| {k.replace('|', '/')} | {v:,} |" for k, v in list(c["rejected_by_reason"].items())[:20]],
        "",
        "## The slowest runs",
        "",
        "| mutant | wall s | CPU s | outcome | stage | mutations |", "|---:|---:|---:|---|---|---|",
        *[f"| {e['mutant']} | {e['seconds']:.3f} | {e['cpu_seconds']:.3f} | {e['outcome']} | {e['stage']} | "
          f"{e['what'].replace('|', '/')} |" for e in c["slowest"][:5]],
        "",
    ]
    if c["failure_examples"] or c["cli"]["failures"]:
        lines += ["## Failures", ""]
        lines += [f"- {f['what']}: {f['error_class']} {f['failure'].splitlines()[-1] if f['failure'] else ''}"
                  for f in c["failure_examples"]]
        lines += [f"- CLI {f['what']}: {f['problem']}" for f in c["cli"]["failures"]]
        lines.append("")
    return "\n".join(lines)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Seeded fuzzing of the domain loader, compiler and first session step.")
    p.add_argument("--mutations", type=int, default=10_000, help="how many mutants to try (default 10,000)")
    p.add_argument("--seed", type=int, default=1, help="the seed (mutant i of seed s is the same everywhere)")
    p.add_argument("--out", type=Path, default=OUT, help=f"folder for counts.json and counts.md (default {OUT})")
    p.add_argument("--cli-every", type=int, default=CLI_EVERY, help="run every Nth mutant through the CLI too")
    p.add_argument("--policy", help=f"the policy of the session step (default: the library's, {DEFAULT_POLICY})")
    p.add_argument("--only", type=int, help="run mutant ONLY of the seed, print it and its outcome, write nothing")
    args = p.parse_args(argv)
    if args.only is not None:
        _warm_up(args.policy)
        m = make_mutant(args.seed, args.only)
        print(m.describe())
        print(m.text if m.text is not None else repr(m.data)[:5000])
        print(json.dumps(run_mutant(m, args.policy), indent=2, default=str))
        return 0

    def progress(done, total, elapsed):
        print(f"{done:,}/{total:,} mutants, {elapsed:.0f} s", file=sys.stderr)

    counts = fuzz(args.mutations, args.seed, cli_every=args.cli_every, policy=args.policy, progress=progress)
    args.out.mkdir(parents=True, exist_ok=True)
    _write_atomic(args.out / "counts.json", json.dumps(counts, indent=2) + "\n")
    _write_atomic(args.out / "counts.md", _markdown(counts))
    print(f"{counts['mutations_tried']:,} mutants: {counts['accepted']:,} accepted, {counts['rejected']:,} rejected, "
          f"{counts['failures']} failures, {counts['runs_over_time_limit']} over {TIME_LIMIT_S:g} s of CPU "
          f"({counts['runs_over_time_limit_wall']} of wall), slowest {counts['cpu_seconds']['max']:.3f} s CPU "
          f"({counts['seconds']['max']:.3f} s wall); wrote {args.out}/counts.json and counts.md")
    return 1 if counts["failures"] or counts["cli"]["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
