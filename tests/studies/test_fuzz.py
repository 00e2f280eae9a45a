"""A seeded fuzz of the loader, compiler and first session step (issue 10), at a size that fits CI.

The mutator and the checks are those of :mod:`studies.fuzz_domains` (which runs
10,000 mutants and commits its counts in ``studies/results/fuzz/``); here a few
hundred mutants of the shipped domains must give no exception other than a
:class:`planner.errors.PlannerError`, every rejection one printable line, and
the CLI sample one line with exit status 2. Speed is measured there, not here.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest

from conftest import ROOT
from studies import fuzz_domains

#: The studies' tests run the studies (seconds to minutes each): CI runs them, the quick loop does not.
pytestmark = pytest.mark.slow

#: Mutants in the suite (the bench runs 10,000), and their seed.
N_MUTANTS = 300
SEED = 20260105


@pytest.fixture(scope="module")
def counts():
    return fuzz_domains.fuzz(N_MUTANTS, SEED, cli_every=20)


def test_no_exception_but_planner_errors_and_every_rejection_is_one_line(counts):
    assert counts["mutations_tried"] == N_MUTANTS
    bad = [f for f in counts["failure_examples"] if f["kind"] != "time"]
    assert not bad, bad[:3]
    assert counts["uncaught_exceptions"] == 0 and counts["hangs"] == 0
    assert counts["multi_line_or_long_messages"] == 0


def test_the_fuzz_exercises_acceptance_and_many_kinds_of_rejection(counts):
    assert counts["accepted"] + counts["rejected"] + counts["failures"] == N_MUTANTS
    assert counts["accepted"] >= N_MUTANTS // 20  # some mutants compile and take a session step
    assert len(counts["rejected_by_reason"]) >= 20
    assert {"parse", "load"} <= set(counts["rejected_by_stage"])
    assert set(counts["mutants_by_format"]) == {"yaml", "json", "dict"}


def test_the_cli_sample_is_one_line_with_exit_2(counts):
    assert counts["cli"]["checked"] >= N_MUTANTS // 20 - 1
    assert counts["cli"]["failures"] == []


def test_mutants_are_reproducible():
    a, b = fuzz_domains.make_mutant(3, 17), fuzz_domains.make_mutant(3, 17)
    assert a.describe() == b.describe() and a.text == b.text
    sources = Counter(fuzz_domains.make_mutant(3, i).source for i in range(60))
    assert len(sources) >= 10 and sources.most_common(1)[0][1] < 15  # every shipped domain gets its turn


@pytest.fixture(scope="module")
def rejected_texts():
    """The first rejected text mutants of the seed."""
    found = []
    for i in range(200):
        m = fuzz_domains.make_mutant(SEED, i)
        if m.text is not None and fuzz_domains.run_mutant(m)["outcome"] == "rejected":
            found.append(m)
        if len(found) == 3:
            return found
    return found


@pytest.mark.parametrize("index", [0, 1, 2])
def test_rejected_mutants_through_a_subprocess(index, rejected_texts, tmp_path):
    m = rejected_texts[index]
    path = tmp_path / f"mutant.{'json' if m.fmt == 'json' else 'yaml'}"
    path.write_text(m.text, encoding="utf-8", errors="surrogatepass")
    proc = subprocess.run([sys.executable, "-m", "planner.cli", "run", str(path), "--seed", "1"],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2, m.describe()
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("planner: error: "), proc.stderr[:500]
