"""Every Python example of docs/integrations.md runs offline, and prints what its comments say."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "integrations.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
RUNNABLE = [b for b in BLOCKS if "print(" in b]


def test_the_page_has_its_three_examples():
    assert len(RUNNABLE) == 3


@pytest.mark.parametrize("block", RUNNABLE, ids=["python", "langchain", "mcp"])
def test_an_example_runs_and_prints_what_it_says(block):
    pytest.importorskip("langchain.agents") if "langchain" in block else None
    pytest.importorskip("mcp") if "mcp" in block else None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, str(DOC), "exec"), {})
    said = [line.split("# ", 1)[1].strip() for line in block.splitlines()
            if line.lstrip().startswith("print(") and "# " in line]
    assert out.getvalue().splitlines() == said
