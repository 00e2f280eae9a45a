"""Read and validate domain files (YAML or JSON): the fields of a :class:`planner.domain.Domain`.

Validation runs in three passes, each stopping at the first problem:

1. syntax: YAML/JSON parse errors (with line and column), duplicate keys (with
   the mapping they are in and both lines), an empty file, non-string keys,
   and non-finite or overlarge numbers anywhere;
2. structure: the JSON Schema shipped in ``planner/schema/domain.schema.json``
   (missing and unknown fields, types, negative numbers, probabilities above 1,
   bad names);
3. meaning: the joint state space fits :data:`MAX_JOINT_STATES`, probabilities
   sum to 1 (tolerance :data:`SUM_TOLERANCE`), every name resolves, required
   outcomes exist, tables cover every state, reserved and duplicate names,
   lineage members agree, no cyclic preconditions, and at least one decision
   action has no ``requires`` (the fallback when no evidence can be had).

Every failure is a :class:`planner.errors.DomainError` whose message is one line
``"<path in the file>: <what is wrong>"``. The format and every error kind are
documented in ``docs/domain-format.md``; ``tests/malformed/expected.yaml`` keeps
the exact message for each malformed example file.

YAML is read with a strict safe loader: only ``true``/``false`` are booleans
(``yes``, ``no``, ``on``, ``off`` stay strings, so an outcome may be called
``no``), dates and times stay strings (``as_of`` is parsed by the loader), and
``1e-3`` is a number, as in YAML 1.2 and JSON.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import hashlib
import itertools
import json
import math
import re
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import networkx as nx
import yaml

from planner.errors import DomainError, format_path
from planner.model import (
    UNAVAILABLE,
    Action,
    AllOf,
    AnyOf,
    Budget,
    Case,
    Check,
    Established,
    Likelihood,
    Loss,
    Observation,
    Prior,
    Proposition,
    Returned,
    expr_atoms,
)

__all__ = ["domain_fields", "read_domain_file", "parse_domain_text", "domain_schema", "content_hash",
           "SUM_TOLERANCE", "MAX_JOINT_STATES", "RESERVED_NAMES"]

#: Probabilities must sum to 1 within this tolerance after reading.
SUM_TOLERANCE = 1e-9

#: The largest joint state space accepted: the product of the propositions'
#: value counts, times the outcome count of each lineage group with two or more
#: members (each such group adds one latent variable).
MAX_JOINT_STATES = 4096

#: Words the file format uses as keys (``all``/``any`` in requirements,
#: ``cases`` in losses and likelihoods, ``joint`` in the prior) and the outcome
#: of a failed call; none of them can name a proposition, a value, an
#: observation or an outcome.
RESERVED_NAMES = ("all", "any", "cases", "joint", UNAVAILABLE)

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_NAME_RULE = "letters, digits, '_' and '-', not starting with a digit"


# --------------------------------------------------------------------------
# Pass 1: syntax


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that reads only true/false as booleans and keeps times as strings.

    YAML 1.1 reads ``yes``, ``no``, ``on``, ``off`` as booleans, which would turn
    an outcome called ``no`` into ``False``; here they stay strings. Timestamps
    stay strings so that YAML and JSON files read alike. ``1e-3`` and ``1.5e3``
    (YAML 1.2 and JSON spellings, strings in YAML 1.1) read as numbers.
    Duplicate keys are found on the node tree (:func:`_yaml_duplicate`).
    """


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


def _json_duplicate(node, path) -> None:
    if isinstance(node, _DuplicateJSONObject):
        raise DomainError(path, f"duplicate key {_quote(node.duplicate)}")
    if isinstance(node, dict):
        for k, v in node.items():
            _json_duplicate(v, path + [k])
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _json_duplicate(v, path + [i])


