"""``planner replay`` and ``planner redact``: receipts after the fact."""

from __future__ import annotations

import json

from planner.cli.common import read_json
from planner.domain import load_domain
from planner.redact import redact_receipt
from planner.replay import replay

__all__ = ["register"]


def cmd_replay(args) -> int:
    receipt = read_json(args.receipt)
    ok, message = replay(receipt, load_domain(args.domain))
    print(message)
    return 0 if ok else 1


def cmd_redact(args) -> int:
    receipt = read_json(args.receipt)
    print(json.dumps(redact_receipt(receipt, load_domain(args.domain), args.entitlement), indent=2))
    return 0


def register(sub) -> None:
    p = sub.add_parser("replay", help="re-derive every choice of a receipt against its domain")
    p.add_argument("receipt", help="a receipt file (planner run --receipt FILE, or --json)")
    p.add_argument("domain", help="the domain file the receipt was made on")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("redact", help="render a receipt for a consumer with the given entitlements")
    p.add_argument("receipt", help="a receipt file")
    p.add_argument("domain", help="the domain file the receipt was made on")
    p.add_argument("--entitlement", action="append", default=[], metavar="E",
                   help="an entitlement the consumer holds (repeatable)")
    p.set_defaults(func=cmd_redact)
