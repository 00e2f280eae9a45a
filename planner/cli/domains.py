"""``planner validate``, ``planner check`` and ``planner graph``: domain files themselves."""

from __future__ import annotations

import sys
from pathlib import Path

from planner.gates.andor import flow_graph
from planner.model.caller import Caller
from planner.cli.common import Once, warn_unknown_caller, write_picture
from planner.compile import compile_domain
from planner.model.domain import DOMAINS, load_domain
from planner.errors import DomainError, PlannerError, one_line
from planner.gates.prerequisites import availability_warnings, dead_domain_warnings

__all__ = ["register", "check_paths", "expand_paths"]

_SUFFIXES = (".yaml", ".yml", ".json")


def cmd_validate(args) -> int:
    status = 0
    loaded = []
    for path in expand_paths(args.domains):
        try:
            d = load_domain(path)
            c = compile_domain(d)
        except DomainError as e:
            print(f"{path}: {e}")
            status = 2
            continue
        loaded.append(d)
        print(f"ok {path}: {len(c.prop_names)} propositions, {c.n_states} joint states, "
              f"{len(c.action_names)} actions, {len(c.obs_names)} observations")
        caller = Caller(entitlements=args.entitlement)
        for w in dead_domain_warnings(d, caller) + availability_warnings(d, caller):
            print(f"  warning: {one_line(w, limit=sys.maxsize)}")
    warn_unknown_caller(loaded, args.entitlement)
    return status


def expand_paths(paths) -> list:
    """Domain arguments with every folder replaced by its domain files (*.yaml, *.yml, *.json), sorted.

    Files and shipped names pass through as given; an empty folder is a
    one-line error. ``validate`` and ``check`` both read their arguments so.

    >>> from planner.model.domain import DOMAINS
    >>> [p.name for p in expand_paths([DOMAINS])][:2]
    ['acceptance_threshold.yaml', 'bridge_status_dispatch.yaml']
    """
    out = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found = sorted(q for q in p.iterdir() if q.is_file() and q.suffix.lower() in _SUFFIXES)
            if not found:
                raise PlannerError(f"{p}: no domain files (*.yaml, *.yml, *.json) in this folder")
            out.extend(found)
        else:
            out.append(p)
    return out


def check_paths(paths, *, verbose: bool = False, out=print) -> int:
    """Run the checks of every domain file in `paths` (a folder: its *.yaml/*.yml/*.json).

    Prints one line per check (and one per unreadable file or malformed check).

    Returns
    -------
    int
        0 when every check passes, 1 when a check fails or there is no check
        at all (files without a ``checks`` section), 2 on bad input (a file
        that does not load, a malformed check).
    """
    from planner.evaluation.check import parse_checks, run_check  # here: validate and graph run no session

    bad = failed = passed = 0
    files = expand_paths(paths)
    for path in files:
        try:
            domain = load_domain(path)
            checks = parse_checks(domain)
        except PlannerError as e:
            out(f"{path}: {e}")
            bad += 1
            continue
        for chk in checks:
            try:
                result = run_check(domain, chk)
            except PlannerError as e:  # a check the session refuses to start (e.g. bad limits)
                out(f"{path}: checks[{chk.index}]: {e}")
                bad += 1
                continue
            out(result.line(prefix=f"{path}::"))
            if verbose and result.status == "fail":
                for f in result.failures:
                    out(f"    {f}")
            passed += result.status == "pass"
            failed += result.status == "fail"
    total = passed + failed
    if not total and not bad:  # nothing was checked: not a pass
        n = len(files)
        out(f"no checks: {'the file has no' if n == 1 else f'none of the {n} files has a'} checks section, so nothing "
            "was checked (docs/checks.md)")
        return 1
    out(f"{total} check{'s' if total != 1 else ''}: {passed} passed, {failed} failed"
        + (f"; {bad} bad input{'s' if bad != 1 else ''}" if bad else ""))
    if bad:
        return 2
    return 1 if failed else 0


def cmd_check(args) -> int:
    return check_paths(args.paths or [DOMAINS], verbose=args.verbose)


def cmd_graph(args) -> int:
    if args.format == "png" and not args.output:  # before loading anything
        raise PlannerError("--format png needs --output FILE")
    text = write_picture(flow_graph(load_domain(args.domain)), args.format, args.output)
    print(text if text is not None else f"wrote {args.output}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("validate", help="validate domain files (folders: every file in them)")
    p.add_argument("domains", nargs="+", metavar="DOMAIN",
                   help="domain files (YAML or JSON), folders (every *.yaml, *.yml, *.json in them) or shipped names")
    p.add_argument("--entitlement", action="append", default=[], metavar="E",
                   help="an entitlement the subject holds, for the availability warnings (repeatable)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("check", help="run the scripted checks of domain files (folders: every file in them)")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="domain files or folders (default: the shipped domains)")
    p.add_argument("-v", "--verbose", action="store_true", help="list every failure of a failed check")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("graph", help="draw the domain in execution order: observations, the outcomes that open "
                                      "the next step, AND/OR gates, established values, actions (mermaid, dot, png)")
    p.add_argument("domain", help="a domain file (YAML or JSON), or the name of a shipped domain")
    p.add_argument("--format", choices=("mermaid", "dot", "png"), default="mermaid", action=Once,
                   help="mermaid (default) or dot text, or a png image (needs --output and the bench extra)")
    p.add_argument("--output", "-o", metavar="FILE", action=Once, help="write to FILE (required for png)")
    p.set_defaults(func=cmd_graph)