def read_domain_file(path) -> dict:
    """Parse a domain file into plain data, reporting syntax errors as one line.

    Files ending in ``.json`` are read as JSON, anything else as YAML.

    Examples
    --------
    >>> import planner
    >>> data = read_domain_file(planner.DOMAINS / "payment_release.yaml")
    >>> data["prior"]
    {'approval': {'approved': 0.55, 'pending': 0.45}}
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DomainError("(file)", f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise DomainError("(file)", f"cannot read {path}: {e}") from None
    return parse_domain_text(text, json_format=path.suffix.lower() == ".json")


def parse_domain_text(text: str, *, json_format: bool = False) -> dict:
    """Parse domain-file text (YAML, or JSON when `json_format`) and check its syntax.

    Raises :class:`~planner.errors.DomainError`; a parse error's path is its
    line and column.

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
    """
    if not text.strip() or (not json_format and _only_comments(text)):
        raise DomainError("(top level)", "the file is empty (expected a mapping with domain, world, prior and actions)")
    if json_format:
        try:
            data = json.loads(text, object_pairs_hook=_json_pairs)
        except json.JSONDecodeError as e:
            raise DomainError(f"line {e.lineno}, column {e.colno}", f"JSON syntax error: {e.msg}") from None
        _json_duplicate(data, [])
    else:
        loader = _StrictLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                _yaml_duplicate(node, [], set())
            data = loader.construct_document(node) if node is not None else None
        except yaml.MarkedYAMLError as e:
            raise DomainError(*_yaml_error(e)) from None
        except yaml.YAMLError as e:
            raise DomainError("(file)", f"YAML syntax error: {str(e).splitlines()[0]}") from None
        finally:
            loader.dispose()
    _check_top(data)
    return data


def _yaml_error(e) -> tuple:
    """(location, message) of a YAML error; the context names where the construct began."""
    mark = e.problem_mark or e.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(file)"
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
    _check_scalars(data, [])


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
    if isinstance(k, (int, float)):
        return f"key {k} is a number, not a name ({_NAME_RULE})"
    return f"key {k!r} is not a name"


def _check_scalars(node, path) -> None:
    """Keys are strings; numbers are finite and fit a float."""
    if isinstance(node, dict):
        for k, v in node.items():
            if not isinstance(k, str):
                raise DomainError(path, _bad_key(k))
            _check_scalars(v, path + [k])
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _check_scalars(v, path + [i])
    elif isinstance(node, float) and not math.isfinite(node):
        raise DomainError(path, f"must be a finite number, got {node}")
    elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > sys.float_info.max:
        raise DomainError(path, "number too large (more than 1.8e308)")


# --------------------------------------------------------------------------
# Pass 2: structure (JSON Schema)


def domain_schema() -> dict:
    """The JSON Schema (draft 2020-12) of the domain-file format, as shipped with the package.

    >>> domain_schema()["required"]
    ['domain', 'world', 'prior', 'actions']
    """
    return json.loads(resources.files("planner").joinpath("schema/domain.schema.json").read_text())


_VALIDATOR = None


def _validator():
    global _VALIDATOR
    if _VALIDATOR is None:
        schema = domain_schema()
        cls = jsonschema.validators.validator_for(schema)
        _VALIDATOR = cls(schema)
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
    match = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
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
    errors = list(_validator().iter_errors(data))
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
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise DomainError(path, f"sums to {_fmt(total)}, not 1")


class _Names:
    """What the file declares, for resolving references."""

    def __init__(self):
        self.props: dict[str, tuple] = {}
        self.obs_outcomes: dict[str, tuple] = {}
        self.obs_failure: dict[str, float] = {}


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
        if v not in names.props[p]:
            raise DomainError(path + [p], _unknown_value(v, p, names))
    return tuple(raw.items())


def _all_states(names: _Names):
    props = list(names.props)
    for combo in itertools.product(*(names.props[p] for p in props)):
        yield dict(zip(props, combo))


def _matches(when, state) -> bool:
    return all(state[p] == v for p, v in when)


def _describe_state(state: dict) -> str:
    return ", ".join(f"{p}={v}" for p, v in state.items())


def _check_cases_cover(cases, names: _Names, path) -> None:
    for state in _all_states(names):
        if not any(_matches(c.when, state) for c in cases):
            raise DomainError(path, f"no case matches state {_describe_state(state)} "
                                    "(add a last case without 'when' as a default)")


def _fact_expr(raw: dict, names: _Names, path):
    terms = []
    for key, val in raw.items():
        if key in ("all", "any"):
            sub = [_fact_expr(item, names, path + [key, i]) for i, item in enumerate(val)]
            terms.append(AllOf(sub) if key == "all" else AnyOf(sub))
        elif key in names.props:
            if val not in names.props[key]:
                raise DomainError(path + [key], _unknown_value(val, key, names))
            terms.append(Established(key, val))
        elif key in names.obs_outcomes:
            outs = names.obs_outcomes[key]
            if val == UNAVAILABLE and names.obs_failure[key] <= 0:
                raise DomainError(path + [key], f"{key} cannot return '{UNAVAILABLE}': its failure_rate is 0")
            if val not in outs and val != UNAVAILABLE:
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
            if v not in names.props[p]:
                raise DomainError(path + [p, v], _unknown_value(v, p, names))
        for v in names.props[p]:
            if v not in table:
                raise DomainError(path + [p], f"missing value '{v}' (a loss table gives every value of {p})")
        tables.append((p, tuple((v, float(table[v])) for v in names.props[p])))
    return Loss(tables=tuple(tables))


def _distribution(raw: dict, outcomes: list, path, declared: bool) -> tuple:
    """Check one outcome distribution; extend `outcomes` when they are inferred."""
    for y in raw:
        if y == UNAVAILABLE:
            raise DomainError(path + [y], f"'{UNAVAILABLE}' is reserved: set failure_rate instead")
        if y not in outcomes:
            if declared:
                raise DomainError(path + [y], f"unknown outcome '{y}' (outcomes: {', '.join(outcomes)})")
            _check_reserved(y, path + [y], "an outcome")
            outcomes.append(y)
    _check_sum(raw.values(), path)
    return tuple((y, float(p)) for y, p in raw.items())


def _likelihood(raw: dict, obs: dict, names: _Names, path):
    """Return (Likelihood, outcomes)."""
    declared = "outcomes" in obs
    outcomes = list(obs.get("outcomes", []))
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
            dist = _distribution(c["p"], outcomes, path + ["cases", i, "p"], declared)
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
        dist = _distribution(raw, outcomes, path, declared)
        return Likelihood(depends_on=(), cases=(Case(when=(), value=dist),)), outcomes
    # keyed by the values of one proposition
    if len(dep) > 1:
        raise DomainError(path, f"depends_on {', '.join(dep)}: a likelihood on several propositions uses cases")
    prop = dep[0] if dep else obs.get("bears_on")
    if prop is None:
        raise DomainError(path, "keyed by proposition values, but neither depends_on nor bears_on names the proposition")
    values = names.props[prop]
    for v in raw:
        if v not in values:
            raise DomainError(path + [v], _unknown_value(v, prop, names))
    for v in values:
        if v not in raw:
            raise DomainError(path, f"missing value '{v}' of {prop}")
    cases = []
    for v in values:
        dist = _distribution(raw[v], outcomes, path + [v], declared)
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

    >>> from planner.model import Observation, Likelihood, Case, Returned
    >>> lik = Likelihood(depends_on=(), cases=(Case(when=(), value=(("y", 1.0),)),))
    >>> a = Observation(name="a", role="inform", outcomes=("y",), likelihood=lik, requires=Returned("b", "y"))
    >>> b = Observation(name="b", role="inform", outcomes=("y",), likelihood=lik, requires=Returned("a", "y"))
    >>> _precondition_cycle([a, b]), _precondition_cycle([a])
    (['a', 'b', 'a'], None)
    """
    g = nx.DiGraph()
    order = {o.name: i for i, o in enumerate(observations)}
    g.add_nodes_from(order)
    for o in observations:
        if o.requires is not None:
            g.add_edges_from((o.name, a.observation) for a in expr_atoms(o.requires) if isinstance(a, Returned))
    for start in order:
        try:
            edges = nx.find_cycle(g, source=start)
        except nx.NetworkXNoCycle:
            continue
        cyc = [u for u, _ in edges]
        k = min(range(len(cyc)), key=lambda i: order[cyc[i]])
        cyc = cyc[k:] + cyc[:k]
        return cyc + [cyc[0]]
    return None


