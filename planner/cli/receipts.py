"""``planner replay`` and ``planner redact``: receipts after the fact.

A receipt file is read and checked against its schema first
(:func:`planner.session.receipt.read_receipt`); every problem with it is one line
``planner: error: <file>: <what, with the JSON path>``, exit status 2. Replay
prints ``match: ...`` (exit 0) or the first mismatch (exit 1).
"""

from __future__ import annotations

import json

from planner.model.domain import load_domain
from planner.errors import ReceiptError
from planner.session.receipt import quote, read_receipt
from planner.session.redact import redact_receipt
from planner.session.replay import replay

__all__ = ["register"]


def _named(path) -> str:
    """The file as the error line names it (quoted when it holds a line break or another control character)."""
    text = str(path)
    return text if text.isprintable() else quote(text)


def cmd_replay(args) -> int:
    domain = load_domain(args.domain)
    receipt = read_receipt(args.receipt, steps=False)  # replay checks each step when it reaches it
    try:
        ok, message = replay(receipt, domain)
    except ReceiptError as e:  # the library names the JSON path; the file is named here
        raise ReceiptError(f"{_named(args.receipt)}: {e}") from None
    print(message)
    return 0 if ok else 1


def cmd_redact(args) -> int:
    domain = load_domain(args.domain)
    receipt = read_receipt(args.receipt)
    try:
        red = redact_receipt(receipt, domain, args.entitlement)
    except ReceiptError as e:
        raise ReceiptError(f"{_named(args.receipt)}: {e}") from None
    print(json.dumps(red, indent=2))
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
                   help="an entitlement the consumer holds (repeatable); observations needing any other are hidden")
    p.set_defaults(func=cmd_redact)
