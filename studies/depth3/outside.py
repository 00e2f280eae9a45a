"""The outside suite: pystreed's Lomax cost-sensitive UCI datasets as cases of the third edition.

The mapping from a dataset to a domain is ``bench/compare_streed.py``'s
(:func:`domain_dict` there: one proposition per binary feature plus the label,
the rows' empirical joint as the prior, one exact test per feature at its
test cost, one ``predict_cK`` action per class with the misclassification
costs as losses); this module loads that script and calls it, so the study
and the STreeD comparison cannot drift apart. The vendored inputs
(``bench/results/streed/inputs/NAME.json``, CC BY 4.0, UCI; costs from Lomax
2013) are read through its :func:`load_case`.

What the study adds, so that every policy's exact evaluation stays inside
the node caps (:data:`~studies.depth3.design.EVAL_CAP`,
:data:`~studies.depth3.design.EVAL_WORK`), is a *small depth-limited
variant*:

- only the first :data:`FEATURES` binary columns are kept (file order: the
  extractor puts the cheapest attributes first), the rows projected onto
  them (their empirical joint is the prior, as before);
- every test also costs one call (weight 0, so no penalty) and the budget
  allows :data:`CALLS` calls: a plan is a cost-sensitive decision tree of
  depth at most :data:`CALLS`.

Each dataset is run at the ``middle`` (pystreed's example) and ``high``
cost levels (:data:`LEVELS`), so the suite has
``len(DATASETS) * len(LEVELS)`` cases. They are a held-out split
(``outside``) of their own: the map, chosen on the generated selection
seeds, is applied to them as to the shipped domains.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

from planner.errors import PlannerError

__all__ = ["DATASETS", "LEVELS", "FEATURES", "CALLS", "SCRIPT", "streed_module", "outside_domain", "outside_names"]

#: The datasets (``bench/compare_streed.py``'s default comparison set).
DATASETS = ("diabetes", "breast", "heart", "hepatitis", "car", "wine")
#: Misclassification cost levels of the Lomax suite used here.
LEVELS = ("middle", "high")
#: Binary feature columns kept per dataset (2^6 x classes joint states at most).
FEATURES = 6
#: Calls allowed: the depth of the decision trees a plan can be.
CALLS = 3
#: The script whose mapping is reused.
SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "compare_streed.py"


@lru_cache(maxsize=1)
def streed_module():
    """``bench/compare_streed.py`` as a module (it is a script, not a package; importing it runs no solver).

    >>> streed_module().LEVELS
    ('low', 'middle', 'high')
    """
    if not SCRIPT.is_file():
        raise PlannerError(f"the outside suite needs {SCRIPT} (a checkout of the repository)")
    spec = importlib.util.spec_from_file_location("_compare_streed", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def outside_names() -> list:
    """The case names, ``DATASET-LEVEL``, in suite order.

    >>> outside_names()[:2]
    ['diabetes-middle', 'diabetes-high']
    """
    return [f"{d}-{lv}" for d in DATASETS for lv in LEVELS]


def outside_domain(name: str, features: int = FEATURES, calls: int = CALLS) -> dict:
    """The domain dict of outside case `name` (``DATASET-LEVEL``): the first `features` columns, `calls` tests.

    >>> d = outside_domain("diabetes-middle")
    >>> len(d["observations"]), d["budget"]["limits"], sorted(d["actions"])
    (6, {'calls': 3}, ['predict_c0', 'predict_c1'])
    """
    dataset, _, level = name.rpartition("-")
    if dataset not in DATASETS or level not in LEVELS:
        raise PlannerError(f"no outside case {name!r}: expected DATASET-LEVEL with DATASET in {DATASETS} and "
                           f"LEVEL in {LEVELS}")
    mod = streed_module()
    ds = mod.load_case(dataset, level)
    keep = min(int(features), len(ds["costs"]))
    ds = dict(ds, rows=[list(r[:keep]) for r in ds["rows"]], costs=list(ds["costs"][:keep]),
              feature_names=list(ds["feature_names"][:keep]))
    d = mod.domain_dict(ds)
    for o in d["observations"].values():
        o["cost"] = {**o.get("cost", {}), "calls": 1}
    weights = dict((d.get("budget") or {}).get("weights") or {})
    weights["calls"] = 0.0  # calls only limit the depth here; the test costs are the penalty
    d["budget"] = {"limits": {"calls": int(calls)}, "weights": weights}
    d["domain"] = f"{d['domain']}_f{keep}_d{calls}"
    d["description"] += f"; first {keep} binary features, at most {calls} tests (studies/depth3/outside.py)"
    return d