def content_hash(data: dict) -> str:
    """sha256 of the canonical JSON of a parsed domain file (format-independent).

    >>> content_hash({"b": 1, "a": [0.5]}) == content_hash({"a": [0.5], "b": 1})
    True
    """
    canon = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(canon.encode("utf-8")).hexdigest()


def domain_fields(data: dict) -> dict:
    """Validate parsed domain data; return the fields of a :class:`planner.domain.Domain`.

    :meth:`planner.domain.Domain.from_dict` is the public way to call this.
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
    n_states = math.prod(len(v) for v in names.props.values())
    if n_states > MAX_JOINT_STATES:  # before anything enumerates states
        raise DomainError(["world"], f"{n_states} joint states exceed the cap of {MAX_JOINT_STATES}")
    prior = _prior(data["prior"], names)
    raw_obs = data.get("observations") or {}
    for oname, spec in raw_obs.items():  # observation names first: requirements may reference them
        _check_reserved(oname, ["observations", oname], "an observation")
        if oname in names.props:
            raise DomainError(["observations", oname], f"'{oname}' already names a proposition")
        names.obs_failure[oname] = float(spec.get("failure_rate", 0.0))
    budget = _budget(data.get("budget") or {})
    observations = _observations(raw_obs, names, budget.dimensions)
    _check_lineage(observations, names, n_states)
    cycle = _precondition_cycle(observations)
    if cycle:
        text = " -> ".join(cycle)
        if len(cycle) == 2:
            text += f" ({cycle[0]} requires its own outcome)"
        raise DomainError(["observations", cycle[0], "requires"], "cyclic preconditions: " + text)
    actions = _actions(data["actions"], names)
    checks = tuple(Check(name=str(c.get("name", f"check{i + 1}")), spec=c)
                   for i, c in enumerate(data.get("checks", []) or []))
    return dict(
        name=data["domain"], description=data.get("description", ""), purpose=data.get("purpose"),
        propositions=props, prior=prior, actions=actions, budget=budget, observations=observations,
        max_age_minutes=_opt_float(data.get("max_age_minutes")), checks=checks,
        content_hash=content_hash(data), raw=data,
    )


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


def _budget(raw_budget: dict) -> Budget:
    limits = raw_budget.get("limits") or {}
    weights = raw_budget.get("weights") or {}
    dims = list(limits) + [d for d in weights if d not in limits]
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
        if role in ("establish", "supersede") and bears_on is None:
            raise DomainError(path, f"missing field 'bears_on' (required for role {role})")
        lik, outcomes = _likelihood(spec["likelihood"], spec, names, path + ["likelihood"])
        names.obs_outcomes[oname] = tuple(outcomes)
        parsed[oname] = (lik, outcomes)
    return [_observation(oname, spec, *parsed[oname], names, dims) for oname, spec in raw_obs.items()]


def _observation(oname: str, spec: dict, lik, outcomes, names: _Names, dims) -> Observation:
    path = ["observations", oname]
    role = spec["role"]
    bears_on = spec.get("bears_on")
    establishes = ()
    if "establishes" in spec:
        if role not in ("establish", "supersede"):
            raise DomainError(path + ["establishes"],
                              f"only establish and supersede observations establish facts, not {role}")
        for y, v in spec["establishes"].items():
            if y not in outcomes:
                raise DomainError(path + ["establishes", y], f"unknown outcome '{y}' (outcomes: {', '.join(outcomes)})")
            if v not in names.props[bears_on]:
                raise DomainError(path + ["establishes", y], _unknown_value(v, bears_on, names))
        establishes = tuple(spec["establishes"].items())
    elif role in ("establish", "supersede"):
        establishes = tuple((y, y) for y in outcomes if y in names.props[bears_on])
        if not establishes:
            raise DomainError(path, f"no outcome names a value of {bears_on} "
                                    f"(values: {', '.join(names.props[bears_on])}): add an establishes map")
    cost = spec.get("cost") or {}
    for d in cost:
        if d not in dims:
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
    )


def _check_lineage(observations, names: _Names, n_states: int) -> None:
    """Members of a lineage group copy one record, so they must describe it the same way."""
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
    latent_sizes = [len(groups[g].outcomes) for g in groups
                    if sum(o.lineage == g for o in observations) >= 2]
    total = n_states * math.prod(latent_sizes)
    if total > MAX_JOINT_STATES:
        raise DomainError(["world"], f"{total} joint states (with {len(latent_sizes)} lineage variable"
                                     f"{'s' if len(latent_sizes) != 1 else ''}) exceed the cap of {MAX_JOINT_STATES}")


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
