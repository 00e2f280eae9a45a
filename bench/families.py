"""Domain families of the depth-comparison study (issue 6): a thin re-export.

The generator lives in the package, :mod:`planner.study.families`, so that
``planner bench depth`` works from a plain install; this file keeps the path
the issue names. Write a family's domains out as YAML, for example::

    python bench/families.py prerequisite 3 --out /tmp/prereq   # 3 instances x 3 budget levels
    planner validate /tmp/prereq/*.yaml
"""

from __future__ import annotations

import argparse
from pathlib import Path

from planner.study.families import *  # noqa: F401,F403 - the re-export is the point
from planner.study.families import BUDGET_LEVELS, FAMILIES, __all__, family_domain, to_yaml  # noqa: F401


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="write generated domains of one family as YAML files")
    p.add_argument("family", choices=list(FAMILIES))
    p.add_argument("instances", type=int)
    p.add_argument("--out", default=".", help="output directory")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for i in range(args.instances):
        for b in BUDGET_LEVELS:
            data = family_domain(args.family, i, b)
            path = out / f"{data['domain']}.yaml"
            path.write_text(to_yaml(data), encoding="utf-8")
            print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
