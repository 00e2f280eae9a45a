"""A second, independent mutator for domain files, receipts, outcome logs and tools, with oracles for silent changes.

Usage (from the repository root)::

    python3 -m studies.fuzz_inputs --mutants 1000 --seed 22  # writes studies/results/fuzz_inputs/counts.{json,md}
    python3 -m studies.fuzz_inputs --mutants 60 --seed 7 --out /tmp/fuzz2

:mod:`studies.fuzz_domains` (the first fuzzer) breaks files at random and asks
that nothing crash. This one asks a sharper question of each mutant: if it is
accepted, does it still mean what a person reading it would think? Its
strategies, each with its own oracle:

- ``number``: one number of a shipped domain respelt as YAML 1.1 and 1.2
  disagree (``0200``, ``08``, ``1:30``, ``1_000``, ``0b11``, ``0o17``, ``+5``,
  ``5.0e0``). Oracle: accepted only with the value the YAML 1.2 core schema gives
  the spelling (computed here by our own reading of the 1.2 rules).
- ``hidden_break``: a comment on a line of an observation, holding a character
  that some readers treat as a line break (NEL, U+2028, U+2029, VT, FF, a lone CR,
  ZWSP, NBSP, RLO, BOM) followed by ``failure_rate: 1.0``. Oracle: accepted only if
  it reads as the file without the comment, which is what grep and diff show.
- ``near_name``: a lineage, purpose or entitlement name changed by one character in
  one place. Oracle: accepted only with a signal (the loader refuses it, or
  ``planner validate``'s dead-domain warnings or the CLI's unknown-entitlement
  warning names it for a caller of the original file).
- ``receipt``: a real receipt (several domains and policies) edited: a number
  nudged, made huge (10**400) or 64-bit-plus; a key repeated with another value;
  a key dropped; a string changed; or an equivalent rewrite (indent, key order, a
  BOM). Oracle: ``planner replay`` never says ``match`` for an edit of a field it
  re-derives, and never fails on an equivalent rewrite.
- ``log``: a real outcome log with one cell set to a hostile value (a blob, NULL,
  a 64-bit extreme, a non-finite number, JSON with a repeated key or ``NaN``),
  a row dropped, its header changed or the file cut. Oracle: ``log show``,
  ``log show --json`` and ``calibrate`` exit 0 (strict JSON out) or print one
  line ``planner: error: ...`` with status 2, and never change the file.
- ``tool``: every tool of a shipped domain's session made hostile in one way: a
  ``str`` subclass whose ``__eq__``/``__hash__``/``__str__``/``__repr__`` raise
  (holding a declared outcome or not), a numpy array or scalar, bytes, a string
  of up to 20 MB, an object whose ``__repr__`` raises, a mapping that raises on
  lookup, an exception whose ``__str__``/``__repr__`` raise, a bare
  ``BaseException`` subclass, a message of a megabyte over many lines, a mapper
  that does any of these, run by ``Session.run`` or ``arun`` with and without a
  timeout; or a bad timeout (0, negative, NaN, infinity, a bool, a string, 1e300)
  on the Tool or the run. Oracle: the run ends in a stop, every step's outcome
  is a plain ``str`` (the plain text of a declared outcome, else ``unavailable``),
  every note one printable line of at most ``MAX_NOTE_CHARS``, no method of the
  hostile ``str`` ever runs, the receipt is strict JSON under 1 MB that replays
  as a match; a bad timeout is refused before any tool runs, in one line naming
  the Tool or the run.

Every mutant runs in-process through :func:`planner.cli.main` (or the loader),
under a :data:`HANG_S` alarm. A failure is a traceback (any exception out of
``main``), a hang, an error that is not one line, or a silent change (an
oracle's breach). The counts file lists every failure with its mutant number,
so ``--only N`` replays it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import sys
import tempfile
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

#: Seconds one mutant may take before it counts as a hang.
HANG_S = 60

STRATEGIES = ("number", "hidden_break", "near_name", "receipt", "log", "tool")

#: Receipt fields replay does not re-derive (documented in planner.session.replay and docs/outcome-log.md):
#: an edit there may replay as a match. Paths are prefixes, ``*`` for any list index or key.
NOT_DERIVED = ("steps.*.tool_note", "steps.*.policy_info", "final.policy_info", "world", "seed", "source",
               "created", "domain.source", "policy.info",
               # the caller is replay's input, not its output: an edit that changes no gate replays as a match
               "purpose", "entitlements", "decision_time", "limits_override")


class _Hang(Exception):
    pass


@contextlib.contextmanager
def _alarm(seconds: int):
    def ring(signum, frame):
        raise _Hang()

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run_cli(argv) -> dict:
    """``planner argv`` in-process: exit code, stdout, stderr, and the failure kind (None when it behaved)."""
    from planner.cli import main

    out, err = io.StringIO(), io.StringIO()
    code, failure = None, None
    try:
        with _alarm(HANG_S), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([str(a) for a in argv])
            except SystemExit as e:
                code = e.code
    except _Hang:
        failure = "hang"
    except Exception as e:  # noqa: BLE001 - anything out of main is the failure we count
        failure = f"traceback: {type(e).__name__}: {str(e)[:120]}"
    stderr = err.getvalue()
    if failure is None and code == 2:
        lines = [line for line in stderr.splitlines() if not line.startswith("planner: warning: ")]
        if len(lines) != 1 or not lines[0].startswith("planner: error: "):
            failure = "error not one line"
    if failure is None and "Traceback" in stderr:
        failure = "traceback in stderr"
    return {"code": code, "out": out.getvalue(), "err": stderr, "failure": failure}


# --------------------------------------------------------------------------
# domain files

def _shipped() -> list[Path]:
    return sorted((ROOT / "planner" / "domains").glob("*.yaml"))


#: A plain number in a value position: after ": " or inside a flow mapping or list.
_NUMBER = re.compile(r"(?<=[:\[,{] )(-?\d+(?:\.\d+)?)(?=\s*(?:[,}\]]|#|$))", re.M)


def _yaml12_core(text: str):
    """What the YAML 1.2 core schema reads a plain scalar as (our own reading of spec 1.2.2, section 10.3.2)."""
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text, 10)
    if re.fullmatch(r"0o[0-7]+", text):
        return int(text[2:], 8)
    if re.fullmatch(r"0x[0-9a-fA-F]+", text):
        return int(text[2:], 16)
    if re.fullmatch(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?", text):
        return float(text)
    return text


def _respell(rng, token: str) -> str:
    value = float(token)
    whole = value.is_integer() and "." not in token
    n = int(value) if whole else None
    options = [f"0{token.lstrip('-')}" if not token.startswith("-") else f"-0{token[1:]}", f"+{token}",
               f"{token}e0" if "." in token else f"{token}.0e0"]
    if whole and n >= 0:
        options += [f"0b{n:b}", f"0o{n:o}", f"0x{n:x}", f"0{n:o}" if n else "00"]
        if n >= 10:
            options.append(f"{str(n)[:-1]}_{str(n)[-1]}")
        if n >= 60:
            options.append(f"{n // 60}:{n % 60:02d}")
    if not whole:
        int_part, frac = token.lstrip("-").split(".")
        sign = "-" if token.startswith("-") else ""
        options += [f"{sign}0{int_part}.{frac}", f"{sign}{int_part}.{frac}_0"]
    return rng.choice(options)


def _canonical(value) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def mutate_number(rng, text: str):
    spots = list(_NUMBER.finditer(text))
    if not spots:
        return None
    m = rng.choice(spots)
    spelling = _respell(rng, m.group(1))
    mutant = text[:m.start(1)] + spelling + text[m.end(1):]
    expected = text[:m.start(1)] + _canonical(_yaml12_core(spelling)) + text[m.end(1):]
    return {"text": mutant, "expected": expected, "what": f"{m.group(1)} -> {spelling}"}


_BREAKS = {"NEL": "\x85", "LS": "\u2028", "PS": "\u2029", "VT": "\x0b", "FF": "\x0c", "CR": "\r",
           "ZWSP": "\u200b", "NBSP": "\u00a0", "RLO": "\u202e", "BOM": "\ufeff"}


def mutate_hidden_break(rng, text: str):
    lines = text.split("\n")
    spots = [i for i, line in enumerate(lines) if re.match(r"^    (relevance|age_minutes|role|bears_on): ", line)
             and "#" not in line]
    if not spots:
        return None
    i = rng.choice(spots)
    name = rng.choice(sorted(_BREAKS))
    lines[i] = lines[i] + f"  # checked{_BREAKS[name]}    failure_rate: 1.0"
    return {"text": "\n".join(lines), "expected": text, "what": f"{name} in a comment at line {i + 1}"}


def _typo(rng, name: str) -> str:
    k = rng.randrange(len(name))
    kind = rng.choice(("drop", "double", "swap"))
    if kind == "drop" and len(name) > 3:
        return name[:k] + name[k + 1:]
    if kind == "swap" and k + 1 < len(name) and name[k] != name[k + 1]:
        return name[:k] + name[k + 1] + name[k] + name[k + 2:]
    return name[:k] + name[k] + name[k:]


def mutate_near_name(rng, text: str):
    spots = [(m, "lineage") for m in re.finditer(r"(?<=lineage: )([A-Za-z_][\w-]*)", text)]
    spots += [(m, "entitlement") for m in re.finditer(r"(?<=entitlement: )([A-Za-z_][\w.-]*)", text)]
    spots += [(m, "purposes") for m in re.finditer(r"(?<=purposes: \[)([A-Za-z_][\w-]*)", text)]
    if not spots:
        return None
    m, field = rng.choice(spots)
    new = _typo(rng, m.group(1))
    if new == m.group(1):
        return None
    return {"text": text[:m.start(1)] + new + text[m.end(1):], "expected": text, "field": field,
            "old": m.group(1), "new": new, "what": f"{field} {m.group(1)} -> {new}"}


def check_domain(strategy: str, m: dict) -> str | None:
    """The failure of one domain mutant (None: refused in one line, or accepted with its meaning)."""
    from planner.errors import PlannerError
    from planner.io.loader import parse_domain_text
    from planner.model.domain import Domain

    try:
        with _alarm(HANG_S):
            try:
                data = parse_domain_text(m["text"])
                domain = Domain.from_dict(data)
            except PlannerError as e:
                m["outcome"] = "refused"
                return None if "\n" not in str(e) else "error not one line"
    except _Hang:
        return "hang"
    except Exception as e:  # noqa: BLE001
        return f"traceback: {type(e).__name__}: {str(e)[:120]}"
    m["outcome"] = "accepted"
    if strategy in ("number", "hidden_break"):
        try:
            expected = parse_domain_text(m["expected"])
        except PlannerError:
            return None  # the canonical reading is itself refused (a number where a name belongs): nothing to compare
        return None if data == expected else f"silent change: {m['what']}"
    # near_name: accepted; is there a signal?
    from planner.cli.common import _mentioned
    try:
        from planner.gates.prerequisites import dead_domain_warnings
    except ImportError:  # a planner without validate's dead-domain warnings (to measure an older tree)
        def dead_domain_warnings(domain):
            return []

    original = Domain.from_dict(parse_domain_text(m["expected"]))
    before = set(dead_domain_warnings(original))
    after = set(dead_domain_warnings(domain))
    if after - before:
        return None
    ents, purposes = _mentioned([domain])
    if m["field"] == "entitlement" and m["old"] not in ents:
        return None  # a caller holding the original entitlement is warned: "never mentions this entitlement"
    if m["field"] == "purposes" and m["old"] not in purposes:
        return None  # likewise for --purpose
    return f"silent change: {m['what']}"


# --------------------------------------------------------------------------
# receipts

_RECEIPT_SOURCES = (("payment_release", "one-step"), ("payment_release", "bounded"), ("identity_registry", "bounded"),
                    ("tool_outage", "lookahead:2"), ("kyc_chain", "dependency"), ("second_copy", "bounded"))


def _receipts() -> list:
    import planner
    from planner.session.simulate import simulate

    out = []
    for name, spec in _RECEIPT_SOURCES:
        d = planner.load_domain(name)
        for seed in (1, 2):
            s = planner.Session(d, planner.parse_policy(spec))
            _, world = simulate(s, None, seed)
            out.append((name, s.receipt(world=world, seed=seed)))
    return out


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, path + (i,))
    else:
        yield path, node


def _set(node, path, value):
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def _not_derived(path) -> bool:
    text = ".".join("*" if isinstance(p, int) else str(p) for p in path)
    return any(text == pat or text.startswith(pat + ".") or re.fullmatch(pat.replace(".", r"\.").replace("*", r"[^.]+")
               + r"(\..*)?", text) for pat in NOT_DERIVED)


def mutate_receipt(rng, receipt: dict):
    data = json.loads(json.dumps(receipt))
    kind = rng.choice(("nudge", "huge", "int64", "repeat", "drop", "string", "equivalent"))
    leaves = list(_leaves(data))
    numbers = [(p, v) for p, v in leaves if isinstance(v, (int, float)) and not isinstance(v, bool)]
    strings = [(p, v) for p, v in leaves if isinstance(v, str)]
    if kind == "equivalent":
        how = rng.choice(("indent", "sorted", "bom", "compact"))
        text = {"indent": json.dumps(data, indent=rng.choice((1, 4, "\t"))),
                "sorted": json.dumps(data, sort_keys=True, indent=2),
                "bom": "\ufeff" + json.dumps(data, indent=2),
                "compact": json.dumps(data, separators=(",", ":"))}[how]
        return {"text": text, "changes": False, "what": f"equivalent: {how}"}
    if kind in ("nudge", "huge", "int64") and numbers:
        path, v = rng.choice(numbers)
        if kind == "nudge":
            _set(data, path, v + rng.choice((0.5, -0.5, 1)) if not isinstance(v, int) else v + 1)
            text = json.dumps(data, indent=2)
        else:
            text = json.dumps(data, indent=2)
            marker = "__NUMBER__"
            _set(data, path, marker)
            text = json.dumps(data, indent=2).replace(f'"{marker}"', "1" + "0" * 400 if kind == "huge" else str(2**64))
        # out-of-range integers are refused wherever they are; a nudge only matters where replay re-derives
        changes = kind != "nudge" or not _not_derived(path)
        return {"text": text, "changes": changes, "what": f"{kind} at {path}"}
    if kind == "string" and strings:
        path, v = rng.choice(strings)
        _set(data, path, v + "x")
        return {"text": json.dumps(data, indent=2), "changes": not _not_derived(path), "what": f"string at {path}"}
    if kind == "drop":
        dicts = [(p, v) for p, v in _containers(data) if isinstance(v, dict) and v]
        path, d = rng.choice(dicts)
        key = rng.choice(sorted(d))
        del d[key]
        return {"text": json.dumps(data, indent=2), "changes": not _not_derived(path + (key,)),
                "what": f"drop {path + (key,)}"}
    # repeat: a key written twice, the second with another value (a reader keeping the last would see the edit)
    text = json.dumps(data, indent=2)
    spots = list(re.finditer(r'^(\s*)"(\w+)": (-?[0-9.e+-]+|"[^"\n]*"|true|false|null)(,?)$', text, re.M))
    m = rng.choice(spots)
    twin = f'{m.group(1)}"{m.group(2)}": "edited",\n'
    return {"text": text[:m.start()] + twin + text[m.start():], "changes": True, "what": f"repeat {m.group(2)}"}


def _containers(node, path=()):
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, (dict, list)):
                yield from _containers(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if isinstance(v, (dict, list)):
                yield from _containers(v, path + (i,))


def check_receipt(m: dict, domain: str, tmp: Path) -> str | None:
    path = tmp / "receipt.json"
    path.write_text(m["text"], encoding="utf-8")
    r = run_cli(["replay", path, domain])
    m["outcome"] = {0: "replay match", 1: "replay mismatch", 2: "refused"}.get(r["code"], f"exit {r['code']}")
    if r["failure"]:
        return r["failure"]
    if m["changes"] and r["code"] == 0:
        return f"silent change: replay matched after {m['what']}"
    if not m["changes"] and r["code"] != 0:
        return f"equivalent receipt refused ({m['what']}): {r['err'].strip() or r['out'].strip()}"[:200]
    red = run_cli(["redact", path, domain])
    return red["failure"]


# --------------------------------------------------------------------------
# outcome logs

_HOSTILE = (None, b"\x00\xff", "", "x" * 50, 2**63 - 1, -(2**63), -1, 0, 1e308, float("inf"), float("-inf"),
            float("nan"), '{"a": 1, "a": 2}', "[]", '{"x": NaN}', '{"approval": 5}', "not json", 3.5)
_COLUMNS = {"sessions": ("uuid", "domain", "content_hash", "world", "policy", "context", "calibration", "started",
                         "finished", "action", "reason", "expected_loss", "receipt"),
            "acquisitions": ("idx", "observation", "outcome", "unplanned", "cost", "note"),
            "resolutions": ("session", "proposition", "value", "at")}


def make_log(folder: Path) -> Path:
    path = folder / "base.db"
    r = run_cli(["simulate-log", "payment_release", "--log", path, "--sessions", "6", "--policy", "one-step",
                 "--resolve", "1", "--seed", "3", "--no-progress"])
    assert r["code"] == 0, r
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    return path


def mutate_log(rng, base: Path, path: Path) -> str:
    shutil.copyfile(base, path)
    kind = rng.choice(("cell", "cell", "cell", "drop_row", "header", "cut"))
    if kind == "cut":
        size = path.stat().st_size
        with open(path, "r+b") as f:
            f.truncate(rng.randrange(size))
        return "cut"
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        if kind == "header":
            pragma, value = rng.choice((("user_version", 0), ("user_version", 7), ("application_id", 0),
                                        ("application_id", 1)))
            conn.execute(f"PRAGMA {pragma} = {value}")
            what = f"{pragma} = {value}"
        elif kind == "drop_row":
            table = rng.choice(sorted(_COLUMNS))
            conn.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} LIMIT 1)"
                         if table != "acquisitions" else "DELETE FROM acquisitions WHERE idx = 0 AND session = 1")
            what = f"drop a row of {table}"
        else:
            table = rng.choice(sorted(_COLUMNS))
            column = rng.choice(_COLUMNS[table])
            value = rng.choice(_HOSTILE)
            key = "id" if table == "sessions" else "session"
            conn.execute(f"UPDATE {table} SET {column} = ? WHERE {key} = ?", (value, rng.randint(1, 6)))
            what = f"{table}.{column} = {value!r}"[:80]
        conn.commit()
    except sqlite3.Error as e:
        what = f"(not applied: {e})"
    finally:
        conn.close()
    return what


def check_log(path: Path, m: dict) -> str | None:
    before = path.read_bytes()
    for argv in (["log", "show", path], ["log", "show", path, "--json"], ["calibrate", "payment_release", path]):
        r = run_cli(argv)
        if argv[0] == "calibrate":
            m["outcome"] = "calibrate ran" if r["code"] == 0 else "refused"
        if r["failure"]:
            return f"{' '.join(map(str, argv[:2]))}: {r['failure']}"
        if r["code"] not in (0, 2):
            return f"{argv[0]}: exit {r['code']}"
        if "--json" in argv and r["code"] == 0:
            try:
                json.loads(r["out"], parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
            except ValueError as e:
                return f"log show --json printed non-JSON: {e}"
        if path.read_bytes() != before:
            return f"silent change: {argv[0]} {argv[1]} modified the log"
    return None


# --------------------------------------------------------------------------
# tools

#: Methods of the hostile ``str`` subclass that ran (the oracle wants none).
_TRAPPED: list = []


def _trap(name: str):
    def method(self, *args):
        _TRAPPED.append(name)
        raise RuntimeError(name)
    return method


class _TrapStr(str):
    """A str whose comparisons, hash and renderings raise (counted in :data:`_TRAPPED`)."""

    __eq__, __ne__, __hash__ = _trap("__eq__"), _trap("__ne__"), _trap("__hash__")
    __str__, __repr__ = _trap("__str__"), _trap("__repr__")
    lower, splitlines = _trap("lower"), _trap("splitlines")


class _Unrenderable(Exception):
    def __str__(self):
        raise RuntimeError("no str")

    def __repr__(self):
        raise RuntimeError("no repr")


class _TrapMessage(Exception):
    def __str__(self):
        return _TrapStr("a message whose methods raise\nsecond line")


class _Bare(BaseException):
    pass


class _Opaque:
    def __repr__(self):
        raise ValueError("no repr")

    def __eq__(self, other):
        raise ValueError("no eq")

    __hash__ = None


class _Hostile(dict):
    def __contains__(self, key):
        raise KeyError("contains")

    def __getitem__(self, key):
        raise KeyError("getitem")


def _result_kinds(rng, outcomes):
    import numpy as np

    size = rng.choice([81, 5_000, 1_000_000, 20_000_000])
    return {
        "trap str of an outcome": (lambda: _TrapStr(rng.choice(outcomes)), "declared"),
        "trap str of other text": (lambda: _TrapStr("x" * rng.choice([3, 500, 100_000])), "unavailable"),
        "numpy array": (lambda: np.array([rng.random(), 2.0]), "unavailable"),
        "numpy str array": (lambda: np.array([rng.choice(outcomes)]), "unavailable"),
        "numpy nan": (lambda: np.float64("nan"), "unavailable"),
        "bytes": (lambda: b"\x00\xff" * rng.choice([3, 500_000]), "unavailable"),
        f"a {size:,}-character string": (lambda: "y" * size, "unavailable"),
        "an object whose repr raises": (lambda: _Opaque(), "unavailable"),
        "a mapping that raises": (lambda: _Hostile(status="x"), "unavailable"),
        "a huge int": (lambda: 10**400, "unavailable"),
    }


def _raise(e):
    def tool(*_):
        raise e
    return tool


def _error_kinds(rng):
    return {
        "raises an unrenderable exception": _Unrenderable,
        "raises an exception whose message is a trap str": _TrapMessage,
        "raises a bare BaseException": lambda: _Bare("bare"),
        "raises a megabyte over many lines": lambda: RuntimeError("line\n" * 200_000),
        "raises with a control character": lambda: ValueError("bad\x1b[2J\rplanner: error: forged"),
    }


_BAD_TIMEOUTS = (0, -1, -0.5, float("nan"), float("inf"), -float("inf"), True, "3", [1], 1e300, None)


def mutate_tool(rng) -> dict:
    """One hostile way to give a session its tools (what, the domain, the run's mode and the expected outcome)."""
    domain = rng.choice(["payment_release", "tool_outage", "second_copy", "kyc_chain"])
    mode = rng.choice(["run", "arun"])
    timeout = rng.choice([None, 5.0])
    pick = rng.random()
    if pick < 0.15:
        bad = rng.choice(_BAD_TIMEOUTS[:-1])
        where = rng.choice(["Tool", "run"])
        return {"what": f"{domain}: {mode}: bad timeout {bad!r} on the {where}", "domain": domain, "mode": mode,
                "bad_timeout": bad, "where": where, "timeout": timeout}
    kind = rng.choice(["result", "error", "mapper result", "mapper error"])
    return {"what": f"{domain}: {mode} timeout={timeout}: {kind}", "domain": domain, "mode": mode,
            "kind": kind, "timeout": timeout, "seed": rng.random()}


def check_tool(m: dict) -> str | None:
    import asyncio

    import planner
    from planner.errors import SessionError
    from planner.session.replay import replay
    from planner.session import tools as _tools
    from planner.session.tools import Tool

    # the bound the notes keep (1,000 where the code of before had none: the run against it uses the same oracle)
    MAX_NOTE_CHARS = getattr(_tools, "MAX_NOTE_CHARS", 1000)

    d = planner.load_domain(m["domain"])
    session = planner.Session(d)
    rng = random.Random(m.get("seed", 0))
    tools, expect = {}, {}

    def build():  # inside the guard below: a bad timeout on a Tool is refused when it is built
        if "bad_timeout" in m:
            for o in d.observations:
                tools[o.name] = (Tool(lambda: "x", timeout=m["bad_timeout"]) if m["where"] == "Tool" and not tools
                                 else (lambda: "x"))
            return
        kind = m["kind"]
        for o in d.observations:
            kinds = _result_kinds(rng, list(o.outcomes)) if "result" in kind else _error_kinds(rng)
            name = rng.choice(sorted(kinds))
            if "result" in kind:
                fn, want = kinds[name]
            else:
                fn, want = _raise(kinds[name]()), "unavailable"
            tools[o.name] = Tool((lambda: 0), mapper=(lambda r, fn=fn: fn())) if kind.startswith("mapper") else fn
            expect[o.name] = (name, want)

    run_timeout = m["bad_timeout"] if m.get("where") == "run" else m["timeout"]
    _TRAPPED.clear()
    m["outcome"] = "stopped"
    try:
        with _alarm(HANG_S):
            try:
                build()
                if m["mode"] == "run":
                    session.run(tools, timeout=run_timeout)
                else:
                    asyncio.run(session.arun(tools, timeout=run_timeout))
            except SessionError as e:
                if "bad_timeout" not in m:
                    return f"traceback: SessionError out of {m['mode']}: {str(e)[:120]}"
                m["outcome"] = "refused"
                text = str(e)
                if "\n" in text or not text.isprintable():
                    return "error not one line"
                if not (text.startswith("Tool(") or text.startswith(f"Session.{m['mode']}")):
                    return f"the refusal names neither the Tool nor the run: {text[:120]}"
                if session.steps:
                    return "silent change: a tool ran before a bad timeout was refused"
                return None
    except _Hang:
        return "hang"
    except Exception as e:  # noqa: BLE001 - anything out of the run is the failure we count
        return f"traceback: {type(e).__name__}: {str(e)[:120]}"
    except BaseException as e:  # noqa: BLE001 - a BaseException that escaped the guard
        return f"traceback: {type(e).__name__} escaped the guard"
    if "bad_timeout" in m and m["bad_timeout"] is not None:
        return f"silent change: bad timeout {m['bad_timeout']!r} accepted"
    if _TRAPPED:
        return f"silent change: the hostile str's {_TRAPPED[0]} ran"
    if session.stop is None:
        return "other: the run returned without a stop"
    for st in session.steps:
        if type(st.outcome) is not str:
            return f"other: {st.acquired}'s outcome is a {type(st.outcome).__name__}"
        name, want = expect.get(st.acquired, ("", "any"))
        if want == "unavailable" and st.outcome != "unavailable":
            return f"silent change: {st.acquired} ({name}) recorded as {st.outcome}"
        if st.note is not None and (type(st.note) is not str or len(st.note) > MAX_NOTE_CHARS
                                    or not st.note.isprintable()):
            return f"other: {st.acquired}'s note is not one bounded printable line"
    try:
        text = json.dumps(session.receipt(), allow_nan=False)
    except (TypeError, ValueError) as e:
        return f"other: the receipt is not strict JSON: {str(e)[:80]}"
    if len(text) > 2**20:
        return f"other: the receipt is {len(text):,} bytes"
    ok, msg = replay(json.loads(text), d)
    if not ok:
        return f"other: the receipt does not replay: {msg[:120]}"
    return None


# --------------------------------------------------------------------------
# the run

def fuzz(mutants: int, seed: int, only: int | None = None, progress=None) -> dict:
    import planner

    texts = {p.stem: p.read_text(encoding="utf-8") for p in _shipped()}
    names = sorted(texts)
    counts = {s: Counter() for s in STRATEGIES}
    failures = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        receipts = _receipts()
        base = make_log(tmp)
        for i in range(mutants):
            if only is not None and i != only:
                continue
            rng = random.Random(f"{seed}:{i}")
            strategy = STRATEGIES[i % len(STRATEGIES)]
            what, failure = "", None
            if strategy in ("number", "hidden_break", "near_name"):
                name = rng.choice(names)
                m = {"number": mutate_number, "hidden_break": mutate_hidden_break,
                     "near_name": mutate_near_name}[strategy](rng, texts[name])
                if m is None:
                    counts[strategy]["not applicable"] += 1
                    continue
                what = f"{name}: {m['what']}"
                failure = check_domain(strategy, m)
            elif strategy == "receipt":
                name, receipt = rng.choice(receipts)
                m = mutate_receipt(rng, receipt)
                what = f"{name}: {m['what']}"
                failure = check_receipt(m, name, tmp)
            elif strategy == "tool":
                m = mutate_tool(rng)
                what = m["what"]
                failure = check_tool(m)
            else:
                path = tmp / f"log{i}.db"
                what = mutate_log(rng, base, path)
                m = {}
                failure = check_log(path, m)
                for p in tmp.glob(f"log{i}.db*"):
                    p.unlink()
            counts[strategy]["mutants"] += 1
            if m.get("outcome"):
                counts[strategy][m["outcome"]] += 1
            if failure is None:
                counts[strategy]["ok"] += 1
            else:
                kind = failure.split(":")[0]
                counts[strategy][kind] += 1
                failures.append({"mutant": i, "strategy": strategy, "what": what, "failure": failure})
            if progress:
                progress()
    total = Counter()
    for c in counts.values():
        total.update(c)
    return {"seed": seed, "mutants": mutants, "planner": planner.__version__,
            "by_strategy": {s: dict(sorted(c.items())) for s, c in counts.items()},
            "tracebacks": sum(_kind(f) == "traceback" for f in failures),
            "hangs": sum(_kind(f) == "hang" for f in failures),
            "silent_changes": sum(_kind(f) == "silent change" for f in failures),
            "other_failures": sum(_kind(f) == "other" for f in failures),
            "failures": failures}


def _kind(failure: dict) -> str:
    text = failure["failure"]
    for kind in ("traceback", "hang", "silent change"):
        if re.search(rf"(^|: ){kind}\b", text):
            return kind
    return "other"


def _markdown(c: dict) -> str:
    lines = [f"# Second fuzzer: {c['mutants']} mutants, seed {c['seed']}", "",
             f"`python3 -m studies.fuzz_inputs --mutants {c['mutants']} --seed {c['seed']}` "
             f"(evidence-planner {c['planner']}; strategies in studies/fuzz_inputs.py).", "",
             f"- tracebacks: {c['tracebacks']}", f"- hangs: {c['hangs']}",
             f"- silent changes of meaning: {c['silent_changes']}",
             f"- other failures (an error that is not one line, an equivalent receipt refused): "
             f"{c['other_failures']}", "",
             "| strategy | mutants | ok | failures | outcomes |", "|---|---:|---:|---:|---|"]
    for s, row in c["by_strategy"].items():
        outcomes = ", ".join(f"{k} {v}" for k, v in row.items() if k not in ("mutants", "ok")
                             and not any(w in k for w in ("traceback", "hang", "silent")))
        lines.append(f"| {s} | {row.get('mutants', 0)} | {row.get('ok', 0)} | "
                     f"{row.get('mutants', 0) - row.get('ok', 0)} | {outcomes} |")
    if c["failures"]:
        lines += ["", "## Failures", ""] + [f"- mutant {f['mutant']} ({f['strategy']}): {f['what']}: {f['failure']}"
                                            for f in c["failures"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m studies.fuzz_inputs", description=__doc__.splitlines()[0])
    p.add_argument("--mutants", type=int, default=600)
    p.add_argument("--seed", type=int, default=22)
    p.add_argument("--only", type=int, help="run one mutant (its number) and print what it was")
    p.add_argument("--out", type=Path, default=ROOT / "studies" / "results" / "fuzz_inputs")
    args = p.parse_args(argv)
    c = fuzz(args.mutants, args.seed, only=args.only)
    if args.only is not None:
        print(json.dumps(c, indent=2))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "counts.json").write_text(json.dumps(c, indent=2) + "\n")
    (args.out / "counts.md").write_text(_markdown(c))
    print(_markdown(c))
    return 1 if c["failures"] else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
