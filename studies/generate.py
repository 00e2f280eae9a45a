"""Write generated domains out as YAML: a family of :mod:`studies.families`, or one benchmark domain.

For example::

    python3 -m studies.generate prerequisite 3 --out /tmp/prereq   # 3 instances x 3 budget levels
    planner validate /tmp/prereq/*.yaml

or print one of the lookahead benchmark's domains
(:func:`planner.generators.benchmark_domain`) as YAML, for ``planner run``
or ``planner explain``::

    python3 -m studies.generate benchmark 16 64 --seed 3 > /tmp/random.yaml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from planner.generators import benchmark_domain
from studies.families import BUDGET_LEVELS, FAMILIES, family_domain, to_yaml

__all__ = ["main"]


def _benchmark(argv) -> int:
    p = argparse.ArgumentParser(prog="python3 -m studies.generate benchmark",
                                description="print one of the lookahead benchmark's domains as YAML")
    p.add_argument("n_obs", type=int)
    p.add_argument("n_states", type=int, help="a power of two >= 4")
    p.add_argument("--seed", type=int, default=1, help="default 1, the benchmark's")
    p.add_argument("--precondition-rate", type=float, default=0.25)
    args = p.parse_args(argv)
    from planner.model.domain import Domain

    data = benchmark_domain(args.n_obs, args.n_states, seed=args.seed, precondition_rate=args.precondition_rate)
    Domain.from_dict(data)  # validate
    sys.stdout.write(to_yaml(data))
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["benchmark"]:
        return _benchmark(argv[1:])
    p = argparse.ArgumentParser(description="write generated domains of one family as YAML files "
                                            "(or: benchmark N_OBS N_STATES [--seed S] prints a benchmark domain)")
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
