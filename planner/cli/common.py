"""What the command groups share: the parser class, the caller's options, the policy option, parsing helpers.

Library modules raise typed errors that name no option; the CLI adds the
option's name where it helps (``--world``, ``--limit``, ``--max-nodes``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import difflib
import sys

from planner.model.caller import Caller
from planner.errors import PlannerError, one_line

# planner.policies (every policy, and the search kernels' modules) is imported by the two functions that
# need it, not here: ``planner validate`` and ``planner check`` use this module and run no policy.

__all__ = ["Parser", "Once", "add_caller_args", "add_policy_arg", "caller_from_args", "policy_from_args",
           "parse_pairs", "parse_limits", "parse_time", "quote", "warn", "warn_unknown_caller",
           "progress_bar", "PROGRESS_DELAY", "write_picture", "seed_int", "count_int", "MAX_SEED", "MAX_COUNT"]

#: The largest ``--seed``: seeds are stored in the outcome log (a signed 64-bit
#: SQLite integer) and printed in receipts, so they stay below 2**63.
MAX_SEED = 2**63 - 1

#: The largest count an option takes (``--max-nodes``, ``--sessions``, an id):
#: the kernels count in signed 64-bit integers.
MAX_COUNT = 2**63 - 1

#: Seconds a command runs before its progress bar appears: quick runs stay quiet.
PROGRESS_DELAY = 1.0


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, exit status 2."""

    def error(self, message):
        self.exit(2, f"planner: error: {message}\n")

    def add_subparsers(self, **kwargs):
        # The command is a positional like any other: it gets a name and a description.
        kwargs.setdefault("metavar", "COMMAND")
        kwargs.setdefault("help", "one of the commands below (COMMAND --help for its options)")
        return super().add_subparsers(**kwargs)


class Once(argparse.Action):
    """Store an option's value, refusing a second one (argparse would silently keep the last).

    >>> p = Parser(prog="planner")
    >>> _ = p.add_argument("--policy", action=Once)
    >>> p.parse_args(["--policy", "a"]).policy
    'a'
    """

    def __call__(self, parser, namespace, values, option_string=None):
        seen = f"_{self.dest}_given"
        if getattr(namespace, seen, False):
            parser.error(f"{option_string} given twice ({quote(getattr(namespace, self.dest))}, {quote(values)}): "
                         "give it once")
        setattr(namespace, seen, True)
        setattr(namespace, self.dest, values)


