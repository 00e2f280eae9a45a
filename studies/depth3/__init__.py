"""The depth study, third edition (issue 24): a policy-selection map, chosen and tested out of sample.

- :mod:`studies.depth3.design`: the splits (selection and test seeds, the
  shipped domains), the prices, the node-to-time conversion and the caps;
- :mod:`studies.depth3.run`: the case jobs (every study spec on the same
  cases, exact evaluation under node and work caps, no clock), the run;
- :mod:`studies.depth3.select`: net gains at a price, the selection map,
  its out-of-sample regret, coverage and structural reweighting;
- :mod:`studies.depth3.report`: the report and the map's PNG, from a
  results folder alone (``python3 -m studies.depth3.report DIR``);
- :mod:`studies.depth3.outside`: the outside suite (pystreed's cost-sensitive
  UCI datasets through ``bench/compare_streed.py``'s mapping);
- :mod:`studies.depth3.pouct`: the POUCT peer's rows, budgets matched to
  ``bounded``'s counted work.

``planner bench depth`` runs it (``--edition 2``: the second edition).

The second edition (:mod:`studies.depth`) is unchanged; its case generator
(:func:`studies.wide.wide_instance`), its V* (:func:`studies.depth.run.vstar`)
and its exact measurement (:func:`studies.measure.measure_exact`) are reused.
"""

__all__ = ["design", "run", "select", "report", "outside", "pouct"]
