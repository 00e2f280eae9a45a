"""The depth-comparison study: when does option value justify planning depth?

- :mod:`studies.depth.design`: seeds, models, the frontier's grid; the
  policies compared are the registry's (each class's ``study``: spec ->
  groups);
- :mod:`studies.depth.run`: the jobs (case, peer, model, frontier), the run,
  its outputs swapped in as one set;
- :mod:`studies.depth.report`: the report, the regime map and the plots, from
  the rows (and again from a results folder alone).

``planner bench depth`` runs it; ``studies/results/depth/`` is the committed run.
"""

__all__ = ["design", "run", "report"]
