"""Read and validate domain files (YAML or JSON) into :class:`planner.model.Domain`.

Validation runs in three passes, each stopping at the first problem:

1. syntax: YAML/JSON parse errors (with line and column), duplicate keys, and
   non-finite numbers anywhere;
2. structure: the JSON Schema shipped in ``planner/schema/domain.schema.json``
   (missing and unknown fields, types, negative numbers, bad names);
3. meaning: probabilities sum to 1 (tolerance :data:`SUM_TOLERANCE`), every
   name resolves, outcomes exist, tables cover every state, no cyclic
   preconditions, the joint state space fits :data:`MAX_JOINT_STATES`.

Every failure is a :class:`planner.errors.DomainError` whose message is one line
naming the path in the file.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import itertools
import json
import math
from importlib import resources
from pathlib import Path

import jsonschema
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
    Domain,
    Established,
    Likelihood,
    Loss,
    Observation,
    Prior,
    Proposition,
    Returned,
)

__all__ = ["load_domain", "domain_from_dict", "read_domain_file", "domain_schema",
           "SUM_TOLERANCE", "MAX_JOINT_STATES", "RESERVED_NAMES"]

#: Probabilities must sum to 1 within this tolerance after reading.
SUM_TOLERANCE = 1e-9

#: The largest joint state space (propositions times lineage variables) accepted.
MAX_JOINT_STATES = 4096

#: Names that the file format uses as keywords and so cannot name a proposition
#: or an observation.
RESERVED_NAMES = ("all", "any", "cases", "joint", UNAVAILABLE)


# --------------------------------------------------------------------------
# Pass 1: syntax


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys and reads only true/false as booleans.

    YAML 1.1 reads ``yes``, ``no``, ``on``, ``off`` as booleans, which would turn
    an outcome called ``no`` into ``False``; here they stay strings.
    """


_StrictLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    __import__("re").compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


def _construct_mapping(loader, node, deep=False):
    loader.flatten_mapping(node)
    seen = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise _DuplicateKey(key, key_node.start_mark.line + 1, seen[key])
        seen[key] = key_node.start_mark.line + 1
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


class _DuplicateKey(Exception):
    def __init__(self, key, line, first_line):
        self.key, self.line, self.first_line = key, line, first_line


def _json_pairs(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k, None, None)
        out[k] = v
    return out


