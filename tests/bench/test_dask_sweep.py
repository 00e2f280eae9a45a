"""The depth study's sweep gives the same tables locally, across processes and on a Dask cluster.

Seeds are derived from case keys and rows are sorted by key, so neither the
worker count nor the order in which cases finish can change a number; only
the wall-clock columns differ (left out of the comparison).
"""

from __future__ import annotations

import pytest

from planner.study.runner import Case, deterministic_columns, run_sweep

CASES = [
    Case(family="prerequisite", instance=2, budget="tight", repeats=1),
    Case(family="unreliable_prereq", instance=0, budget="loose", repeats=1),
    Case(family="complementary", instance=0, budget="medium", repeats=1),
    Case(family="large", instance=2, budget="medium", episodes=40, repeats=1),
]


@pytest.fixture(scope="module")
def local_rows():
    rows, peer_rows, _ = run_sweep(CASES, workers=1, progress=False)
    assert not peer_rows
    return rows


def test_dask_local_cluster_gives_identical_tables(local_rows):
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        rows, _, seconds = run_sweep(CASES[::-1], scheduler=cluster.scheduler_address, progress=False)
    assert set(seconds) == {c.key for c in CASES}
    assert deterministic_columns(rows) == deterministic_columns(local_rows)
    # the timing columns exist in both, and are the only ones left out
    assert set(rows[0]) == set(local_rows[0])
    assert "lat_median_ms" in rows[0]


def test_two_local_processes_give_identical_tables(local_rows):
    rows, _, _ = run_sweep(CASES[::-1], workers=2, progress=False)
    assert deterministic_columns(rows) == deterministic_columns(local_rows)
