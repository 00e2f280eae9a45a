"""Running a study's jobs: one way to map them, one progress report, the default worker count."""

from __future__ import annotations

import io

import pytest

from studies.jobs import Progress, default_workers, deterministic_columns, map_jobs

#: The studies' tests run the studies (seconds to minutes each): CI runs them, the quick loop does not.
pytestmark = pytest.mark.slow


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_has_rate_and_eta_on_a_terminal():
    term = _Terminal()
    bar = Progress(3, True, file=term)
    for _ in range(3):
        bar.update()
    bar.close()
    out = term.getvalue()
    assert "3/3" in out
    assert "job/s" in out or "s/job" in out  # the rate
    assert "<" in out  # elapsed<remaining: the ETA


def test_progress_off_a_terminal_is_a_line_per_tenth():
    log = io.StringIO()
    bar = Progress(20, True, file=log)
    for _ in range(20):
        bar.update()
    bar.close()
    lines = log.getvalue().splitlines()
    assert len(lines) == 10 and lines[-1].startswith("jobs 20/20, ")


@pytest.mark.parametrize("stream", [io.StringIO(), _Terminal()])
def test_progress_is_silent_when_disabled(stream):
    bar = Progress(2, False, file=stream)
    bar.update()
    bar.update()
    bar.close()
    assert stream.getvalue() == ""


def test_map_jobs_keeps_every_result_and_the_workers_are_at_most_two():
    assert sorted(map_jobs(abs, [-1, 2, -3], workers=2)) == [1, 2, 3]
    assert 1 <= default_workers() <= 2
    assert deterministic_columns([{"lat_p95_ms": 3.0, "x": float("nan")}]) == [{"x": None}]