def read_domain_file(path) -> dict:
    """Parse a domain file into plain data, reporting syntax errors as one line.

    Files ending in ``.json`` are read as JSON, anything else as YAML.
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
    """Parse domain-file text (YAML, or JSON when `json_format`)."""
    try:
        if json_format:
            data = json.loads(text, object_pairs_hook=_json_pairs)
        else:
            data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as e:
        where = f"line {e.line}: " if e.line else ""
        first = f" (first at line {e.first_line})" if e.first_line else ""
        raise DomainError("(file)", f"{where}duplicate key '{e.key}'{first}") from None
    except json.JSONDecodeError as e:
        raise DomainError("(file)", f"line {e.lineno}, column {e.colno}: JSON syntax error: {e.msg}") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = e.problem or e.context or "invalid YAML"
        raise DomainError("(file)", f"{where}YAML syntax error: {problem}") from None
    except yaml.YAMLError as e:
        raise DomainError("(file)", f"YAML syntax error: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise DomainError("(top level)", f"expected a mapping, got {_type_name(data)}")
    _check_finite(data, [])
    return data


def _check_finite(node, path):
    if isinstance(node, dict):
        for k, v in node.items():
            if not isinstance(k, str):
                raise DomainError(path, f"key {k!r} is not a string")
            _check_finite(v, path + [k])
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _check_finite(v, path + [i])
    elif isinstance(node, float) and not math.isfinite(node):
        raise DomainError(path, f"non-finite number {node}")


# --------------------------------------------------------------------------
# Pass 2: structure (JSON Schema)


def domain_schema() -> dict:
    """The JSON Schema of the domain-file format, as shipped with the package."""
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


def _schema_message(err) -> tuple[list, str]:
    """Turn one jsonschema error into (path, one-line message)."""
    path = list(err.absolute_path)
    inst = err.instance
    v = err.validator
    if v == "required":
        missing = [r for r in err.validator_value if r not in inst]
        return path, f"missing field '{missing[0]}'"
    if v == "additionalProperties":
        known = set(err.schema.get("properties", {}))
        extra = [k for k in inst if k not in known]
        return path, f"unknown field '{extra[0]}'"
    if v == "type":
        types = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        want = " or ".join(_TYPE_WORDS.get(t, t) for t in types)
        return path, f"expected {want}, got {_type_name(inst)}"
    if v == "minimum":
        return path, f"must be >= {err.validator_value}, got {inst}"
    if v == "maximum":
        return path, f"must be <= {err.validator_value}, got {inst}"
    if v in ("minItems", "minProperties"):
        return path, "must not be empty"
    if v == "minLength":
        return path, "must not be empty"
    if v == "enum":
        return path, f"must be one of {', '.join(map(str, err.validator_value))}, got {inst!r}"
    if v == "pattern":
        return path, f"invalid name {inst!r} (letters, digits, '_' and '-', not starting with a digit)"
    if v == "propertyNames":
        return path, f"invalid name {err.instance!r}"
    if v == "oneOf":
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
    err = errors[0]
    if err.validator == "propertyNames":
        # Point at the offending key, not at its parent.
        bad = [k for k in err.instance if not _name_ok(k)]
        if bad:
            raise DomainError(list(err.absolute_path) + [bad[0]],
                              f"invalid name {bad[0]!r} (letters, digits, '_' and '-', not starting with a digit)")
    path, msg = _schema_message(err)
    raise DomainError(path, msg)


def _name_ok(name) -> bool:
    import re

    return isinstance(name, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", name) is not None


# --------------------------------------------------------------------------
# Pass 3: meaning


def _fmt(x: float) -> str:
    return f"{x:.12g}"


def _check_sum(total: float, path) -> None:
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise DomainError(path, f"sums to {_fmt(total)}, not 1")


class _Names:
    """What the file declares, for resolving references."""

    def __init__(self):
        self.props: dict[str, tuple] = {}
        self.obs_outcomes: dict[str, tuple] = {}
        self.obs_failure: dict[str, float] = {}


def _check_reserved(name: str, path) -> None:
    if name in RESERVED_NAMES:
        raise DomainError(path, f"'{name}' is a reserved word and cannot be a name")


def _assignment(raw: dict, names: _Names, path) -> tuple:
    """Validate a {proposition: value} mapping; return pairs."""
    for p, v in raw.items():
        if p not in names.props:
            raise DomainError(path + [p], f"unknown proposition '{p}'")
        if v not in names.props[p]:
            raise DomainError(path + [p], f"unknown value '{v}' of {p} (values: {', '.join(names.props[p])})")
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
            raise DomainError(path, f"no case matches state {_describe_state(state)}")


def _fact_expr(raw: dict, names: _Names, path):
    terms = []
    for key, val in raw.items():
        if key in ("all", "any"):
            sub = [_fact_expr(item, names, path + [key, i]) for i, item in enumerate(val)]
            terms.append(AllOf(sub) if key == "all" else AnyOf(sub))
        elif key in names.props:
            if val not in names.props[key]:
                raise DomainError(path + [key],
                                  f"unknown value '{val}' of {key} (values: {', '.join(names.props[key])})")
            terms.append(Established(key, val))
        elif key in names.obs_outcomes:
            outs = names.obs_outcomes[key]
            can = val in outs or (val == UNAVAILABLE and names.obs_failure[key] > 0)
            if not can:
                raise DomainError(path + [key],
                                  f"{key} cannot return '{val}' (outcomes: {', '.join(outs)})")
            terms.append(Returned(key, val))
        else:
            raise DomainError(path + [key], f"unknown proposition or observation '{key}'")
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
            raise DomainError(path + [p], f"unknown proposition '{p}'")
        for v in table:
            if v not in names.props[p]:
                raise DomainError(path + [p, v], f"unknown value '{v}' of {p} (values: {', '.join(names.props[p])})")
        for v in names.props[p]:
            if v not in table:
                raise DomainError(path + [p], f"missing value '{v}'")
        tables.append((p, tuple((v, float(table[v])) for v in names.props[p])))
    return Loss(tables=tuple(tables))


def _distribution(raw: dict, outcomes: list | None, path, declared: bool) -> tuple:
    """Check one outcome distribution; extend `outcomes` when they are inferred."""
    for y in raw:
        if y == UNAVAILABLE:
            raise DomainError(path + [y], f"'{UNAVAILABLE}' is reserved: set failure_rate instead")
        if y not in outcomes:
            if declared:
                raise DomainError(path + [y], f"unknown outcome '{y}' (outcomes: {', '.join(outcomes)})")
            outcomes.append(y)
    _check_sum(sum(float(p) for p in raw.values()), path)
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
            if y in seen:
                raise DomainError(opath + ["outcomes", i], f"duplicate outcome '{y}'")
            seen.add(y)
    dep = obs.get("depends_on")
    dep = [dep] if isinstance(dep, str) else list(dep or [])
    for i, p in enumerate(dep):
        if p not in names.props:
            raise DomainError(opath + ["depends_on"] + ([i] if isinstance(obs.get("depends_on"), list) else []),
                              f"unknown proposition '{p}'")
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
        raise DomainError(path, "mixes outcome probabilities with per-value tables")
    if kinds == {False}:  # constant across worlds
        if dep:
            raise DomainError(path, f"depends_on {', '.join(dep)} but the likelihood is the same in every world")
        dist = _distribution(raw, outcomes, path, declared)
        return Likelihood(depends_on=(), cases=(Case(when=(), value=dist),)), outcomes
    # keyed by the values of one proposition
    if len(dep) > 1:
        raise DomainError(path, "depends on several propositions: use cases")
    prop = dep[0] if dep else obs.get("bears_on")
    if prop is None:
        raise DomainError(path, "keyed by values, but neither depends_on nor bears_on names a proposition")
    if prop not in names.props:
        return None, outcomes  # bears_on is reported by the caller
    values = names.props[prop]
    for v in raw:
        if v not in values:
            raise DomainError(path + [v], f"unknown value '{v}' of {prop} (values: {', '.join(values)})")
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
        raise DomainError(path, f"not an ISO 8601 time: {text!r}") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return t


def content_hash(data: dict) -> str:
    """sha256 of the canonical JSON of a parsed domain file (format-independent)."""
    canon = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(canon.encode("utf-8")).hexdigest()


def domain_from_dict(data: dict, *, source: str = "<dict>") -> Domain:
    """Validate parsed domain data and build a :class:`Domain` (see module doc)."""
    if not isinstance(data, dict):
        raise DomainError("(top level)", f"expected a mapping, got {_type_name(data)}")
    _check_finite(data, [])
    _check_schema(data)
    names = _Names()

    # world
    props = []
    for pname, spec in data["world"].items():
        _check_reserved(pname, ["world", pname])
        values = spec["values"]
        seen = set()
        for i, v in enumerate(values):
            if v in seen:
                raise DomainError(["world", pname, "values", i], f"duplicate value '{v}'")
            seen.add(v)
        names.props[pname] = tuple(values)
        props.append(Proposition(name=pname, values=values, max_age_minutes=_opt_float(spec.get("max_age_minutes"))))

    # prior
    raw_prior = data["prior"]
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
        _check_sum(sum(r.value for r in rows), ["prior", "joint"])
        prior = Prior(joint=tuple(rows))
    else:
        marg = []
        for p, dist in raw_prior.items():
            if p not in names.props:
                raise DomainError(["prior", p], f"unknown proposition '{p}'")
            for v in dist:
                if v not in names.props[p]:
                    raise DomainError(["prior", p, v], f"unknown value '{v}' of {p} (values: {', '.join(names.props[p])})")
            for v in names.props[p]:
                if v not in dist:
                    raise DomainError(["prior", p], f"missing value '{v}'")
            _check_sum(sum(float(x) for x in dist.values()), ["prior", p])
            marg.append((p, tuple((v, float(dist[v])) for v in names.props[p])))
        for p in names.props:
            if p not in raw_prior:
                raise DomainError(["prior"], f"missing proposition '{p}'")
        prior = Prior(marginals=tuple(marg))

    # joint-state cap before anything enumerates states
    n_states = math.prod(len(v) for v in names.props.values())
    if n_states > MAX_JOINT_STATES:
        raise DomainError(["world"], f"{n_states} joint states exceed the cap of {MAX_JOINT_STATES}")

    # observation names and outcomes first: requirements may reference them
    raw_obs = data.get("observations", {}) or {}
    for oname, spec in raw_obs.items():
        _check_reserved(oname, ["observations", oname])
        if oname in names.props:
            raise DomainError(["observations", oname], "name also used by a proposition")
        names.obs_failure[oname] = float(spec.get("failure_rate", 0.0))
    # budget
    raw_budget = data.get("budget", {}) or {}
    limits = raw_budget.get("limits", {}) or {}
    weights = raw_budget.get("weights", {}) or {}
    dims = list(limits) + [d for d in weights if d not in limits]
    budget = Budget(dimensions=dims, limits=tuple((k, float(v)) for k, v in limits.items()),
                    weights=tuple((k, float(v)) for k, v in weights.items()))

    # observations: likelihoods first (they fix the outcomes), then references
    parsed = {}
    for oname, spec in raw_obs.items():
        path = ["observations", oname]
        bears_on = spec.get("bears_on")
        if bears_on is not None and bears_on not in names.props:
            raise DomainError(path + ["bears_on"], f"unknown proposition '{bears_on}'")
        lik, outcomes = _likelihood(spec["likelihood"], spec, names, path + ["likelihood"])
        names.obs_outcomes[oname] = tuple(outcomes)
        parsed[oname] = (lik, outcomes)
    observations = []
    for oname, spec in raw_obs.items():
        path = ["observations", oname]
        role = spec["role"]
        bears_on = spec.get("bears_on")
        lik, outcomes = parsed[oname]
        if role in ("establish", "supersede") and bears_on is None:
            raise DomainError(path, f"missing field 'bears_on' (required for role {role})")
        establishes = ()
        if "establishes" in spec:
            if role not in ("establish", "supersede"):
                raise DomainError(path + ["establishes"], f"only establish and supersede observations establish facts, not {role}")
            for y, v in spec["establishes"].items():
                if y not in outcomes:
                    raise DomainError(path + ["establishes", y], f"unknown outcome '{y}' (outcomes: {', '.join(outcomes)})")
                if v not in names.props[bears_on]:
                    raise DomainError(path + ["establishes", y],
                                      f"unknown value '{v}' of {bears_on} (values: {', '.join(names.props[bears_on])})")
            establishes = tuple(spec["establishes"].items())
        elif role in ("establish", "supersede"):
            establishes = tuple((y, y) for y in outcomes if y in names.props[bears_on])
            if not establishes:
                raise DomainError(path, f"no outcome names a value of {bears_on}: add an establishes map")
        cost = spec.get("cost", {}) or {}
        for d in cost:
            if d not in dims:
                declared = ", ".join(dims) if dims else "none"
                raise DomainError(path + ["cost", d], f"unknown budget dimension '{d}' (declared: {declared})")
        if "age_minutes" in spec and "as_of" in spec:
            raise DomainError(path + ["as_of"], "give age_minutes or as_of, not both")
        as_of = _parse_time(spec["as_of"], path + ["as_of"]) if "as_of" in spec else None
        requires = _fact_expr(spec["requires"], names, path + ["requires"]) if "requires" in spec else None
        observations.append(Observation(
            name=oname, role=role, outcomes=outcomes, likelihood=lik, bears_on=bears_on,
            establishes=establishes, cost=tuple((d, float(c)) for d, c in cost.items()),
            entitlement=spec.get("entitlement"),
            purposes=tuple(spec["purposes"]) if "purposes" in spec else None,
            age_minutes=_opt_float(spec.get("age_minutes")), as_of=as_of,
            max_age_minutes=_opt_float(spec.get("max_age_minutes")), requires=requires,
            lineage=spec.get("lineage"), failure_rate=float(spec.get("failure_rate", 0.0)),
            relevance=_opt_float(spec.get("relevance")),
        ))

    # lineage groups: members copy one record, so they must describe it the same way
    groups: dict[str, Observation] = {}
    for o in observations:
        if o.lineage is None:
            continue
        if o.lineage in names.props:
            raise DomainError(["observations", o.name, "lineage"], f"lineage group '{o.lineage}' is also a proposition's name")
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

    # preconditions must not be cyclic
    from planner.graph import find_precondition_cycle

    cycle = find_precondition_cycle(observations)
    if cycle:
        raise DomainError(["observations", cycle[0], "requires"], "cyclic preconditions: " + " -> ".join(cycle))

    # actions
    actions = []
    for aname, spec in data["actions"].items():
        path = ["actions", aname]
        loss = _loss(spec["loss"], names, path + ["loss"])
        requires = _fact_expr(spec["requires"], names, path + ["requires"]) if "requires" in spec else None
        actions.append(Action(name=aname, loss=loss, requires=requires, kind=spec.get("kind", "decide")))

    checks = tuple(Check(name=str(c.get("name", f"check{i + 1}")), spec=c) for i, c in enumerate(data.get("checks", []) or []))
    return Domain(
        name=data["domain"], description=data.get("description", ""), purpose=data.get("purpose"),
        propositions=props, prior=prior, actions=actions, budget=budget, observations=observations,
        max_age_minutes=_opt_float(data.get("max_age_minutes")), checks=checks,
        content_hash=content_hash(data), raw=data,
    )


def _opt_float(x):
    return None if x is None else float(x)


def load_domain(path) -> Domain:
    """Read, validate and build a domain from a YAML or JSON file.

    Parameters
    ----------
    path : str or pathlib.Path
        The domain file; ``.json`` is read as JSON, anything else as YAML.

    Returns
    -------
    Domain

    Raises
    ------
    planner.errors.DomainError
        One line naming the path in the file and what is wrong.

    Examples
    --------
    >>> import planner, pathlib
    >>> d = load_domain(pathlib.Path(planner.__file__).parent.parent / "domains/payment_release.yaml")
    >>> [o.name for o in d.observations]
    ['approval_registry', 'manager_message', 'stale_approval_pdf', 'mailbox_sweep']
    """
    data = read_domain_file(path)
    return domain_from_dict(data, source=str(path))


__all__ += ["parse_domain_text", "content_hash", "format_path"]
