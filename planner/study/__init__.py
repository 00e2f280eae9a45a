"""The depth-comparison study (issue 6): when does option value justify planning depth?

Modules, one topic each:

- :mod:`planner.study.families`: a seeded generator of domain files over named
  knobs (prerequisite chains, complementary signals, loss asymmetry, source
  heterogeneity, duplicated lineage, budget tightness, sizes) and the named
  families of the study;
- :mod:`planner.study.measure`: exact measurement of one policy on one domain
  (through :func:`planner.evaluate.evaluate_policy`, plus an independent audit
  of every acquisition path) and Monte Carlo replay with common random numbers;
- :mod:`planner.study.optimal`: the full-depth (optimal) policy from one
  memoised search, and V* at any node for route regret and stop quality;
- :mod:`planner.study.peer`: an adapter that runs pomdp_py's POUCT on the same
  domains (optional);
- :mod:`planner.study.runner`: cases, the sweep across processes or a Dask
  cluster, rows sorted by case key;
- :mod:`planner.study.report`: CSV, the markdown report, the regime map, plots.

``planner bench depth`` (:mod:`planner.benchcli`) runs it.
"""

__all__ = ["families", "measure", "optimal", "peer", "runner", "report"]
