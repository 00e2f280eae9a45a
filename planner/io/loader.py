"""Read and validate domain files (YAML or JSON): the fields of a :class:`planner.model.domain.Domain`.

Validation runs in three passes, each stopping at the first problem:

1. syntax: the file's size (:data:`MAX_FILE_BYTES`, checked before reading),
   YAML/JSON parse errors (with line and column), control characters, nesting
   (:data:`MAX_DEPTH`) and, with every YAML alias and merge key expanded, the
   number of nodes (:data:`MAX_NODES`) and of characters
   (:data:`MAX_TEXT_CHARS`), all bounded while the YAML node graph is composed,
   before anything is built from it; duplicate keys (with the mapping they are
   in and both lines), an empty file, non-string keys, and non-finite or
   overlarge numbers anywhere (an integer literal of more than
   :data:`MAX_INT_DIGITS` digits is not even converted);
2. structure: the JSON Schema shipped in ``planner/schema/domain.schema.json``
   (missing and unknown fields, types, negative numbers, probabilities above 1,
   bad names);
3. meaning: the joint state space fits :data:`MAX_JOINT_STATES`, probabilities
   sum to 1 (tolerance :data:`PROB_TOL`), every name resolves, required
   outcomes exist, tables cover every state (under :data:`MAX_CASE_CHECKS`),
   reserved and duplicate names, every budget dimension named in ``limits`` or
   ``weights`` is used somewhere else too (or declared in
   ``budget.dimensions``), lineage members agree, the compiled arrays fit
   :data:`MAX_ARRAY_BYTES` each, no penalty, loss or sum of them overflows a
   float, no cyclic preconditions, and at least one decision action has no
   ``requires`` (the fallback when no evidence can be had).

The caps bound the work of every pass whatever the input: a file under them
loads and compiles in well under a second (``studies/fuzz_domains.py`` measures
it), and one over them is refused with one line naming the cap.

Every failure is a :class:`planner.errors.DomainError` whose message is one line
``"<path in the file>: <what is wrong>"``. The format and every error kind are
documented in ``docs/domain-format.md``; ``tests/malformed/expected.yaml`` keeps
the exact message for each malformed example file.

YAML is read with a strict safe loader: only ``true``/``false`` are booleans
(``yes``, ``no``, ``on``, ``off`` stay strings, so an outcome may be called
``no``), dates and times stay strings (``as_of`` is parsed by the loader), and
``1e-3`` is a number, as in YAML 1.2 and JSON. A plain number that YAML 1.1
reads otherwise than YAML 1.2 (``0200``, ``08``, ``10:00``, ``1_000``,
``0b1``) is an error, never a silent change; C1 controls, U+2028/U+2029 and
an inner byte-order mark are refused anywhere (YAML ends a comment at NEL),
a leading byte-order mark is dropped, and a path that is not a regular file
(a FIFO, a device) is refused before it is opened.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import hashlib
import inspect
import json
import math
import re
import sys
from collections import Counter
from importlib import resources
from itertools import islice
from pathlib import Path

import jsonschema
import numpy as np
import yaml

from planner.tolerances import PROB_TOL
from planner.compile import case_table
from planner.errors import DomainError, format_path
from planner.io.files import special_file
from planner.model.parts import (
    ESTABLISHING,
    UNAVAILABLE,
    Action,
    AllOf,
    AnyOf,
    Budget,
    CalibratedFailure,
    CalibratedObservation,
    CalibratedRow,
    Calibration,
    Case,
    Check,
    Established,
    Likelihood,
    Loss,
    Observation,
    ResultRule,
    Prior,
    Proposition,
    Returned,
    expr_atoms,
)

__all__ = ["domain_fields", "read_domain_file", "parse_domain_text", "domain_schema", "content_hash",
           "calibration_id", "MAX_JOINT_STATES", "RESERVED_NAMES", "MAX_FILE_BYTES", "MAX_DEPTH", "MAX_NODES",
           "MAX_TEXT_CHARS", "MAX_INT_DIGITS", "MAX_ARRAY_BYTES", "MAX_CASE_CHECKS"]


#: The largest domain file, in bytes, checked before it is read. The shipped
#: domains are under 8 KB and the study's largest generated one about 11 KB;
#: the pure-Python YAML parser reads 256 KiB of any text in well under a second
#: (a 50 MB file took 265 s).
MAX_FILE_BYTES = 256 * 1024

#: The deepest nesting of mappings and lists; the top-level mapping is level 1.
#: The format needs about 10 (a fact expression nests two levels per all/any);
#: the parsers, the schema and the loader recurse once per level, so this also
#: keeps them far from Python's recursion limit.
MAX_DEPTH = 64

#: The most nodes (mappings, lists, keys and scalars) the data may hold with
#: every YAML alias and merge key expanded, counted while the node graph is
#: composed, so that an alias bomb stops before anything is built from it. The
#: largest shipped or generated domain has about 1,600; the pure-Python YAML
#: parser and the schema check each spend some 30 microseconds a node, so
#: this keeps the worst file near half a second.
MAX_NODES = 10_000

#: The most characters the strings of the data may hold with every alias
#: expanded (one long string aliased many times is a bomb of few nodes).
MAX_TEXT_CHARS = 4 * MAX_FILE_BYTES

#: Integer literals with more significant digits than this are refused as too
#: large without being converted: a float holds at most 1.8e308 (309 decimal,
#: 1024 binary digits), and Python refuses to convert more than 4,300 decimal
#: digits at all.
MAX_INT_DIGITS = 1100

#: The most bytes any one compiled array may take (the likelihood table
#: observations x outcome slots x states, the loss table actions x states, the
#: state table states x variables, the cost table, the fact tables), checked
#: before anything is allocated. Every session step reads these arrays, so the
#: cap bounds the work of a step too: at this size compiling takes about 0.2 s
#: and a one-step decision about 0.35 s of CPU. The shipped domains need at
#: most a few kilobytes, the largest benchmark (4,096 states x 40
#: observations) 5 MB.
MAX_ARRAY_BYTES = 16_000_000

#: The largest joint state space accepted: the product of the propositions'
#: value counts, times the outcome count of each lineage group with two or more
#: members (each such group adds one latent variable). As large as
#: :data:`MAX_ARRAY_BYTES` allows for the smallest useful domain, one
#: observation with one outcome (two outcome slots with ``unavailable``: 16
#: bytes a state in the likelihood table); the byte cap then bounds the rest.
MAX_JOINT_STATES = MAX_ARRAY_BYTES // 16

#: The most (case, state) checks the ``cases`` tables of a file may take
#: together: each table costs its number of cases times the number of value
#: combinations of the propositions its cases mention.
MAX_CASE_CHECKS = 16_000_000

#: At most this many schema errors are collected to choose the one reported
#: (the shallowest): a garbage file can have one per node.
_MAX_SCHEMA_ERRORS = 200

#: Did-you-mean hints compare a name with at most this many choices, and only
#: names up to this long (difflib is quadratic in the name's length).
_MAX_HINT_CHOICES = 2000
_MAX_HINT_NAME = 100

#: Lineage names are compared for typos (a group of one near another group) in
#: files with at most this many groups; the shipped and generated domains have a
#: handful, and 150 groups take about 0.2 s.
_MAX_LINEAGE_TYPO_GROUPS = 150

#: The message tail of every overflow.
_OVERFLOW = "(more than 1.8e308)"

#: Words the file format uses as keys (``all``/``any`` in requirements,
#: ``cases`` in losses and likelihoods, ``joint`` in the prior) and the outcome
#: of a failed call; none of them can name a proposition, a value, an
#: observation or an outcome.
RESERVED_NAMES = ("all", "any", "cases", "joint", UNAVAILABLE)

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_NAME_RULE = "letters, digits, '_' and '-', not starting with a digit"


# --------------------------------------------------------------------------
# Pass 1: syntax


def _mark_where(mark) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}"


class _TooLarge:
    """An integer literal too long to convert (:data:`MAX_INT_DIGITS`); reported where it sits."""

    def __repr__(self) -> str:
        return "<number too large>"


_TOO_LARGE = _TooLarge()


def _int_too_long(text: str) -> bool:
    """More than :data:`MAX_INT_DIGITS` significant digits (signs, ``_``, base prefixes and leading zeros aside)."""
    digits = text.replace("_", "").lstrip("+-")
    if digits[:2] in ("0x", "0b"):
        digits = digits[2:]
    return len(digits.lstrip("0")) > MAX_INT_DIGITS


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that reads only true/false as booleans, keeps times as strings, and bounds its work.

    YAML 1.1 reads ``yes``, ``no``, ``on``, ``off`` as booleans, which would turn
    an outcome called ``no`` into ``False``; here they stay strings. Timestamps
    stay strings so that YAML and JSON files read alike. ``1e-3`` and ``1.5e3``
    (YAML 1.2 and JSON spellings, strings in YAML 1.1) read as numbers.
    Duplicate keys are found on the node tree (:func:`_yaml_duplicate`).

    While the node graph is composed (before anything is constructed from it)
    the loader counts its nesting depth and, with every alias expanded, its
    nodes and characters, and stops at :data:`MAX_DEPTH`, :data:`MAX_NODES` or
    :data:`MAX_TEXT_CHARS`: an alias costs what the anchored node holds, so an
    alias (or merge-key) bomb stops after a few thousand events instead of
    being built. An alias of a node that is still open (``&a [*a]``) is refused.
    """

    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0
        self._chars = 0
        self._sizes: dict = {}  # anchor -> (nodes, characters) of the closed anchored node

    def _grow(self, nodes: int, chars: int, mark, alias: bool) -> None:
        self._nodes += nodes
        self._chars += chars
        what = "aliases expand the file" if alias else "the file holds"
        if self._nodes > MAX_NODES:
            raise DomainError(_mark_where(mark), f"{what} past the cap of {MAX_NODES:,} nodes")
        if self._chars > MAX_TEXT_CHARS:
            raise DomainError(_mark_where(mark), f"{what} past the cap of {MAX_TEXT_CHARS:,} characters")

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self.anchors:  # (an undefined alias is the composer's own error)
                size = self._sizes.get(event.anchor)
                if size is None:
                    raise DomainError(_mark_where(event.start_mark),
                                      f"alias *{event.anchor} refers to the node that contains it")
                self._grow(*size, event.start_mark, alias=True)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise DomainError(_mark_where(event.start_mark), f"nested deeper than the cap of {MAX_DEPTH} levels")
        before = (self._nodes, self._chars)
        scalar = len(event.value) if isinstance(event, yaml.ScalarEvent) else 0
        self._grow(1, scalar, event.start_mark, alias=False)
        node = super().compose_node(parent, index)
        self._depth -= 1
        if event.anchor is not None:
            self._sizes[event.anchor] = (self._nodes - before[0], self._chars - before[1])
        return node


