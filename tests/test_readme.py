"""The README's demo block is what the demo command prints (up to its '...')."""

from __future__ import annotations

import re
from pathlib import Path

from planner.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_demo_is_the_demo_output(capsys, monkeypatch):
    text = (ROOT / "README.md").read_text()
    m = re.search(r"```text\n\$ (planner run [^\n]+)\n(.*?)```", text, re.S)
    assert m, "the README has no demo block"
    command, shown = m.group(1), m.group(2).rstrip("\n").splitlines()
    assert shown[-1].strip() == "..."
    shown = shown[:-1]
    # the install line runs the same command
    assert command in text.split("```bash\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    assert main(command.split()[1:]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[: len(shown)] == shown
