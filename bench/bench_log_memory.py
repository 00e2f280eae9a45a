"""Peak memory of the commands that read a whole outcome log, before and after streaming -> bench/results/log_memory.md.

For logs of ``--sizes`` sessions (default 2,000 and 20,000, written with
``planner simulate-log payment_release`` and the default policy, half of them
resolved), it runs ``planner log show``, ``planner log show --json`` and
``planner calibrate payment_release`` as fresh processes (output to the null
device), once with the code of ``--before`` (a checkout whose
``python3 -m planner.cli`` is the code before streaming, by default
``/work/main``) and once with this checkout's, side by side in the same run,
and reports each process's peak resident set size (``os.wait4``'s rusage,
``ru_maxrss``: that child alone) with its CPU seconds.

Nothing here is timed against a cap: the figures are what one run measured on
this machine, whose header states the load average.

    python3 bench/bench_log_memory.py                       # ~5 min on 2 busy cores
    python3 bench/bench_log_memory.py --sizes 500 2000 --out /tmp/log_memory.md
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
COMMANDS = {
    "log show": ["log", "show", "{log}"],
    "log show --json": ["log", "show", "{log}", "--json"],
    "calibrate": ["calibrate", "payment_release", "{log}", "--out", "{out}"],
}


def measure(code: Path, args: list) -> tuple:
    """``(peak RSS MiB, CPU s, exit status)`` of ``python3 -m planner.cli ARGS`` run from `code`."""
    # -B: nothing is written into the other checkout (no __pycache__)
    p = subprocess.Popen([sys.executable, "-B", "-m", "planner.cli", *args], cwd=code,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)  # this child's own rusage (RUSAGE_CHILDREN would mix runs)
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if p.returncode != 0:
        raise SystemExit(f"{code}: planner {' '.join(args)} exited {p.returncode}: {err.strip()[-300:]}")
    return usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, p.returncode


def make_log(path: Path, n: int, seed: int) -> None:
    subprocess.run([sys.executable, "-m", "planner.cli", "simulate-log", "payment_release", "--log", str(path),
                    "--sessions", str(n), "--resolve", "0.5", "--seed", str(seed), "--no-progress"],
                   cwd=HERE, check=True, stdout=subprocess.DEVNULL)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000], metavar="N")
    ap.add_argument("--before", type=Path, default=Path("/work/main"),
                    help="a checkout with the code before streaming (default /work/main)")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--out", type=Path, default=HERE / "bench/results/log_memory.md")
    args = ap.parse_args(argv)
    if not (args.before / "planner" / "cli").is_dir():
        raise SystemExit(f"--before {args.before}: no planner/cli there")
    load = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            log = Path(tmp) / f"log{n}.db"
            make_log(log, n, args.seed)
            size = log.stat().st_size / 2**20
            for name, template in COMMANDS.items():
                figures = {}
                for label, code in (("before", args.before), ("after", HERE)):
                    cmd = [a.format(log=log, out=Path(tmp) / f"{label}.yaml") for a in template]
                    figures[label] = measure(code, cmd)
                rows.append((n, size, name, figures["before"], figures["after"]))
                b, a = figures["before"][0], figures["after"][0]
                print(f"{n:>7,} sessions  {name:<16} before {b:7.0f} MiB  after {a:6.0f} MiB", flush=True)
    lines = [
        "# Peak memory of the commands that read a whole outcome log",
        "",
        f"`python3 bench/bench_log_memory.py --sizes {' '.join(map(str, args.sizes))} --seed {args.seed}`, "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}, {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {load[0]:.2f} at the start.",
        "",
        "Each figure is one fresh process's peak resident set size (`ru_maxrss` of `os.wait4`); "
        f"*before* runs `python3 -m planner.cli` from `{args.before}` (every session, receipts included, "
        "listed into memory), *after* from this checkout (the log streamed in chunks of "
        "`planner.io.store.READ_CHUNK` sessions). Logs from `planner simulate-log payment_release` "
        "(default policy, half resolved). CPU seconds are user + system of the same process.",
        "",
        "| sessions | log file | command | before: peak RSS | after: peak RSS | before / after | "
        "CPU s before | CPU s after |",
        "|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for n, size, name, (bm, bc, _), (am, ac, _) in rows:
        lines.append(f"| {n:,} | {size:.1f} MiB | `{name}` | {bm:.0f} MiB | {am:.0f} MiB | {bm / am:.1f} | "
                     f"{bc:.1f} | {ac:.1f} |")
    lines += ["", "Flat means: the *after* column barely moves from the smaller log to the larger one; what is "
              "left is the interpreter, numpy, the domain and (for calibrate) a few numbers per acquisition.", ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
