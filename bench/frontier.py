"""The frontier study of ACCEPTED-TOP-K (issue 13): writes bench/results/frontier/.

    python3 bench/frontier.py [--quick] [--out DIR] [--seed N]

The same as ``planner accept frontier``; the method is the docstring of
:mod:`planner.retrieval.frontier`. Needs the ``retrieval`` extra (bm25s) and,
for the plot, the ``bench`` extra (matplotlib).
"""

from __future__ import annotations

import sys

from planner.cli import main

if __name__ == "__main__":
    sys.exit(main(["accept", "frontier", *sys.argv[1:]]))
