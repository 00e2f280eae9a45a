"""The studies of evidence-planner: research beside the product, not in its wheel.

Each study asks a question of the planner (``planner``) on generated or
shipped domains and commits its report under ``studies/results/``:

- :mod:`studies.depth`: when does option value justify planning depth? (``planner bench depth``);
- :mod:`studies.calibration`: likelihoods estimated from logged sessions, and what they cost;
- :mod:`studies.model_error`: does depth amplify likelihood error?
- :mod:`studies.nonmyopic_share`: how common is non-myopic value on the wide cases?
- :mod:`studies.frontier`: what ACCEPTED-TOP-K buys over top-k (``planner accept frontier``);
- :mod:`studies.fuzz_domains`: the loader against 10,000 seeded hostile mutants.

Their shared parts: :mod:`studies.families` and :mod:`studies.wide` (generators
over named knobs), :mod:`studies.measure` (exact and Monte Carlo measurement),
:mod:`studies.optimal` (V*), :mod:`studies.peer` (pomdp_py's POUCT),
:mod:`studies.stats`, :mod:`studies.distort` (wrong models),
:mod:`studies.jobs` (running jobs), :mod:`studies.tables` (CSV).

From a checkout the package imports as it is (run ``python3 -m studies.X`` from
the repository root); ``pip install ./studies`` installs it beside ``planner``.
"""
