"""Receipts are read under a 16 MiB cap, and replay stops at the first mismatch without checking the rest."""

from __future__ import annotations

import copy
import json

import pytest

import planner
from planner.cli import main
from planner.errors import ReceiptError
from planner.session.receipt import MAX_RECEIPT_BYTES, read_receipt
from planner.session.replay import replay

MESSAGE = {"manager_message": lambda: "unclear"}


def _receipt(payment):
    s = planner.Session(payment)
    s.run({"approval_registry": lambda: "pending", **MESSAGE})
    return s.receipt()


def test_the_cap_is_16_mib_and_the_line_says_so(tmp_path):
    assert MAX_RECEIPT_BYTES == 16 * 2**20
    path = tmp_path / "big.json"
    with open(path, "wb") as f:  # sparse: refused by its size, nothing read
        f.truncate(20 * 2**20)
    with pytest.raises(ReceiptError) as e:
        read_receipt(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(path))
    assert "20,971,520 bytes, larger than the 16 MiB" in msg


def test_a_receipt_just_under_the_cap_is_read(payment, tmp_path):
    r = _receipt(payment)
    text = json.dumps(r)
    path = tmp_path / "r.json"
    path.write_text(text + " " * (MAX_RECEIPT_BYTES - len(text)))  # exactly the cap
    assert read_receipt(path) == r


def test_replay_reports_the_first_mismatch_without_checking_later_steps(payment, tmp_path, capsys):
    r = _receipt(payment)
    step = r["steps"][0]
    edited = copy.deepcopy(step)
    edited["before"]["action"] = "release"
    broken = copy.deepcopy(step)
    del broken["after"]  # malformed: a full check would refuse the file for this
    r["steps"] = [edited, copy.deepcopy(step), broken]
    assert replay(r, payment) == (False, "step 1 before: action 'hold', receipt has 'release'")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(r))
    assert main(["replay", str(path), "payment_release"]) == 1
    assert capsys.readouterr().out.strip() == "step 1 before: action 'hold', receipt has 'release'"
    with pytest.raises(ReceiptError, match=r"steps\[2\]: missing \"after\""):
        read_receipt(path)  # the full check still refuses it


def test_a_malformed_step_reached_by_replay_is_one_line_naming_its_path(payment):
    r = _receipt(payment)
    r["steps"].append(copy.deepcopy(r["steps"][0]))
    r["steps"][1]["candidates"] = "none"
    with pytest.raises(ReceiptError, match=r"^steps\[1\]\.candidates: expected array, got string$"):
        replay(r, payment)


def test_an_edited_domain_name_or_policy_parameter_never_replays_as_a_match(payment):
    d = planner.load_domain("identity_registry")
    s = planner.Session(d)
    s.end()
    r = s.receipt()
    assert replay(r, d)[0]
    params = r["policy"]["params"]
    key = next(k for k, v in params.items() if isinstance(v, float) and not isinstance(v, bool))
    edited = copy.deepcopy(r)
    edited["policy"]["params"][key] = params[key] * (1 + 1e-12) + 1e-15  # below VALUE_TOL, still an edit
    ok, msg = replay(edited, d)
    assert not ok and msg.startswith(f"policy.params.{key} ")
    edited = copy.deepcopy(r)
    edited["domain"]["name"] = "identity_registry2"
    assert replay(edited, d) == (False, "domain name identity_registry, receipt says identity_registry2")