_DROPPED_TAGS = ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")
_StrictLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag not in _DROPPED_TAGS]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"))
# 08 and 09 (text in YAML 1.1, numbers in YAML 1.2) reach the int constructor, which refuses them.
_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?0[0-9]+$"), list("-+0"))


def _checked_scalar(construct):
    """A scalar constructor whose failures on odd text (``!!bool maybe``, ``!!int x``) are YAML errors."""
    def run(loader, node):
        try:
            return construct(loader, node)
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError):
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {node.value!r} as {node.tag}", node.start_mark) from None
    return run


for _tag, _construct in list(yaml.SafeLoader.yaml_constructors.items()):
    # Collections (generator constructors) raise their own errors; scalars are wrapped.
    if _tag is not None and not inspect.isgeneratorfunction(_construct):
        _StrictLoader.add_constructor(_tag, _checked_scalar(_construct))


#: Plain numbers that YAML 1.1 (PyYAML) and YAML 1.2 read differently: a leading
#: zero (1.1: octal, 1.2: decimal), ``0b`` (1.1: binary, 1.2: text), ``_`` inside
#: the digits and ``:`` (1.1: base 60; 1.2: text).
_LEADING_ZERO = re.compile(r"^[-+]?0[0-9_]+$")
_YAML11_ONLY = re.compile(r"^[-+]?(?:0b|[0-9.][0-9._]*[_:])")


def _yaml11_number(node, value) -> None:
    """Refuse a plain scalar whose number YAML 1.1 reads otherwise than YAML 1.2 (never a silent change)."""
    text = node.value
    if node.style is not None or node.tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float"):
        return
    where = _mark_where(node.start_mark)
    if _LEADING_ZERO.match(text) and "_" not in text:
        reading = f"as octal {int(text, 8)}" if value is not None else "as text"
        raise DomainError(where, f"the number {_quote(text)} has a leading zero: YAML 1.1 reads it {reading}, "
                                 f"YAML 1.2 as {int(text, 10)}; write it without the zero (or quote it, for text)")
    if ":" in text:
        raise DomainError(where, f"{_quote(text)} is a base-60 number ({value}) in YAML 1.1 and text in YAML 1.2: "
                                 "quote it for text (a time), or write the number")
    if _YAML11_ONLY.match(text) or "_" in text:
        raise DomainError(where, f"{_quote(text)} is the number {value} in YAML 1.1 and text in YAML 1.2: "
                                 "write the number plainly (digits only), or quote it for text")


def _construct_int(loader, node):
    if _int_too_long(node.value):
        return _TOO_LARGE
    if _LEADING_ZERO.match(node.value) and not re.search("[89_]", node.value):
        _yaml11_number(node, 0)  # octal digits: refused before the octal reading is made
    elif _LEADING_ZERO.match(node.value) and "_" not in node.value:
        _yaml11_number(node, None)  # 08, 09: text in YAML 1.1, a number in YAML 1.2
    value = yaml.SafeLoader.construct_yaml_int(loader, node)
    _yaml11_number(node, value)
    return value


def _construct_float(loader, node):
    value = yaml.SafeLoader.construct_yaml_float(loader, node)
    _yaml11_number(node, value)
    return value


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _checked_scalar(_construct_int))
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _checked_scalar(_construct_float))

_MERGE_TAG = "tag:yaml.org,2002:merge"


def _quote(key) -> str:
    """A key as written in a message: 'key', or its repr when it has odd characters."""
    key = str(key)
    return f"'{key}'" if key.isprintable() and "'" not in key else repr(key)


