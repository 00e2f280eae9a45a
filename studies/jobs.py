"""Running a study's jobs: here, in local worker processes, or on a Dask cluster; progress; worker count.

Every study's job is independent of the others (its draws are seeded from its
key), so :func:`map_jobs` may run them in any order and a study sorts the
results by key afterwards: every way of running gives the same tables
(timing columns aside, :func:`deterministic_columns`).
"""

from __future__ import annotations

import concurrent.futures
import math
import os
import sys
import time

from planner.errors import PlannerError
from studies.measure import TIMING_COLUMNS

__all__ = ["map_jobs", "Progress", "deterministic_columns", "default_workers", "CLOCK_COLUMNS"]

#: Every column measured with the clock (left out when comparing runs): the measurement's latency
#: columns, and the depth study's times of V*, of the optimum's table and of a model job's parts.
CLOCK_COLUMNS = TIMING_COLUMNS + ("t_vstar_s", "t_optimal_values_s", "prep_s", "eval_s")


def map_jobs(fn, items, *, workers: int = 1, scheduler=None, on_done=None, key=None) -> list:
    """``[fn(item) for item in items]`` here, in `workers` processes or on a Dask scheduler, in finishing order.

    Parameters
    ----------
    fn : callable
        A module-level function (it travels to worker processes by name).
    items : list
    workers : int
        Local worker processes (1: run here, in order).
    scheduler : str or distributed.Client, optional
        A Dask distributed scheduler address (or a client; needs the ``dask`` extra).
    on_done : callable, optional
        Called with no argument after each result (a progress bar).
    key : callable, optional
        ``key(item)``: the Dask task key of an item.

    >>> map_jobs(abs, [-1, 2, -3])
    [1, 2, 3]
    """
    tick = on_done or (lambda: None)
    results = []
    if scheduler is not None:
        try:
            from distributed import Client, as_completed
        except ImportError:
            raise PlannerError("running on a Dask scheduler needs dask.distributed: "
                               "pip install './studies[dask]'") from None
        own = not hasattr(scheduler, "submit")
        client = Client(scheduler) if own else scheduler
        try:
            futures = client.map(fn, items, pure=False, key=[key(x) for x in items] if key else None)
            for fut in as_completed(futures):
                results.append(fut.result())
                tick()
        finally:
            if own:
                client.close()
    elif workers > 1:
        ctx = None
        if sys.platform.startswith("linux"):
            import multiprocessing

            ctx = multiprocessing.get_context("forkserver")
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            for fut in concurrent.futures.as_completed([pool.submit(fn, x) for x in items]):
                results.append(fut.result())
                tick()
    else:
        for x in items:
            results.append(fn(x))
            tick()
    return results


class Progress:
    """Progress of a run: a tqdm bar on a terminal's stderr; off a terminal a line per tenth of the jobs.

    A long run's log gets a line now and then; a terminal gets the bar (count,
    rate, ETA). Silent when `enabled` is false. `file` is for tests (default:
    ``sys.stderr`` when the bar is made).
    """

    def __init__(self, total: int, enabled: bool = True, file=None):
        from tqdm import tqdm

        stream = sys.stderr if file is None else file
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):  # a closed or a fake stream
            tty = False
        self.total, self.n, self.t0, self.stream = total, 0, time.perf_counter(), stream
        self.lines = enabled and not tty
        self.bar = tqdm(total=total, desc="jobs", unit="job", file=stream, disable=not (enabled and tty),
                        dynamic_ncols=True)

    def update(self):
        self.n += 1
        self.bar.update(1)
        if self.lines and (self.n == self.total or self.n % max(1, self.total // 10) == 0):
            print(f"jobs {self.n}/{self.total}, {time.perf_counter() - self.t0:.0f} s", file=self.stream, flush=True)

    def close(self):
        self.bar.close()


def deterministic_columns(rows) -> list:
    """The rows without wall-clock columns (and NaN as None, which compares equal), for comparing runs.

    >>> deterministic_columns([{"policy": "none", "lat_median_ms": 0.1, "total_loss": 1.0, "v": float("nan")}])
    [{'policy': 'none', 'total_loss': 1.0, 'v': None}]
    """
    def clean(v):
        return None if isinstance(v, float) and math.isnan(v) else v

    return [{k: clean(v) for k, v in r.items() if k not in CLOCK_COLUMNS} for r in rows]


def default_workers() -> int:
    """Local workers by default: the cores this process may use, at most 2."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        n = os.cpu_count() or 1
    return max(1, min(2, n))
