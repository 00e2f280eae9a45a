"""The depth study's jobs give the same tables here, across processes and on a Dask cluster.

Seeds are derived from job keys and rows are sorted by key, so neither the
worker count nor the order in which jobs finish can change a number; only
the wall-clock columns differ (left out of the comparison).
"""

from __future__ import annotations

import pytest

from studies.depth.run import Job, run_jobs
from studies.jobs import deterministic_columns

pytestmark = pytest.mark.slow

JOBS = [Job("case", 0, 3), Job("model", 0, 3, ("scaled", 2.0, 0, None)), Job("case", 1, 2)]


@pytest.fixture(scope="module")
def local():
    return run_jobs(JOBS, workers=1, progress=False)


def test_dask_local_cluster_gives_identical_tables(local):
    pytest.importorskip("distributed", reason="the dask extra of the studies: pip install './studies[dask]'")
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        res = run_jobs(JOBS[::-1], scheduler=cluster.scheduler_address, progress=False)
    assert set(res["seconds"]) == {j.key for j in JOBS}
    for kind in ("case", "model"):
        assert deterministic_columns(res[kind]) == deterministic_columns(local[kind])
    # the timing columns exist in both, and are the only ones left out
    assert set(res["case"][0]) == set(local["case"][0]) and "lat_median_ms" in res["case"][0]


def test_two_local_processes_give_identical_tables(local):
    res = run_jobs(JOBS[::-1], workers=2, progress=False)
    for kind in ("case", "model"):
        assert deterministic_columns(res[kind]) == deterministic_columns(local[kind])