def _yaml_duplicate(node, path, seen_nodes) -> None:
    """Raise for the first duplicate key in document order, naming its mapping."""
    if id(node) in seen_nodes:  # an alias: already checked where it was defined
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first_line = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in first_line:
                raise DomainError(path, f"duplicate key {_quote(key)} at line {line} (first at line {first_line[key]})")
            first_line[key] = line
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            _yaml_duplicate(value_node, path + [key], seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _yaml_duplicate(item, path + [i], seen_nodes)


class _DuplicateJSONObject(dict):
    """A JSON object that repeated `duplicate` (found after parsing, to name its path)."""

    duplicate = None


def _json_pairs(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            dup = _DuplicateJSONObject(out)
            dup.duplicate = k
            return dup
        out[k] = v
    return out


def _json_int(text: str):
    return _TOO_LARGE if _int_too_long(text) else int(text)


def _json_duplicate(node, path) -> None:
    if isinstance(node, _DuplicateJSONObject):
        raise DomainError(path, f"duplicate key {_quote(node.duplicate)}")
    if isinstance(node, dict):
        for k, v in node.items():
            _json_duplicate(v, path + [k])
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _json_duplicate(v, path + [i])


#: A JSON string literal (escapes included), blanked out before brackets are counted.
_JSON_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _json_depth_error(text: str) -> None:
    """Refuse JSON nested deeper than :data:`MAX_DEPTH`, from the text, before the (recursive) parser sees it."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    blank = _JSON_STRING.sub(lambda m: " " * len(m.group()), text)
    codes = np.frombuffer(blank.encode("utf-32-le"), dtype=np.uint32)
    step = np.isin(codes, (ord("["), ord("{"))).astype(np.int64) - np.isin(codes, (ord("]"), ord("}")))
    depth = np.cumsum(step)
    over = np.flatnonzero(depth > MAX_DEPTH)
    if over.size:
        pos = int(over[0])
        line = text.count("\n", 0, pos) + 1
        column = pos - text.rfind("\n", 0, pos)
        raise DomainError(f"line {line}, column {column}", f"nested deeper than the cap of {MAX_DEPTH} levels")


def _too_big(what: str, size: int) -> DomainError:
    return DomainError("(file)", f"{what} is {size:,} bytes, over the cap of {MAX_FILE_BYTES:,} bytes "
                                 f"({MAX_FILE_BYTES // 1024} KiB)")


def read_domain_file(path) -> dict:
    """Parse a domain file into plain data, reporting syntax errors as one line.

    Files ending in ``.json`` are read as JSON, anything else as YAML. A file
    over :data:`MAX_FILE_BYTES` is refused before it is read.

    Examples
    --------
    >>> import planner
    >>> data = read_domain_file(planner.DOMAINS / "payment_release.yaml")
    >>> data["prior"]
    {'approval': {'approved': 0.55, 'pending': 0.45}}
    """
    path = Path(path)
    kind = special_file(path)
    if kind is not None:  # opening a FIFO would block, reading a device never end
        raise DomainError("(file)", f"cannot read {path}: it is {kind}, not a regular file")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise _too_big("the file", size)
        with open(path, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)  # a device or a growing file may say less than it holds
        if len(raw) > MAX_FILE_BYTES:
            raise _too_big("the file", len(raw))
        # CRLF line ends read as LF, a leading byte-order mark is dropped; a lone CR is refused (parse_domain_text).
        text = raw.decode("utf-8").replace("\r\n", "\n").removeprefix(BOM)
    except FileNotFoundError:
        raise DomainError("(file)", f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DomainError("(file)", f"cannot read {path}: {e}") from None
    return parse_domain_text(text, json_format=path.suffix.lower() == ".json")


def parse_domain_text(text: str, *, json_format: bool = False) -> dict:
    """Parse domain-file text (YAML, or JSON when `json_format`) and check its syntax.

    Raises :class:`~planner.errors.DomainError`; a parse error's path is its
    line and column. The work is bounded before anything is built: the text's
    size (:data:`MAX_FILE_BYTES`), its nesting (:data:`MAX_DEPTH`) and, aliases
    expanded, its nodes and characters (:data:`MAX_NODES`, :data:`MAX_TEXT_CHARS`).

    Examples
    --------
    >>> parse_domain_text("outcomes: [yes, no, on]\\nweight: 4e-4")
    {'outcomes': ['yes', 'no', 'on'], 'weight': 0.0004}
    >>> parse_domain_text("world:\\n  a: 1\\n  a: 2")
    Traceback (most recent call last):
    ...
    planner.errors.DomainError: world: duplicate key 'a' at line 3 (first at line 2)
    >>> parse_domain_text('{"prior": }', json_format=True)
    Traceback (most recent call last):
    ...
    planner.errors.DomainError: line 1, column 11: JSON syntax error: Expecting value
    >>> parse_domain_text("a: &x [*x]")
    Traceback (most recent call last):
    ...
    planner.errors.DomainError: line 1, column 8: alias *x refers to the node that contains it
    """
    if len(text) > MAX_FILE_BYTES:  # too long already in characters: not worth encoding
        raise DomainError("(file)", f"the text is {len(text):,} characters, over the cap of {MAX_FILE_BYTES:,} "
                                    f"bytes ({MAX_FILE_BYTES // 1024} KiB)")
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise _too_big("the text", len(text.encode("utf-8", "surrogatepass")))
    text = text.removeprefix(BOM)
    _separator_error(text)
    if not text.strip() or (not json_format and _only_comments(text)):
        raise DomainError("(top level)", "the file is empty (expected a mapping with domain, world, prior and actions)")
    if json_format:
        _json_depth_error(text)
        try:
            data = json.loads(text, object_pairs_hook=_json_pairs, parse_int=_json_int)
        except json.JSONDecodeError as e:
            raise DomainError(f"line {e.lineno}, column {e.colno}", f"JSON syntax error: {e.msg}") from None
        _json_duplicate(data, [])
    else:
        loader = None
        try:
            loader = _StrictLoader(text)  # the reader checks every character here
            node = loader.get_single_node()
            if node is not None:
                _yaml_duplicate(node, [], set())
            data = loader.construct_document(node) if node is not None else None
        except yaml.reader.ReaderError as e:
            raise DomainError(*_reader_error(e, text)) from None
        except yaml.MarkedYAMLError as e:
            raise DomainError(*_yaml_error(e)) from None
        except yaml.YAMLError as e:
            raise DomainError("(file)", f"YAML syntax error: {str(e).splitlines()[0]}") from None
        finally:
            if loader is not None:
                loader.dispose()
    _check_top(data)
    return data


#: A byte-order mark: dropped at the start of a file (YAML and JSON alike), refused anywhere else.
BOM = "\ufeff"

#: Characters refused anywhere in a domain file, comments and strings included:
#: the C1 controls (U+0080-U+009F, NEL among them), the line and paragraph
#: separators U+2028/U+2029, a carriage return that is not part of a CRLF line
#: end, and a byte-order mark past the start. YAML ends a
#: line (and so a comment) at NEL, U+2028 and U+2029, while grep and most diff
#: views do not: text that looks commented out would be read.
_SEPARATORS = re.compile("[\x80-\x9f\u2028\u2029\ufeff]|\r(?!\n)")
_CHAR_NAMES = {"\x85": "NEL, which YAML reads as a line break", "\u2028": "LINE SEPARATOR, which YAML reads as a line break",
               "\u2029": "PARAGRAPH SEPARATOR, which YAML reads as a line break", BOM: "a byte-order mark past the start",
               "\r": "a carriage return not followed by a line feed, which YAML reads as a line break; line ends "
                     "are LF or CRLF"}


def _separator_error(text: str) -> None:
    """Refuse the first C1 control, U+2028/U+2029, lone CR or inner byte-order mark, with its line and column."""
    m = _SEPARATORS.search(text)
    if m is None:
        return
    pos = m.start()
    line = text.count("\n", 0, pos) + 1
    column = pos - text.rfind("\n", 0, pos)
    char = m.group()
    name = _CHAR_NAMES.get(char, "a C1 control character")
    raise DomainError(f"line {line}, column {column}",
                      f"character U+{ord(char):04X} ({name}) is not allowed anywhere in the file, comments included")


def _reader_error(e, text: str) -> tuple:
    """(location, message) of a character the YAML reader refuses (a control character)."""
    pos = e.position
    line = text.count("\n", 0, pos) + 1
    column = pos - text.rfind("\n", 0, pos)
    char = chr(e.character) if isinstance(e.character, int) else e.character
    return f"line {line}, column {column}", (f"YAML syntax error: unacceptable character {char!r} "
                                              "(control characters are not allowed)")


def _yaml_error(e) -> tuple:
    """(location, message) of a YAML error; the context names where the construct began."""
    mark = e.problem_mark or e.context_mark
    where = _mark_where(mark) if mark else "(file)"
    problem = (e.problem or e.context or "invalid YAML").strip()
    cm = e.context_mark
    if e.problem and e.context and cm is not None and mark is not None and cm.line != mark.line:
        problem += f" ({e.context.strip()} at line {cm.line + 1}, column {cm.column + 1})"
    return where, f"YAML syntax error: {problem}"


def _only_comments(text: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") or line.strip() in ("---", "...")
               for line in text.splitlines())


def _check_top(data) -> None:
    if data is None:
        raise DomainError("(top level)", "the file is empty (expected a mapping with domain, world, prior and actions)")
    if not isinstance(data, dict):
        raise DomainError("(top level)",
                          f"expected a mapping with domain, world, prior and actions, got {_type_name(data)}")
    _check_scalars(data)


def _yaml_word(x) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "true" if x else "false"
    return repr(x)


def _bad_key(k) -> str:
    if k is None:
        return "key null is not a name: quote it"
    if isinstance(k, bool):
        return f"key {_yaml_word(k)} is a boolean, not a name: quote it"
    if k is _TOO_LARGE:
        return "key is a number too large for a float, not a name: quote it"
    if isinstance(k, (int, float)):
        if isinstance(k, int) and abs(k) > sys.float_info.max:
            return "key is a number too large for a float, not a name: quote it"
        return f"key {k} is a number, not a name ({_NAME_RULE})"
    return f"key {k!r} is not a name"


_SURROGATE = re.compile("[\ud800-\udfff]")

_END = object()


def _check_scalars(data) -> None:
    """Keys are strings; numbers are finite and fit a float; the data is a tree of bounded size.

    One walk in document order (the first problem is the one reported), with
    an explicit stack: at most :data:`MAX_DEPTH` levels, :data:`MAX_NODES`
    nodes and :data:`MAX_TEXT_CHARS` characters (shared parts counted each
    time they appear, as a YAML alias is), and no mapping or list that
    contains itself (possible in data built in Python).
    """
    nodes = chars = 0
    path: list = []
    frames: list = []  # (iterator over (key, value), container, is a mapping)
    on_path: set = set()
    node, have = data, True
    while True:
        if have:
            nodes += 1
            if nodes > MAX_NODES:
                raise DomainError(path, f"the data holds more than the cap of {MAX_NODES:,} nodes")
            if isinstance(node, (dict, list)):
                if id(node) in on_path:
                    kind = "mapping" if isinstance(node, dict) else "list"
                    raise DomainError(path, f"refers to a {kind} that contains it")
                if len(frames) >= MAX_DEPTH:
                    raise DomainError(path, f"nested deeper than the cap of {MAX_DEPTH} levels")
                is_map = isinstance(node, dict)
                frames.append((iter(node.items()) if is_map else enumerate(node), node, is_map))
                on_path.add(id(node))
                path.append(None)
            elif isinstance(node, str):
                chars += len(node)
                if chars > MAX_TEXT_CHARS:
                    raise DomainError(path, f"the data holds more than the cap of {MAX_TEXT_CHARS:,} characters")
                if not node.isascii() and _SURROGATE.search(node):
                    raise DomainError(path, "contains a lone surrogate code point (not text)")
            elif node is _TOO_LARGE:
                raise DomainError(path, f"number too large {_OVERFLOW}")
            elif isinstance(node, float) and not math.isfinite(node):
                raise DomainError(path, f"must be a finite number, got {node}")
            elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > sys.float_info.max:
                raise DomainError(path, f"number too large {_OVERFLOW}")
        if not frames:
            return
        it, container, is_map = frames[-1]
        item = next(it, _END)
        if item is _END:
            frames.pop()
            on_path.discard(id(container))
            path.pop()
            have = False
            continue
        key, node = item
        if is_map:
            if not isinstance(key, str):
                raise DomainError(path[:-1], _bad_key(key))
            nodes += 1  # the key
            chars += len(key)
            if not key.isascii() and _SURROGATE.search(key):
                raise DomainError(path[:-1], f"key {key!r} contains a lone surrogate code point (not text)")
        path[-1] = key
        have = True


# --------------------------------------------------------------------------
# Pass 2: structure (JSON Schema)


def domain_schema() -> dict:
    """The JSON Schema (draft 2020-12) of the domain-file format, as shipped with the package.

    >>> domain_schema()["required"]
    ['domain', 'world', 'prior', 'actions']
    """
    return json.loads(resources.files("planner").joinpath("schema/domain.schema.json").read_text())


_VALIDATOR = None


def _inline_refs(node, defs: dict, keep: str = "factExpr"):
    """`node` with every ``$ref`` to ``#/$defs/<name>`` replaced by a copy of the definition, but `keep`.

    The same schema, checked about twice as fast: resolving a ``$ref`` costs
    more than the check it leads to, and a file has one per name and number.
    The recursive definition (`keep`, the fact expressions) stays a reference.
    """
    if isinstance(node, dict):
        ref = node.get("$ref", "")
        name = ref.rsplit("/", 1)[-1]
        if ref.startswith("#/$defs/") and name != keep:
            rest = {k: v for k, v in node.items() if k != "$ref"}  # annotations beside the $ref
            return {**_inline_refs(defs[name], defs, keep), **rest}
        return {k: v if k == "$defs" else _inline_refs(v, defs, keep) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_refs(v, defs, keep) for v in node]
    return node


def _validator():
    global _VALIDATOR
    if _VALIDATOR is None:
        schema = domain_schema()
        defs = schema["$defs"]
        fast = _inline_refs(schema, defs)
        fast["$defs"] = {k: _inline_refs(v, defs) for k, v in defs.items()}
        cls = jsonschema.validators.validator_for(schema)
        _VALIDATOR = cls(fast)
    return _VALIDATOR


def _type_name(x) -> str:
    if x is None:
        return "null"
    if isinstance(x, bool):
        return "a boolean"
    if isinstance(x, (int, float)):
        return "a number"
    if isinstance(x, str):
        return "a string"
    if isinstance(x, list):
        return "a list"
    if isinstance(x, dict):
        return "a mapping"
    return type(x).__name__


_TYPE_WORDS = {"object": "a mapping", "array": "a list", "string": "a string", "number": "a number",
               "integer": "an integer", "boolean": "a boolean", "null": "null"}


def _closest(name: str, choices) -> str | None:
    # Bounded: difflib's cost grows with the name's length times the number of choices.
    if not isinstance(name, str) or len(name) > _MAX_HINT_NAME:
        return None
    match = difflib.get_close_matches(name, list(islice(choices, _MAX_HINT_CHOICES)), n=1, cutoff=0.6)
    return match[0] if match else None


def _hint(name: str, choices, label: str) -> str:
    """' (did you mean 'x'?)', or ' (<label>: a, b)' when there are few choices."""
    choices = list(choices)
    close = _closest(name, choices)
    if close:
        return f" (did you mean '{close}'?)"
    if not choices:
        return f" ({label}: none)"
    if len(choices) <= 12:
        return f" ({label}: {', '.join(choices)})"
    return ""


def _name_ok(name) -> bool:
    return isinstance(name, str) and _NAME_RE.fullmatch(name) is not None


def _bad_name(name) -> str:
    if name is None or isinstance(name, bool):
        return f"expected a name, got {_yaml_word(name)}: quote it"
    if isinstance(name, (int, float)):
        return f"expected a name, got the number {name} ({_NAME_RULE})"
    if not isinstance(name, str):
        return f"expected a name, got {_type_name(name)}"
    if name == "":
        return f"empty name ({_NAME_RULE})"
    return f"invalid name {name!r} ({_NAME_RULE})"


def _schema_message(err) -> tuple[list, str]:
    """Turn one jsonschema error into (path, one-line message)."""
    path = list(err.absolute_path)
    inst = err.instance
    v = err.validator
    if v == "required":
        missing = [r for r in err.validator_value if r not in inst]
        return path, f"missing field '{missing[0]}'"
    if v == "additionalProperties":
        known = list(err.schema.get("properties", {}))
        extra = [k for k in inst if k not in known]
        return path, f"unknown field {_quote(extra[0])}" + _hint(extra[0], known, "fields")
    if v == "type" and "pattern" in err.schema:  # a name
        return path, _bad_name(inst)
    if v == "type":
        types = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        want = " or ".join(_TYPE_WORDS.get(t, t) for t in types)
        got = f"the string {inst!r}" if isinstance(inst, str) else _type_name(inst)
        return path, f"expected {want}, got {got}"
    if v == "minimum":
        return path, f"must be >= {err.validator_value}, got {inst}"
    if v == "maximum":
        return path, f"must be <= {err.validator_value}, got {inst}"
    if v in ("minItems", "minProperties", "minLength"):
        return path, "must not be empty"
    if v == "enum":
        return path, f"must be one of {', '.join(map(str, err.validator_value))}, got {inst!r}"
    if v == "pattern":
        # For a key (propertyNames) the path is the mapping that holds it.
        return path, _bad_name(inst)
    if v == "oneOf":  # depends_on: a name or a list of names
        if isinstance(inst, str):
            return path, _bad_name(inst)
        if isinstance(inst, list):
            if not inst:
                return path, "must not be empty"
            for i, item in enumerate(inst):
                if not _name_ok(item):
                    return path + [i], _bad_name(item)
        return path, f"expected a name or a list of names, got {_type_name(inst)}"
    return path, err.message.splitlines()[0]


def _path_key(err):
    return [(0, p) if isinstance(p, int) else (1, str(p)) for p in err.absolute_path]


def _check_schema(data: dict) -> None:
    errors = list(islice(_validator().iter_errors(data), _MAX_SCHEMA_ERRORS))
    if not errors:
        return
    # Deterministic choice: the error at the shallowest, then lexically first path.
    errors.sort(key=lambda e: (len(e.absolute_path), _path_key(e), e.validator))
    path, msg = _schema_message(errors[0])
    raise DomainError(path, msg)


# --------------------------------------------------------------------------
# Pass 3: meaning


def _fmt(x: float) -> str:
    return f"{x:.12g}"


def _check_sum(probs, path) -> None:
    total = math.fsum(float(p) for p in probs)
    if abs(total - 1.0) > PROB_TOL:
        raise DomainError(path, f"sums to {_fmt(total)}, not 1")


class _Names:
    """What the file declares, for resolving references (with index maps: look-ups stay O(1))."""

    def __init__(self):
        self.props: dict[str, tuple] = {}
        self.value_pos: dict[str, dict] = {}  # proposition -> {value: index}
        self.obs_outcomes: dict[str, tuple] = {}
        self.obs_outcome_set: dict[str, frozenset] = {}
        self.obs_failure: dict[str, float] = {}
        self.dims: frozenset = frozenset()
        self.prop_pos: dict | None = None  # proposition -> index, and value_pos in that order (for case tables)
        self.value_list: list = []
        self.case_checks = 0  # (case, state) checks of the cases tables so far (MAX_CASE_CHECKS)


def _check_reserved(name: str, path, what: str) -> None:
    if name in RESERVED_NAMES:
        raise DomainError(path, f"'{name}' is reserved and cannot name {what} (reserved: {', '.join(RESERVED_NAMES)})")


def _unknown_value(v, p, names: _Names) -> str:
    return f"unknown value '{v}' of {p} (values: {', '.join(names.props[p])})"


def _unknown_prop(p, names: _Names) -> str:
    return f"unknown proposition '{p}'" + _hint(p, names.props, "propositions")


def _assignment(raw: dict, names: _Names, path) -> tuple:
    """Validate a {proposition: value} mapping; return pairs."""
    for p, v in raw.items():
        if p not in names.props:
            raise DomainError(path + [p], _unknown_prop(p, names))
        if v not in names.value_pos[p]:
            raise DomainError(path + [p], _unknown_value(v, p, names))
    return tuple(raw.items())


def _describe_state(state: dict) -> str:
    return ", ".join(f"{p}={v}" for p, v in state.items())


def _check_cases_cover(cases, names: _Names, path) -> None:
    """Every state matches some case; the matching work counts against :data:`MAX_CASE_CHECKS`.

    Matching runs over the value combinations of the propositions the cases
    mention (:func:`planner.compile.case_table`), not over every joint state;
    the first uncovered combination, the other propositions at their first
    value, is the first uncovered state in state order.
    """
    props = list(names.props)
    mentioned = {p for c in cases for p, _ in c.when}  # (one-valued propositions add a factor of 1)
    combos = math.prod(len(names.props[p]) for p in mentioned)
    names.case_checks += len(cases) * combos
    if names.case_checks > MAX_CASE_CHECKS:
        raise DomainError(path, f"matching {len(cases)} cases against {combos:,} states takes the file's case "
                                f"tables to {names.case_checks:,} case checks, over the cap of {MAX_CASE_CHECKS:,}")
    if names.prop_pos is None or len(names.prop_pos) != len(props):  # built once, after the world
        names.prop_pos = {p: i for i, p in enumerate(props)}
        names.value_list = [names.value_pos[p] for p in props]
    axes, table = case_table(cases, names.prop_pos, names.value_list)
    uncovered = np.flatnonzero(table.ravel() < 0)
    if uncovered.size:
        where = np.unravel_index(int(uncovered[0]), table.shape)
        state = {p: names.props[p][0] for p in props}
        for axis, vi in zip(axes, where):
            state[props[axis]] = names.props[props[axis]][int(vi)]
        raise DomainError(path, f"no case matches state {_describe_state(state)} "
                                "(add a last case without 'when' as a default)")


def _fact_expr(raw: dict, names: _Names, path):
    terms = []
    for key, val in raw.items():
        if key in ("all", "any"):
            sub = [_fact_expr(item, names, path + [key, i]) for i, item in enumerate(val)]
            terms.append(AllOf(sub) if key == "all" else AnyOf(sub))
        elif key in names.props:
            if val not in names.value_pos[key]:
                raise DomainError(path + [key], _unknown_value(val, key, names))
            terms.append(Established(key, val))
        elif key in names.obs_outcomes:
            outs = names.obs_outcomes[key]
            if val == UNAVAILABLE and names.obs_failure[key] <= 0:
                raise DomainError(path + [key], f"{key} cannot return '{UNAVAILABLE}': its failure_rate is 0")
            if val not in names.obs_outcome_set[key] and val != UNAVAILABLE:
                raise DomainError(path + [key], f"{key} cannot return '{val}' (outcomes: {', '.join(outs)})")
            terms.append(Returned(key, val))
        else:
            known = list(names.props) + list(names.obs_outcomes)
            raise DomainError(path + [key], f"unknown proposition or observation '{key}'"
                                            + _hint(key, known, "declared"))
    return terms[0] if len(terms) == 1 else AllOf(terms)


def _loss(raw, names: _Names, path) -> Loss:
    if not isinstance(raw, dict):
        return Loss(constant=float(raw))
    if "cases" in raw:
        if len(raw) > 1:
            other = next(k for k in raw if k != "cases")
            raise DomainError(path + [other], "cases cannot be mixed with proposition tables")
        cases = []
        for i, c in enumerate(raw["cases"]):
            when = _assignment(c.get("when", {}), names, path + ["cases", i, "when"])
            cases.append(Case(when=when, value=float(c["loss"])))
        _check_cases_cover(cases, names, path + ["cases"])
        return Loss(cases=tuple(cases))
    tables = []
    for p, table in raw.items():
        if p not in names.props:
            raise DomainError(path + [p], _unknown_prop(p, names))
        for v in table:
            if v not in names.value_pos[p]:
                raise DomainError(path + [p, v], _unknown_value(v, p, names))
        for v in names.props[p]:
            if v not in table:
                raise DomainError(path + [p], f"missing value '{v}' (a loss table gives every value of {p})")
        tables.append((p, tuple((v, float(table[v])) for v in names.props[p])))
    return Loss(tables=tuple(tables))


def _distribution(raw: dict, outcomes: list, known: set, path, declared: bool) -> tuple:
    """Check one outcome distribution; extend `outcomes` (and the set `known` of them) when they are inferred."""
    for y in raw:
        if y == UNAVAILABLE:
            raise DomainError(path + [y], f"'{UNAVAILABLE}' is reserved: set failure_rate instead")
        if y not in known:
            if declared:
                raise DomainError(path + [y], f"unknown outcome '{y}' (outcomes: {', '.join(outcomes)})")
            _check_reserved(y, path + [y], "an outcome")
            outcomes.append(y)
            known.add(y)
    _check_sum(raw.values(), path)
    return tuple((y, float(p)) for y, p in raw.items())


def _likelihood(raw: dict, obs: dict, names: _Names, path):
    """Return (Likelihood, outcomes)."""
    declared = "outcomes" in obs
    outcomes = list(obs.get("outcomes", []))
    known = set(outcomes)
    opath = path[:-1]
    if declared:
        seen = set()
        for i, y in enumerate(outcomes):
            if y == UNAVAILABLE:
                raise DomainError(opath + ["outcomes", i], f"'{UNAVAILABLE}' is reserved: set failure_rate instead")
            _check_reserved(y, opath + ["outcomes", i], "an outcome")
            if y in seen:
                raise DomainError(opath + ["outcomes", i], f"duplicate outcome '{y}'")
            seen.add(y)
    raw_dep = obs.get("depends_on")
    dep = [raw_dep] if isinstance(raw_dep, str) else list(raw_dep or [])
    for i, p in enumerate(dep):
        if p not in names.props:
            raise DomainError(opath + ["depends_on"] + ([i] if isinstance(raw_dep, list) else []),
                              _unknown_prop(p, names))
    if "cases" in raw:
        if len(raw) > 1:
            other = next(k for k in raw if k != "cases")
            raise DomainError(path + [other], "cases cannot be mixed with other likelihood entries")
        cases = []
        mentioned = list(dep)
        for i, c in enumerate(raw["cases"]):
            when = _assignment(c.get("when", {}), names, path + ["cases", i, "when"])
            for p, _ in when:
                if p not in mentioned:
                    mentioned.append(p)
            dist = _distribution(c["p"], outcomes, known, path + ["cases", i, "p"], declared)
            cases.append(Case(when=when, value=dist))
        _check_cases_cover(cases, names, path + ["cases"])
        return Likelihood(depends_on=tuple(mentioned), cases=tuple(cases)), outcomes
    kinds = {isinstance(v, dict) for v in raw.values()}
    if kinds == {True, False}:
        raise DomainError(path, "mixes outcome probabilities with per-value tables "
                                "(give {outcome: p}, {value: {outcome: p}} or cases)")
    if kinds == {False}:  # constant across worlds
        if dep:
            raise DomainError(path, f"depends_on {', '.join(dep)} but the likelihood is the same in every world")
        dist = _distribution(raw, outcomes, known, path, declared)
        return Likelihood(depends_on=(), cases=(Case(when=(), value=dist),)), outcomes
    # keyed by the values of one proposition
    if len(dep) > 1:
        raise DomainError(path, f"depends_on {', '.join(dep)}: a likelihood on several propositions uses cases")
    prop = dep[0] if dep else obs.get("bears_on")
    if prop is None:
        raise DomainError(path, "keyed by proposition values, but neither depends_on nor bears_on names the proposition")
    values = names.props[prop]
    for v in raw:
        if v not in names.value_pos[prop]:
            raise DomainError(path + [v], _unknown_value(v, prop, names))
    for v in values:
        if v not in raw:
            raise DomainError(path, f"missing value '{v}' of {prop}")
    cases = []
    for v in values:
        dist = _distribution(raw[v], outcomes, known, path + [v], declared)
        cases.append(Case(when=((prop, v),), value=dist))
    return Likelihood(depends_on=(prop,), cases=tuple(cases)), outcomes


def _parse_time(text: str, path) -> _dt.datetime:
    try:
        t = _dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise DomainError(path, f"not an ISO 8601 time: {text!r} (for example 2026-01-05T09:30:00Z)") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t


def _precondition_cycle(observations) -> list | None:
    """The first cycle of "requires an outcome of" among observations, closed, or None.

    Searched from each observation in file order (:func:`networkx.find_cycle`);
    the cycle is rotated to start at the observation declared first, so the
    message is the same every run.

    >>> from planner.model.parts import Observation, Likelihood, Case, Returned
    >>> lik = Likelihood(depends_on=(), cases=(Case(when=(), value=(("y", 1.0),)),))
    >>> a = Observation(name="a", role="inform", outcomes=("y",), likelihood=lik, requires=Returned("b", "y"))
    >>> b = Observation(name="b", role="inform", outcomes=("y",), likelihood=lik, requires=Returned("a", "y"))
    >>> _precondition_cycle([a, b]), _precondition_cycle([a])
    (['a', 'b', 'a'], None)
    """
    if all(o.requires is None for o in observations):
        return None
    import networkx as nx  # only for domains with preconditions: `import planner` does not need it

    g = nx.DiGraph()
    order = {o.name: i for i, o in enumerate(observations)}
    g.add_nodes_from(order)
    for o in observations:
        if o.requires is not None:
            g.add_edges_from((o.name, a.observation) for a in expr_atoms(o.requires) if isinstance(a, Returned))
    # Search only from the first observation that reaches a cycle (found in linear
    # time): the same answer as trying each in turn, without the quadratic walk.
    on_cycle = [n for comp in nx.strongly_connected_components(g)
                for n in comp if len(comp) > 1 or g.has_edge(n, n)]
    if not on_cycle:
        return None
    reaches = set(on_cycle)
    stack = list(on_cycle)
    while stack:
        for u in g.predecessors(stack.pop()):
            if u not in reaches:
                reaches.add(u)
                stack.append(u)
    start = min(reaches, key=order.__getitem__)
    cyc = [u for u, _ in nx.find_cycle(g, source=start)]
    k = min(range(len(cyc)), key=lambda i: order[cyc[i]])
    cyc = cyc[k:] + cyc[:k]
    return cyc + [cyc[0]]


def content_hash(data: dict) -> str:
    """sha256 of the canonical JSON of a parsed domain file (format-independent).

    >>> content_hash({"b": 1, "a": [0.5]}) == content_hash({"a": [0.5], "b": 1})
    True
    """
    canon = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(canon.encode("utf-8")).hexdigest()


def domain_fields(data: dict) -> dict:
    """Validate parsed domain data; return the fields of a :class:`planner.model.domain.Domain`.

    :meth:`planner.model.domain.Domain.from_dict` is the public way to call this.
    Raises :class:`~planner.errors.DomainError` naming the path of the first problem.

    Examples
    --------
    >>> domain_fields({
    ...     "domain": "tiny",
    ...     "world": {"x": {"values": ["a", "b"]}},
    ...     "prior": {"x": {"a": 0.5, "b": 0.45}},
    ...     "actions": {"go": {"loss": 1}},
    ... })
    Traceback (most recent call last):
    ...
    planner.errors.DomainError: prior.x: sums to 0.95, not 1
    """
    _check_top(data)
    _check_schema(data)
    names = _Names()
    props = _world(data["world"], names)
    n_world, text = _product([len(v) for v in names.props.values()])
    if n_world > MAX_JOINT_STATES:  # before anything enumerates states
        raise DomainError(["world"], f"{text} joint states exceed the cap of {MAX_JOINT_STATES:,}")
    prior = _prior(data["prior"], names)
    raw_obs = data.get("observations") or {}
    for oname, spec in raw_obs.items():  # observation names first: requirements may reference them
        _check_reserved(oname, ["observations", oname], "an observation")
        if oname in names.props:
            raise DomainError(["observations", oname], f"'{oname}' already names a proposition")
        names.obs_failure[oname] = float(spec.get("failure_rate", 0.0))
    budget = _budget(data.get("budget") or {}, raw_obs)
    observations = _observations(raw_obs, names, budget.dimensions)
    n_latent = _check_lineage(observations, names, n_world)
    _check_array_sizes(n_world * math.prod(n_latent), len(n_latent), observations, len(data["actions"]),
                       budget, len(names.props))
    all_penalties = _check_penalties(observations, budget)
    cycle = _precondition_cycle(observations)
    if cycle:
        text = " -> ".join(cycle)
        if len(cycle) == 2:
            text += f" ({cycle[0]} requires its own outcome)"
        raise DomainError(["observations", cycle[0], "requires"], "cyclic preconditions: " + text)
    actions = _actions(data["actions"], names)
    _check_losses(actions, all_penalties)
    calibration = _calibration(data["calibration"], observations, prior, names) if "calibration" in data else None
    checks = tuple(Check(name=str(c.get("name", f"check{i + 1}")), spec=c)
                   for i, c in enumerate(data.get("checks", []) or []))
    return dict(
        name=data["domain"], description=data.get("description", ""), purpose=data.get("purpose"),
        propositions=props, prior=prior, actions=actions, budget=budget, observations=observations,
        max_age_minutes=_opt_float(data.get("max_age_minutes")), checks=checks,
        content_hash=content_hash(data), calibration=calibration, raw=data,
    )


def calibration_id(block: dict) -> str:
    """The identity of a ``calibration`` block: ``cal:`` and 12 hex digits of the sha256 of the rest of it.

    >>> calibration_id({"id": "cal:000000000000", "method": "em"}) == calibration_id({"method": "em"})
    True
    """
    rest = {k: v for k, v in block.items() if k != "id"}
    return "cal:" + content_hash(rest).split(":", 1)[1][:12]




def _calibration(raw: dict, observations, prior: Prior, names: _Names) -> Calibration:
    """The ``calibration`` block, checked against the observations and the prior it calibrates.

    Every calibrated likelihood row must be ``alpha / sum(alpha)`` of its
    posterior, every calibrated failure rate the mean of its Beta
    posterior, and the world prior the posterior mean of the block's
    ``prior`` parameters (or, when the block says the prior was held, the
    declared prior it records), within :data:`PROB_TOL`, so that a hand edit
    of a calibrated row or prior cannot pass for the calibration.
    """
    path = ["calibration"]
    expected = calibration_id(raw)
    if raw["id"] != expected:
        raise DomainError(path + ["id"], f"{raw['id']} does not match the block's content ({expected}): "
                                         "the block was edited after calibration")
    if "prior" in raw:
        _check_calibrated_prior(raw["prior"], prior, names, path + ["prior"])
    by_name = {o.name: o for o in observations}
    cal_obs = []
    for name, spec in raw["observations"].items():
        opath = path + ["observations", name]
        if name not in by_name:
            raise DomainError(opath, f"unknown observation '{name}'" + _hint(name, by_name, "observations"))
        o = by_name[name]
        cases = o.likelihood.cases
        if len(spec["rows"]) != len(cases):
            raise DomainError(opath + ["rows"], f"{len(spec['rows'])} rows for a likelihood of {len(cases)} "
                                                f"case{'s' if len(cases) != 1 else ''}")
        rows = []
        for i, (row, case) in enumerate(zip(spec["rows"], cases)):
            rpath = opath + ["rows", i]
            for part in ("counts", "alpha", "mean", "interval", "declared"):
                for y in row.get(part, {}):
                    if y not in o.outcomes:
                        raise DomainError(rpath + [part, y], f"unknown outcome '{y}' (outcomes: {', '.join(o.outcomes)})")
            alpha = [(y, float(row["alpha"].get(y, 0.0))) for y in o.outcomes]
            total = sum(a for _, a in alpha)
            if total <= 0:
                raise DomainError(rpath + ["alpha"], "sums to 0 (a posterior needs a positive parameter)")
            declared = dict(case.value)
            for y, a in alpha:
                if abs(declared.get(y, 0.0) - a / total) > PROB_TOL:
                    where = ", ".join(f"{p}={v}" for p, v in case.when) or "every state"
                    raise DomainError(["observations", name, "likelihood"],
                                      f"row {i + 1} ({where}) gives {y} {_fmt(declared.get(y, 0.0))}, but its "
                                      f"posterior mean is {_fmt(a / total)} ({format_path(rpath + ['alpha'])}): "
                                      "calibrate again, or remove the calibration block")
            for y, m in (row.get("mean") or {}).items():
                if abs(m - dict(alpha)[y] / total) > PROB_TOL:
                    raise DomainError(rpath + ["mean", y], f"{_fmt(m)} is not alpha / sum(alpha) = "
                                                           f"{_fmt(dict(alpha)[y] / total)}")
            for y, (lo, hi) in row["interval"].items():
                if lo > hi:
                    raise DomainError(rpath + ["interval", y], f"lower {_fmt(lo)} is above upper {_fmt(hi)}")
            rows.append(CalibratedRow(counts=[(y, float(row["counts"].get(y, 0.0))) for y in o.outcomes],
                                      alpha=alpha, interval=[(y, tuple(row["interval"][y])) for y in o.outcomes
                                                             if y in row["interval"]],
                                      declared=[(y, float(v)) for y, v in (row.get("declared") or {}).items()]))
        failure = None
        if "failure" in spec:
            f = spec["failure"]
            a_fail, a_ok = (float(x) for x in f["alpha"])
            if a_fail + a_ok <= 0:
                raise DomainError(opath + ["failure", "alpha"], "sums to 0 (a posterior needs a positive parameter)")
            if abs(o.failure_rate - a_fail / (a_fail + a_ok)) > PROB_TOL:
                raise DomainError(["observations", name, "failure_rate"],
                                  f"{_fmt(o.failure_rate)}, but its posterior mean is {_fmt(a_fail / (a_fail + a_ok))} "
                                  f"({format_path(opath + ['failure', 'alpha'])}): calibrate again, "
                                  "or remove the calibration block")
            failure = CalibratedFailure(unavailable=float(f["unavailable"]), calls=float(f["calls"]),
                                        alpha=(a_fail, a_ok),
                                        interval=tuple(f["interval"]) if "interval" in f else None,
                                        declared=_opt_float(f.get("declared")))
        cal_obs.append((name, CalibratedObservation(rows=rows, failure=failure,
                                                    acquired=_opt_float(spec.get("acquired")))))
    return Calibration(id=raw["id"], method=raw["method"], date=str(raw["date"]),
                       prior_strength=float(raw["prior_strength"]), log=raw["log"], observations=cal_obs,
                       source=raw.get("source"))


def _check_calibrated_prior(raw: dict, prior: Prior, names: _Names, path: list) -> None:
    """The file's prior is the calibration's posterior mean (or, held, its declared prior): one line otherwise."""
    props = list(names.props)
    if prior.marginals is not None:
        given = {p: dict(dist) for p, dist in prior.marginals}
        where = {p: ["prior", p] for p in given}
    else:
        table = {", ".join(f"{p}={dict(c.when)[p]}" for p in props): c.value for c in prior.joint}
        given, where = {"joint": table}, {"joint": ["prior", "joint"]}
    held = not raw["estimated"]
    for i, entry in enumerate(raw["parameters"]):
        epath = path + ["parameters", i]
        label = entry["of"]
        if label not in given:
            form = "marginals of " + ", ".join(given) if prior.marginals is not None else "a joint table"
            raise DomainError(epath + ["of"], f"{_quote(label)} is not a parameter of the file's prior ({form})")
        part = "declared" if held else "alpha"
        if part not in entry:
            raise DomainError(epath, f"an estimated prior needs its posterior's {part}")
        values = {k: float(v) for k, v in entry[part].items()}
        total = sum(values.values())
        if total <= 0:
            raise DomainError(epath + [part], "sums to 0 (a posterior needs a positive parameter)")
        for k, m in (entry.get("mean") or {}).items():
            if abs(float(m) - values.get(k, 0.0) / total) > PROB_TOL:
                raise DomainError(epath + ["mean", k], f"{_fmt(m)} is not alpha / sum(alpha) = "
                                                       f"{_fmt(values.get(k, 0.0) / total)}")
        for k in sorted(set(values) | set(given[label]), key=str):
            want = values.get(k, 0.0) / total
            got = given[label].get(k, 0.0)
            if abs(got - want) > PROB_TOL:
                what = "the declared prior it held" if held else "its posterior mean"
                raise DomainError(where[label], f"gives {k} {_fmt(got)}, but {what} is {_fmt(want)} "
                                                f"({format_path(epath + [part])}): calibrate again, or remove "
                                                "the calibration block")


def _world(raw_world: dict, names: _Names) -> list:
    props = []
    for pname, spec in raw_world.items():
        _check_reserved(pname, ["world", pname], "a proposition")
        values = spec["values"]
        seen = set()
        for i, v in enumerate(values):
            _check_reserved(v, ["world", pname, "values", i], "a value")
            if v in seen:
                raise DomainError(["world", pname, "values", i], f"duplicate value '{v}'")
            seen.add(v)
        names.props[pname] = tuple(values)
        names.value_pos[pname] = {v: i for i, v in enumerate(values)}
        props.append(Proposition(name=pname, values=values, max_age_minutes=_opt_float(spec.get("max_age_minutes"))))
    return props


def _prior(raw_prior: dict, names: _Names) -> Prior:
    if "joint" in raw_prior:
        if len(raw_prior) > 1:
            other = next(k for k in raw_prior if k != "joint")
            raise DomainError(["prior", other], "joint and marginals cannot be mixed")
        rows, seen_states = [], {}
        for i, row in enumerate(raw_prior["joint"]):
            state = _assignment(row["state"], names, ["prior", "joint", i, "state"])
            for p in names.props:
                if p not in row["state"]:
                    raise DomainError(["prior", "joint", i, "state"], f"missing proposition '{p}'")
            key = tuple(sorted(state))
            if key in seen_states:
                raise DomainError(["prior", "joint", i, "state"], f"duplicate state (first at joint[{seen_states[key]}])")
            seen_states[key] = i
            rows.append(Case(when=state, value=float(row["p"])))
        _check_sum([r.value for r in rows], ["prior", "joint"])
        return Prior(joint=tuple(rows))
    marg = []
    for p, dist in raw_prior.items():
        if p not in names.props:
            raise DomainError(["prior", p], _unknown_prop(p, names))
        for v in dist:
            if v not in names.props[p]:
                raise DomainError(["prior", p, v], _unknown_value(v, p, names))
        for v in names.props[p]:
            if v not in dist:
                raise DomainError(["prior", p], f"missing value '{v}' (give every value, 0 if impossible)")
        _check_sum(dist.values(), ["prior", p])
        marg.append((p, tuple((v, float(dist[v])) for v in names.props[p])))
    for p in names.props:
        if p not in raw_prior:
            raise DomainError(["prior"], f"missing proposition '{p}' (or give a joint table)")
    return Prior(marginals=tuple(marg))


def _budget(raw_budget: dict, raw_obs: dict) -> Budget:
    """The budget: dimensions in the order limits, weights, then those only declared in ``dimensions``.

    A dimension named in ``limits`` or ``weights`` and nowhere else (no other
    of the two, no cost) is almost always a typo, which would otherwise create
    a new dimension silently (``interruption`` for ``interruptions`` drops a
    reviewer's penalty): it is an error unless ``dimensions`` lists it.
    """
    limits = raw_budget.get("limits") or {}
    weights = raw_budget.get("weights") or {}
    declared = list(raw_budget.get("dimensions") or [])
    seen: set = set()
    for i, d in enumerate(declared):
        if d in seen:
            raise DomainError(["budget", "dimensions", i], f"duplicate dimension {_quote(d)}")
        seen.add(d)
    uses = Counter(list(limits) + list(weights))
    for spec in raw_obs.values():
        uses.update(spec.get("cost") or {})
    for section, table in (("limits", limits), ("weights", weights)):
        for d in table:
            if uses[d] == 1 and d not in seen:
                others = [x for x in uses if x != d]
                raise DomainError(["budget", section, d],
                                  f"budget dimension {_quote(d)} appears nowhere else"
                                  + _hint(d, others, "other dimensions")
                                  + "; declare it in budget.dimensions if it is meant")
    dims = list(dict.fromkeys([*limits, *weights, *declared]))
    return Budget(dimensions=dims, limits=tuple((k, float(v)) for k, v in limits.items()),
                  weights=tuple((k, float(v)) for k, v in weights.items()))


def _observations(raw_obs: dict, names: _Names, dims) -> list:
    # likelihoods first (they fix the outcomes), then references to outcomes
    parsed = {}
    for oname, spec in raw_obs.items():
        path = ["observations", oname]
        role, bears_on = spec["role"], spec.get("bears_on")
        if bears_on is not None and bears_on not in names.props:
            raise DomainError(path + ["bears_on"], _unknown_prop(bears_on, names))
        if role in ESTABLISHING and bears_on is None:
            raise DomainError(path, f"missing field 'bears_on' (required for role {role})")
        lik, outcomes = _likelihood(spec["likelihood"], spec, names, path + ["likelihood"])
        names.obs_outcomes[oname] = tuple(outcomes)
        names.obs_outcome_set[oname] = frozenset(outcomes)
        parsed[oname] = (lik, outcomes)
    names.dims = frozenset(dims)
    return [_observation(oname, spec, *parsed[oname], names, dims) for oname, spec in raw_obs.items()]


def _observation(oname: str, spec: dict, lik, outcomes, names: _Names, dims) -> Observation:
    path = ["observations", oname]
    role = spec["role"]
    bears_on = spec.get("bears_on")
    establishes = ()
    if "establishes" in spec:
        if role not in ESTABLISHING:
            raise DomainError(path + ["establishes"],
                              f"only establish and supersede observations establish facts, not {role}")
        for y, v in spec["establishes"].items():
            if y not in names.obs_outcome_set[oname]:
                raise DomainError(path + ["establishes", y], f"unknown outcome '{y}' (outcomes: {', '.join(outcomes)})")
            if v not in names.value_pos[bears_on]:
                raise DomainError(path + ["establishes", y], _unknown_value(v, bears_on, names))
        establishes = tuple(spec["establishes"].items())
    elif role in ESTABLISHING:
        establishes = tuple((y, y) for y in outcomes if y in names.value_pos[bears_on])
        if not establishes:
            raise DomainError(path, f"no outcome names a value of {bears_on} "
                                    f"(values: {', '.join(names.props[bears_on])}): add an establishes map")
    cost = spec.get("cost") or {}
    for d in cost:
        if d not in names.dims:
            raise DomainError(path + ["cost", d], f"unknown budget dimension '{d}'"
                              + _hint(d, dims, "declared in budget"))
    if "age_minutes" in spec and "as_of" in spec:
        raise DomainError(path + ["as_of"], "give age_minutes or as_of, not both")
    as_of = _parse_time(spec["as_of"], path + ["as_of"]) if "as_of" in spec else None
    requires = _fact_expr(spec["requires"], names, path + ["requires"]) if "requires" in spec else None
    return Observation(
        name=oname, role=role, outcomes=outcomes, likelihood=lik, bears_on=bears_on,
        establishes=establishes, cost=tuple((d, float(c)) for d, c in cost.items()),
        entitlement=spec.get("entitlement"),
        purposes=tuple(spec["purposes"]) if "purposes" in spec else None,
        age_minutes=_opt_float(spec.get("age_minutes")), as_of=as_of,
        max_age_minutes=_opt_float(spec.get("max_age_minutes")), requires=requires,
        lineage=spec.get("lineage"), failure_rate=float(spec.get("failure_rate", 0.0)),
        relevance=_opt_float(spec.get("relevance")),
        result=_result_rule(spec["result"], outcomes, path + ["result"]) if "result" in spec else None,
    )


def _result_rule(spec: dict, outcomes, path) -> ResultRule:
    """The ``result:`` block: every outcome it names is declared (or ``unavailable``), and it maps something."""
    if not any(k in spec for k in ("values", "present", "absent")):
        raise DomainError(path, "maps nothing: give values, present or absent")
    allowed = tuple(outcomes) + (UNAVAILABLE,)
    named = [(path + ["values", v], y) for v, y in spec.get("values", {}).items()]
    named += [(path + [k], spec[k]) for k in ("present", "absent") if k in spec]
    for where, y in named:
        if y not in allowed:
            raise DomainError(where, f"unknown outcome '{y}'" + _hint(y, allowed, "outcomes"))
    field = tuple(spec["field"].split(".")) if "field" in spec else ()
    if "" in field:
        raise DomainError(path + ["field"], f"empty key in '{spec['field']}' (keys separated by single dots)")
    return ResultRule(field=field, values=tuple(spec.get("values", {}).items()),
                      present=spec.get("present"), absent=spec.get("absent"))


def _product(sizes) -> tuple:
    """(the product of `sizes`, or inf when it is astronomical; the product as text for a message).

    >>> _product([2] * 13), _product([10] * 400)[1]
    ((8192, '8,192'), 'about 10^400')
    """
    n = 1
    for k in sizes:
        n *= k
        if n > 10 ** 18:  # no exact count is needed past the caps (and a huge int cannot even be printed)
            exponent = round(sum(math.log10(k) for k in sizes if k > 0))
            return math.inf, f"about 10^{exponent}"
    return n, f"{n:,}"


def _check_lineage(observations, names: _Names, n_world: int) -> list:
    """Members of a lineage group copy one record, so they must describe it the same way.

    Returns the outcome counts of the lineage variables (groups with two or
    more members), after checking the joint state space they make.
    """
    groups: dict[str, Observation] = {}
    for o in observations:
        if o.lineage is None:
            continue
        if o.lineage in names.props:
            raise DomainError(["observations", o.name, "lineage"],
                              f"lineage group '{o.lineage}' is also a proposition's name")
        first = groups.setdefault(o.lineage, o)
        if first is not o:
            if tuple(o.outcomes) != tuple(first.outcomes):
                raise DomainError(["observations", o.name, "outcomes"],
                                  f"differ from observations.{first.name}, which shares lineage {o.lineage}")
            if o.likelihood != first.likelihood:
                raise DomainError(["observations", o.name, "likelihood"],
                                  f"differs from observations.{first.name}, which shares lineage {o.lineage}")
    members = Counter(o.lineage for o in observations if o.lineage is not None)
    # A group of one near another group's name is a typo that would make a copy independent evidence.
    # (Checked up to _MAX_LINEAGE_TYPO_GROUPS groups: difflib compares every pair.)
    for o in observations if len(members) <= _MAX_LINEAGE_TYPO_GROUPS else ():
        if o.lineage is not None and members[o.lineage] == 1:
            others = [g for g in members if g != o.lineage]
            close = difflib.get_close_matches(o.lineage, others, n=1, cutoff=0.8) if len(o.lineage) <= 100 else []
            if not close:
                continue
            if members[close[0]] == 1:  # two groups of one, nearly alike: the later one is the typo, or both
                other = next(x for x in observations if x.lineage == close[0])
                later, earlier = (o, other) if observations.index(o) > observations.index(other) else (other, o)
                raise DomainError(["observations", later.name, "lineage"],
                                  f"lineage group {_quote(later.lineage)} has no other member, nor has "
                                  f"{_quote(earlier.lineage)} (observations.{earlier.name}): is it a typo for it? "
                                  "A copy outside its record's group counts as independent evidence")
            raise DomainError(["observations", o.name, "lineage"],
                              f"lineage group {_quote(o.lineage)} has no other member (did you mean "
                              f"{_quote(close[0])}?); a copy outside its record's group counts as "
                              "independent evidence")
    latent_sizes = [len(groups[g].outcomes) for g in groups if members[g] >= 2]
    total, text = _product([n_world, *latent_sizes])
    if total > MAX_JOINT_STATES:
        raise DomainError(["world"], f"{text} joint states (with {len(latent_sizes)} lineage variable"
                                     f"{'s' if len(latent_sizes) != 1 else ''}) exceed the cap of {MAX_JOINT_STATES:,}")
    return latent_sizes


def _count(n: int, word: str) -> str:
    """``'1 state'``, ``'4,096 states'``."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _megabytes(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:,.0f} MB"


def _check_array_sizes(n_states: int, n_latent: int, observations, n_actions: int, budget, n_props: int) -> None:
    """Every array the compiler will allocate fits :data:`MAX_ARRAY_BYTES` (checked before any is allocated).

    The shapes are those of :func:`planner.compile.compile_domain`: the message
    names the product that is too large, so the fix is plain (fewer
    observations or outcomes, a smaller world).
    """
    n_obs = len(observations)
    slots = max((len(o.outcomes) + 1 for o in observations), default=1)
    n_vars = n_props + n_latent
    n_dims = len(budget.dimensions)
    obs, acts, states = _count(n_obs, "observation"), _count(n_actions, "action"), _count(n_states, "state")
    tables = [  # (path, what, entries, bytes per entry)
        (["world"], f"the state table needs {states} x {_count(n_vars, 'variable')}", n_states * n_vars, 8),
        (["observations"], f"the likelihood table needs {obs} x {_count(slots, 'outcome slot')} x {states}",
         n_obs * slots * n_states, 8),
        (["actions"], f"the loss table needs {acts} x {states}", n_actions * n_states, 8),
        (["budget"], f"the cost table needs {obs} x {_count(n_dims, 'dimension')}", n_obs * n_dims, 8),
        # (the establishing table, observations x outcome slots, is never larger than the likelihood table)
        (["observations"], f"the fact tables need {obs} x {_count(n_props, 'proposition')}", n_obs * n_props, 1),
        (["actions"], f"the fact tables need {acts} x {_count(n_props, 'proposition')}", n_actions * n_props, 1),
    ]
    for path, what, entries, size in tables:
        if entries * size > MAX_ARRAY_BYTES:
            raise DomainError(path, f"{what} = {entries:,} entries ({_megabytes(entries * size)}), "
                                    f"over the cap of {_megabytes(MAX_ARRAY_BYTES)}")


def _check_penalties(observations, budget) -> float:
    """No penalty, total spend in a dimension or total penalty overflows a float; returns the total penalty.

    A session adds penalties and spending along its steps and a receipt must
    hold finite numbers (``Infinity`` is not JSON), so the worst case, every
    observation acquired, must stay finite. Terms are non-negative, so the
    running sums are upper bounds of every partial sum a session forms.
    """
    weights = dict(budget.weights)
    spent = dict.fromkeys(budget.dimensions, 0.0)
    total = 0.0
    for o in observations:
        path = ["observations", o.name, "cost"]
        penalty = 0.0
        for d, c in o.cost:
            w = weights.get(d, 0.0)
            term = w * c
            if not math.isfinite(term):
                raise DomainError(path + [d], f"weight {w:g} x cost {c:g} overflows the penalty {_OVERFLOW}")
            penalty += term
        if not math.isfinite(penalty):
            raise DomainError(path, f"the penalty (the sum of weight x cost) overflows {_OVERFLOW}")
        for d, c in o.cost:
            spent[d] += c
            if not math.isfinite(spent[d]):
                raise DomainError(path + [d], f"the cost of every observation together overflows {_OVERFLOW}")
        total += penalty
        if not math.isfinite(total):
            raise DomainError(path, f"the penalties of every observation together overflow {_OVERFLOW}")
    return total


def _check_losses(actions, all_penalties: float) -> None:
    """No loss (a table sums across propositions) overflows, nor the largest loss plus every penalty."""
    for a in actions:
        path = ["actions", a.name, "loss"]
        loss = a.loss
        if loss.constant is not None:
            worst = loss.constant
        elif loss.cases is not None:
            worst = max(c.value for c in loss.cases)
        else:
            worst = 0.0
            for _, table in loss.tables:
                worst += max(v for _, v in table)
            if not math.isfinite(worst):
                raise DomainError(path, f"the loss summed over the propositions overflows {_OVERFLOW}")
        if not math.isfinite(worst + all_penalties):
            raise DomainError(path, f"its largest loss plus the penalties of every observation overflow {_OVERFLOW}")


def _actions(raw_actions: dict, names: _Names) -> list:
    actions = []
    for aname, spec in raw_actions.items():
        path = ["actions", aname]
        loss = _loss(spec["loss"], names, path + ["loss"])
        requires = _fact_expr(spec["requires"], names, path + ["requires"]) if "requires" in spec else None
        actions.append(Action(name=aname, loss=loss, requires=requires, kind=spec.get("kind", "decide")))
    # The fallback: with no evidence at all some action must still be permitted,
    # or a session could end with nothing it may do.
    if all(a.requires is not None for a in actions):
        raise DomainError(["actions"], "every action has requires: at least one must have none "
                                       "(the fallback when no evidence can be had)")
    return actions


def _opt_float(x):
    return None if x is None else float(x)