def _bounded_int(text: str, lo: int, hi: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{quote(text)}: not an integer") from None
    if not lo <= value <= hi:
        shown = text if len(text) <= 24 else text[:21] + "..."
        raise argparse.ArgumentTypeError(f"{shown}: must be an integer from {lo} to 2**63-1")
    return value


def seed_int(text: str) -> int:
    """An argparse ``type`` for ``--seed``: an integer from 0 to :data:`MAX_SEED` (a one-line usage error else).

    >>> seed_int("7")
    7
    >>> seed_int("-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: -1: must be an integer from 0 to 2**63-1
    """
    return _bounded_int(text.strip(), 0, MAX_SEED)


def count_int(text: str) -> int:
    """An argparse ``type`` for a count (``--max-nodes``, ``--sessions``): 1 to :data:`MAX_COUNT`.

    >>> count_int("200000")
    200000
    >>> count_int(str(2**64))
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 18446744073709551616: must be an integer from 1 to 2**63-1
    """
    return _bounded_int(text.strip(), 1, MAX_COUNT)


def quote(text, limit: int = 60) -> str:
    """A name as it came, quoted for a one-line message: control characters escaped, long ones cut.

    >>> print(quote("mailbox.read_all"), quote("a" + chr(10) + "b"))
    'mailbox.read_all' 'a\\nb'
    """
    text = str(text)
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    return repr(text)


def warn(message: str) -> None:
    """One line ``planner: warning: ...`` on stderr (control characters in `message` escaped)."""
    print(f"planner: warning: {one_line(message, limit=sys.maxsize)}", file=sys.stderr)


def _mentioned(domains):
    """Entitlements and purposes the domains mention, in file order, each once."""
    ents, purposes = {}, {}
    for d in domains:
        if d.purpose:
            purposes.setdefault(d.purpose)
        for o in d.observations:
            if o.entitlement:
                ents.setdefault(o.entitlement)
            for p in o.purposes or ():
                purposes.setdefault(p)
    return list(ents), list(purposes)


def _unknown_line(flag: str, value: str, known: list, what: str, n_domains: int, name: str) -> str:
    close = difflib.get_close_matches(value, known, n=1, cutoff=0.6)
    if close:
        hint = f"did you mean {quote(close[0])}?"
    elif not known:
        hint = f"it mentions no {what}s"
    elif len(known) <= 12:
        hint = f"{what}s it mentions: {', '.join(known)}"
    else:
        hint = f"it mentions {len(known)} {what}s"
    who = f"{name} never mentions" if n_domains == 1 else f"none of the {n_domains} domains mentions"
    return f"{flag} {quote(value)}: {who} this {what} ({hint})"


def warn_unknown_caller(domains, entitlements=(), purpose=None) -> None:
    """Warn (one line each) about entitlements and a purpose that none of `domains` mentions.

    Such a value changes nothing (no observation asks for it) and is most
    likely a typo, but it is not wrong: the session goes on.
    """
    domains = list(domains)
    ents, purposes = _mentioned(domains)
    if not domains:
        return
    n, name = len(domains), domains[0].name
    for e in dict.fromkeys(entitlements):
        if e not in ents:
            warn(_unknown_line("--entitlement", e, ents, "entitlement", n, name))
    if purpose is not None and purpose not in purposes:
        warn(_unknown_line("--purpose", purpose, purposes, "purpose", n, name))


def progress_bar(total: int, *, desc: str, unit: str, enabled: bool = True):
    """A tqdm bar on stderr (count, rate, ETA) that appears after :data:`PROGRESS_DELAY` seconds.

    Disabled when `enabled` is false or stderr is not a terminal (a log, a
    pipe, CI): stdout never carries it, so ``--json`` output stays clean.
    """
    from tqdm import tqdm

    stream = sys.stderr
    try:
        on = enabled and stream.isatty()
    except (AttributeError, ValueError):
        on = False
    return tqdm(total=total, desc=desc, unit=unit, file=stream, disable=not on, delay=PROGRESS_DELAY,
                leave=False, dynamic_ncols=True)


def write_picture(graph, fmt: str, output, flag: str = "--format") -> str | None:
    """Render `graph` as `fmt` (mermaid, dot, png) into `output` (atomically), or return the text when no file.

    Raises a one-line :class:`PlannerError` for a PNG without a file, and
    :class:`planner.io.atomic.OutputError` when the file cannot be written.
    """
    from planner.io.atomic import write_text
    from planner.drawing.export import draw_png, to_dot, to_mermaid

    if fmt == "png":
        if not output:
            raise PlannerError(f"{flag} png needs --output FILE")
        draw_png(graph, output)
        return None
    text = to_mermaid(graph) if fmt == "mermaid" else to_dot(graph)
    if output:
        write_text(output, text + "\n")
        return None
    return text


def add_caller_args(p, *, time: bool = True) -> None:
    """``--entitlement``, ``--purpose``, ``--decision-time``, ``--limit``: the caller of a session."""
    p.add_argument("--entitlement", action="append", default=[], metavar="E",
                   help="an entitlement the subject holds (repeatable)")
    p.add_argument("--purpose", action=Once, help="the decision's purpose (default: the domain's)")
    if time:
        p.add_argument("--decision-time", metavar="TIME", action=Once,
                       help="ISO 8601 time of the decision, for records dated with as_of (default: now)")
    p.add_argument("--limit", action="append", default=[], metavar="DIM=VALUE",
                   help="override a hard budget limit (repeatable)")


def add_policy_arg(p, *, repeatable: bool = False) -> None:
    """``--policy SPEC`` (and ``--max-nodes N`` for searching policies)."""
    from planner.policies import DEFAULT_POLICY
    from planner.policies.registry import policy_help

    if repeatable:
        p.add_argument("--policy", action="append", metavar="SPEC",
                       help=f"policy spec, repeatable for a comparison table (default {DEFAULT_POLICY}). "
                            + policy_help())
    else:
        p.add_argument("--policy", default=DEFAULT_POLICY, metavar="SPEC", action=Once,
                       help=policy_help() + ". Give it once.")
    p.add_argument("--max-nodes", type=count_int, metavar="N", action=Once,
                   help="nodes one lookahead:D search may expand (default 2,000,000, fewer on expensive domains)")
    p.add_argument("--max-work", type=count_int, metavar="N", action=Once,
                   help="work units one bounded decision may spend (default 1,000,000,000, about 1 s of CPU; "
                        "exhausting it is not an error: the answer carries its interval)")


def parse_pairs(items, flag) -> dict:
    """``NAME=VALUE`` flags -> ``{name: value}`` (one-line error naming `flag` on a bad one).

    A name given twice is refused, as a repeated ``--policy`` is: argparse
    would keep the last value without a word.

    >>> parse_pairs(["approval=pending"], "--world")
    {'approval': 'pending'}
    >>> parse_pairs(["approval=pending", "approval=approved"], "--world")
    Traceback (most recent call last):
    ...
    planner.errors.PlannerError: --world 'approval' given twice ('pending', 'approved'): give each name once
    """
    out = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k or not v:
            raise PlannerError(f"{flag} {item}: expected NAME=VALUE")
        if k in out:
            raise PlannerError(f"{flag} {quote(k)} given twice ({quote(out[k])}, {quote(v)}): give each name once")
        out[k] = v
    return out


def parse_limits(items) -> dict:
    """``--limit DIM=VALUE`` flags -> ``{dim: float}`` (one-line error on a bad one).

    >>> parse_limits(["calls=3", "latency_ms=250"])
    {'calls': 3.0, 'latency_ms': 250.0}
    """
    limits = {}
    for k, v in parse_pairs(items, "--limit").items():
        try:
            limits[k] = float(v)
        except ValueError:
            raise PlannerError(f"--limit {k}={v}: not a number") from None
    return limits


def parse_time(text: str | None, flag: str = "--decision-time"):
    """An ISO 8601 time (``Z`` accepted), or None."""
    if not text:
        return None
    try:
        return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise PlannerError(f"{flag} {text}: not an ISO 8601 time (for example 2026-01-05T09:30:00Z)") from None


def caller_from_args(args) -> Caller:
    """The :class:`~planner.model.caller.Caller` the options describe."""
    return Caller(entitlements=args.entitlement, purpose=args.purpose,
                  decision_time=parse_time(getattr(args, "decision_time", None)), limits=parse_limits(args.limit))


def policy_from_args(spec: str, args):
    """The policy a spec names, with ``--max-nodes`` applied to policies that search.

    For ``lookahead:D`` it is the search's node cap; for ``bounded`` the node
    budget of each decision (overriding the spec's); for a policy that wraps
    another (``conservative:BASE``), its base's.
    """
    from planner.policies import parse_policy

    policy = parse_policy(spec)
    cap = getattr(args, "max_nodes", None)
    if cap is not None:
        if cap < 1:
            raise PlannerError(f"--max-nodes {cap}: must be a positive integer")
        capped = policy.with_node_cap(cap)
        if capped == policy and policy.with_work(1) != policy:
            raise PlannerError(f"--max-nodes {cap}: {spec} budgets work units, not nodes: give --max-work N")
        policy = capped
    work = getattr(args, "max_work", None)
    if work is not None:
        if not 1 <= work <= 10**15:
            raise PlannerError(f"--max-work {work}: must be an integer from 1 to 10^15")
        policy = policy.with_work(work)
    return policy
