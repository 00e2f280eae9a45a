"""``planner bench generate``: a domain file that loads, or one line and exit 2."""

from __future__ import annotations

import pytest

import planner
from planner.cli import main


def test_generated_file_loads_and_certifies(tmp_path, capsys):
    out = tmp_path / "g12.yaml"
    assert main(["bench", "generate", "--observations", "12", "--chain", "3", "--out", str(out)]) == 0
    d = planner.load_domain(out)
    assert len(d.observations) == 12
    assert main(["explain", str(out)]) == 0
    assert "planning: certified optimum 4.412" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--observations", "0"], "--observations: must be between 1 and 1000, got 0"),
    (["--observations", "100000"], "--observations: must be between 1 and 1000, got 100000"),
    (["--observations", "5", "--states", "6"], "--states: must be a power of two between 4 and 1,000,000, got 6"),
    (["--observations", "5", "--chain", "9"], "--chain: must be between 0 and 4, got 9"),
    (["--observations", "300"], "the generated domain would not load: "),
])
def test_bad_generate_arguments_are_one_line_and_exit_2(capsys, args, message):
    assert main(["bench", "generate", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
