"""``planner warm``: from an empty numba cache, a large domain says it compiles; after warm, nothing compiles."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lookahead.jit import COMPILE_MESSAGE, COMPILE_SECONDS
from planner.tiers import KERNEL_MODULES


def _cli(*args, cache):
    return subprocess.run([sys.executable, "-m", "planner.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "NUMBA_CACHE_DIR": str(cache)})


@pytest.mark.slow
def test_warm_compiles_every_kernel_ahead_of_time(tmp_path):
    cache = tmp_path / "cache"
    big = tmp_path / "big.yaml"
    assert _cli("bench", "generate", "--observations", "12", "--states", "8", "--chain", "3", "--seed", "1",
                "--out", str(big), cache=cache).returncode == 0
    first = _cli("explain", str(big), cache=cache)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [COMPILE_MESSAGE.format(seconds=COMPILE_SECONDS)]

    warm = _cli("warm", cache=cache)
    assert warm.returncode == 0, warm.stderr
    lines = warm.stdout.splitlines()
    timed = [line.split() for line in lines if line.startswith(tuple(m + "." for m in KERNEL_MODULES))]
    assert timed and all(float(t[1]) >= 0 and t[2] == "s" for t in timed)
    assert any(line.startswith("total ") and "of CPU compiling" in line for line in lines)
    # one signature each (every signature is a compile of its own), but for the two known cases:
    # _grown rehashes two record types; _back_up takes a literal index once inside bounded._search;
    # the core helpers _status_into and _facts_into get int64 outcome arrays from the depth-first search
    # and int16 ones from the bounded search (bench/results/compile.md)
    twice = {t[0] for t in timed if "signatures)" in " ".join(t)}
    assert twice <= {"lookahead.search._grown", "lookahead.bounded._back_up", "lookahead.core._status_into",
                     "lookahead.core._facts_into"}, twice
    assert "kernels already in numba's cache" in warm.stdout  # the ones the explain compiled
    assert lines[-1] == f"cache: {lines[-1].split(': ', 1)[1]}" and str(cache) in lines[-1]

    again = _cli("explain", str(big), cache=cache)
    assert again.returncode == 0 and again.stderr == ""
    assert again.stdout == first.stdout


@pytest.mark.slow
def test_warm_refuses_an_unwritable_cache_in_one_line(tmp_path):
    cache = tmp_path / "ro"
    cache.mkdir()
    cache.chmod(0o500)
    if os.access(cache, os.W_OK):  # root ignores the permission bits
        pytest.skip("this user can write anywhere")
    r = _cli("warm", cache=cache)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "NUMBA_CACHE_DIR" in r.stderr
