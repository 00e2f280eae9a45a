"""Compile time of the kernels, and cold-start times of the CLI, in one run -> bench/results/compile.md.

What it measures, each in fresh processes (``subprocess``), so nothing is shared
but numba's on-disk cache where the row says so:

- **per-kernel compile time**: ``planner.warm.warm()`` from an empty
  ``NUMBA_CACHE_DIR`` (CPU seconds numba spent on each kernel, its callees
  excluded; the number of signatures each one compiled);
- **cold start of the seed case**: ``planner run payment_release --world
  approval=pending`` with an empty cache folder (a new one each run) and with
  the cache ``planner warm`` filled; wall and CPU seconds of the whole process,
  and whether it printed the compile line;
- **a large domain's first run**: ``planner explain`` on a generated 8-state,
  12-observation domain with a 3-step prerequisite chain, from an empty cache
  (the one compile line, then the compile) and from the warm cache;
- **import time**: ``python -c "import planner.cli"`` (what every command pays);
- **start-up, side by side** (``--baseline PATH``, another checkout such as main): the seed case as
  whole processes, this tree and the baseline alternating run by run, each command's process with
  the numba cache the seed case leaves untouched (warm) and with a new empty cache folder per run (a
  first run), plus ``import planner.cli`` and the floor (``python -c pass`` and the seed case's
  dependencies alone). Both with the bytecode cache a wheel install has (``PYTHONPYCACHEPREFIX`` in a
  temporary folder, so nothing is written into either tree) and without one
  (``PYTHONDONTWRITEBYTECODE=1``: every module compiled from source in every process);
- **the Python tier's speed**, which sets ``lookahead.jit.PYTHON_WORK``: one
  depth-limited search in the Python tier on generated domains, in
  state-operations (nodes x S x (A + Y x O)) per CPU second.

The machine is shared: every row gives CPU seconds beside the wall time, the
median of ``--repeats`` runs (min in brackets), and the header the load average.

    python3 bench/bench_compile.py              # ~5-10 min on 2 busy cores
    python3 bench/bench_compile.py --repeats 3 --out /tmp/compile.md
    python3 bench/bench_compile.py --baseline ../main --only startup --repeats 10   # ~2 min: that section alone
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from lookahead.jit import COMPILE_SECONDS, PYTHON_WORK  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "compile.md"
SEED_RUN = ["run", "payment_release", "--world", "approval=pending"]

_WARM_CHILD = r"""
import json, sys
from planner.warm import warm
r = warm()
json.dump({"kernels": [[k.name, k.seconds, k.signatures] for k in r.kernels], "total": r.total, "wall": r.wall,
           "loaded": list(r.loaded)}, sys.stdout)
"""

_SPEED_CHILD = r"""
import json, sys, time
import planner
from lookahead import jit
from planner.generators import benchmark_domain
out = []
for n_obs, n_states, depth in [(6, 4, 3), (8, 8, 2), (12, 8, 2)]:
    node = planner.Session(planner.Domain.from_dict(benchmark_domain(n_obs, n_states, seed=1))).node
    c = node.compiled
    per = c.n_states * (c.loss.shape[0] + c.lik.shape[1] * len(c.obs_names))
    t = time.process_time()
    with jit.python_only():
        r = node.search(depth)
    cpu = time.process_time() - t
    out.append([n_obs, n_states, depth, r.nodes, r.nodes * per, cpu])
json.dump(out, sys.stdout)
"""


def _env(cache: str | None, root: Path = ROOT, pycache: str | None = None) -> dict:
    """The child's environment: `root` first on the path, numba's cache in `cache`, bytecode in `pycache`.

    `pycache` None keeps the environment's bytecode setting; "" writes none (every module compiled from
    source); a folder keeps the bytecode there (``PYTHONPYCACHEPREFIX``), never beside the sources.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    if pycache == "":
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    elif pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
    env["PYTHONPATH"] = str(root) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    return env


def timed(argv: list, cache: str | None, root: Path = ROOT, pycache: str | None = None) -> dict:
    """One child process: wall and CPU seconds (user + system), exit code, stdout and stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=root, env=_env(cache, root, pycache), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "code": p.returncode, "stdout": p.stdout, "stderr": p.stderr}


def cli(args: list, cache: str | None) -> dict:
    return timed([sys.executable, "-m", "planner.cli", *args], cache)


def _summary(runs: list, key: str) -> str:
    xs = [r[key] for r in runs]
    return f"{statistics.median(xs):.2f} [{min(xs):.2f}]"


def _compile_line(r: dict) -> str:
    return "yes" if "compiling search kernels" in r["stderr"] else "no"


#: The seed case's own dependencies, imported alone: below this no command that reads a domain can go.
_DEPS = "import numpy, yaml, jsonschema, attrs"
STARTUP_HEADING = "## Start-up, side by side"


def _revision(root: Path) -> str:
    def git(*a):
        return subprocess.run(["git", "-C", str(root), *a], capture_output=True, text=True).stdout.strip()
    rev = git("rev-parse", "--short", "HEAD") or "?"
    return rev + (" + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def startup(repeats: int, baseline: Path | None, work: Path) -> list:
    """The start-up section (markdown lines): the seed case, this tree against `baseline`, run by run.

    Each repeat runs every case in both trees, the order of the trees alternating from one repeat to
    the next, so that a change of load on the shared machine falls on both.
    """
    load = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    trees = [("this tree", ROOT)] + ([("baseline", baseline.resolve())] if baseline else [])
    modes = [("yes", str(work / "pyc")), ("no", "")]
    seed = [sys.executable, "-m", "planner.cli", *SEED_RUN]
    runs: dict = {}
    left: list = []  # files the seed case left in its numba cache folders

    def run(mode, case, k, root, pyc, i):
        if case == "seed, numba cache as the seed case leaves it (warm)":
            cache = work / f"numba-{k}"
            cache.mkdir(exist_ok=True)
            r = timed(seed, str(cache), root, pyc)
            left.append(len(list(cache.rglob("*"))))
        elif case == "seed, new empty numba cache folder (first run)":
            cache = work / f"numba-empty-{k}-{mode}-{i}"
            cache.mkdir()
            r = timed(seed, str(cache), root, pyc)
            left.append(len(list(cache.rglob("*"))))
        else:
            r = timed([sys.executable, "-c", "import planner.cli"], str(work / f"numba-{k}"), root, pyc)
        if r["code"] != 0:
            raise SystemExit(f"{root}: {case} failed:\n{r['stderr']}")
        runs.setdefault((mode, case, k), []).append(r)

    cases = ("seed, numba cache as the seed case leaves it (warm)", "seed, new empty numba cache folder (first run)",
             "`python -c 'import planner.cli'`")
    for k, root in trees:  # not timed: fills the bytecode cache, as installing a wheel does
        timed(seed, str(work / f"numba-{k}"), root, modes[0][1])
    for i in range(repeats):
        order = trees if i % 2 == 0 else trees[::-1]
        for mode, pyc in modes:
            for case in cases:
                for k, root in order:
                    run(mode, case, k, root, pyc, i)
            for case, code in (("floor: `python -c pass`", "pass"), (f"floor: `python -c '{_DEPS}'`", _DEPS)):
                r = timed([sys.executable, "-c", code], None, ROOT, pyc)
                runs.setdefault((mode, case, "this tree"), []).append(r)
    outputs = {r["stdout"] for (m, c, k), rs in runs.items() if c.startswith("seed") for r in rs}

    def med(rs, key):
        return statistics.median(r[key] for r in rs)

    names = " and ".join(f"{k} ({root}, {_revision(root)})" for k, root in trees)
    lines = [
        STARTUP_HEADING,
        "",
        f"`python3 bench/bench_compile.py{' --baseline ' + str(baseline) if baseline else ''} --only startup "
        f"--repeats {repeats}`, {started}; load average at the start {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}. "
        f"The seed case `planner run {' '.join(SEED_RUN[1:])}` as whole processes (`python -m planner.cli`), "
        f"{names}, alternating run by run; {repeats} runs of each row, median [min] seconds; CPU = user + "
        "system of the child; ratio = baseline / this tree (of the medians). \"bytecode cache\" yes: the "
        "compiled modules a wheel install has (`PYTHONPYCACHEPREFIX` in a temporary folder, filled by one "
        "untimed run); no: `PYTHONDONTWRITEBYTECODE=1`, every module compiled from source in every process.",
        "",
    ]
    if len(trees) == 2:
        lines += ["| bytecode cache | case | this tree wall s | baseline wall s | wall ratio | this tree CPU s | "
                  "baseline CPU s | CPU ratio |", "|---|---|---|---|---|---|---|---|"]
    else:
        lines += ["| bytecode cache | case | wall s | CPU s |", "|---|---|---|---|"]
    for mode, _ in modes:
        for case in cases + ("floor: `python -c pass`", f"floor: `python -c '{_DEPS}'`"):
            ours = runs[(mode, case, "this tree")]
            row = f"| {mode} | {case} | {_summary(ours, 'wall')} |"
            if len(trees) == 2 and (mode, case, "baseline") in runs:
                base = runs[(mode, case, "baseline")]
                row += (f" {_summary(base, 'wall')} | {med(base, 'wall') / med(ours, 'wall'):.2f}x | "
                        f"{_summary(ours, 'cpu')} | {_summary(base, 'cpu')} | "
                        f"{med(base, 'cpu') / med(ours, 'cpu'):.2f}x |")
            elif len(trees) == 2:
                row += f" | | {_summary(ours, 'cpu')} | | |"
            else:
                row += f" {_summary(ours, 'cpu')} |"
            lines.append(row)
    lines += [
        "",
        f"The seed case's stdout was {'the same in every run of both trees' if len(outputs) == 1 else 'NOT the same in every run: ' + str(len(outputs)) + ' different outputs'}"
        f"; files it left in its numba cache folders: {sorted(set(left))} (it never imports numba). What is "
        "left above the floor is the project's own imports (about 1 ms of CPU per attrs class, for the code "
        "attrs generates; the domain model alone has 18) and the run itself (reading the YAML, the schema "
        "check, the search). `--only startup` rewrites this section alone; the sections below are from the "
        "full run the first line of this file names.",
        "",
    ]
    return lines


def _splice(path: Path, section: list) -> str:
    """`path`'s report with its start-up section replaced by `section` (inserted before the first section)."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Kernel compile time and cold start\n"
    block = "\n".join(section)
    if STARTUP_HEADING in text:
        head, rest = text.split(STARTUP_HEADING, 1)
        nxt = rest.find("\n## ")
        return head + block + ("\n" + rest[nxt + 1:] if nxt >= 0 else "")
    first = text.find("\n## ")
    return text + "\n" + block if first < 0 else text[:first + 1] + block + "\n" + text[first + 1:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="runs of each cold-start row (default 5)")
    ap.add_argument("--out", type=Path, default=RESULTS, help=f"the report (default {RESULTS.relative_to(ROOT)})")
    ap.add_argument("--baseline", type=Path, metavar="PATH",
                    help="another checkout (main) whose start-up is measured beside this tree's")
    ap.add_argument("--only", choices=("startup",),
                    help="measure only the start-up section and replace it in --out, keeping the rest")
    args = ap.parse_args(argv)
    load = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    work = Path(tempfile.mkdtemp(prefix="bench-compile-"))
    if args.only == "startup":
        print("start-up, side by side ...", flush=True)
        text = _splice(args.out, startup(args.repeats, args.baseline, work))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(text)
        return 0
    big = work / "big_o12_s8_chain3.yaml"
    subprocess.run([sys.executable, "-m", "planner.cli", "bench", "generate", "--observations", "12", "--states",
                    "8", "--chain", "3", "--seed", "1", "--out", str(big)], cwd=ROOT, env=_env(None), check=True,
                   capture_output=True)

    print("seed case, empty cache ...", flush=True)
    seed_cold = []
    for i in range(args.repeats):
        empty = work / f"empty-{i}"
        empty.mkdir()
        r = cli(SEED_RUN, str(empty))
        r["files"] = len(list(empty.rglob("*")))
        seed_cold.append(r)
    print("import time ...", flush=True)
    imports = [timed([sys.executable, "-c", "import planner.cli"], str(work / "empty-0")) for _ in range(args.repeats)]

    print("a large domain, empty cache (compiles) ...", flush=True)
    cache = str(work / "cache")
    big_cold = cli(["explain", str(big)], cache)

    print("planner warm (per-kernel compile times, from an empty cache) ...", flush=True)
    fresh = str(work / "warm-cache")
    w = timed([sys.executable, "-c", _WARM_CHILD], fresh)
    if w["code"] != 0:
        raise SystemExit(f"warm failed:\n{w['stderr']}")
    report = json.loads(w["stdout"])
    base_report = None
    if args.baseline is not None:  # the baseline's warm right after this tree's, each from an empty cache
        print("planner warm in the baseline ...", flush=True)
        bw = timed([sys.executable, "-c", _WARM_CHILD], str(work / "warm-cache-baseline"), args.baseline.resolve())
        if bw["code"] != 0:
            raise SystemExit(f"baseline warm failed:\n{bw['stderr']}")
        base_report = json.loads(bw["stdout"])
        base_report["process_cpu"], base_report["process_wall"] = bw["cpu"], bw["wall"]
    report["process_cpu"], report["process_wall"] = w["cpu"], w["wall"]

    print("seed case and the large domain, warm cache ...", flush=True)
    seed_warm = [cli(SEED_RUN, fresh) for _ in range(args.repeats)]
    big_warm = [cli(["explain", str(big)], fresh) for _ in range(max(2, args.repeats // 2))]

    print("the Python tier's speed ...", flush=True)
    sp = timed([sys.executable, "-c", _SPEED_CHILD], str(work / "empty-0"))
    speed = json.loads(sp["stdout"])

    for r in seed_cold + seed_warm + [big_cold] + big_warm:
        if r["code"] != 0:
            raise SystemExit(f"a run failed:\n{r['stderr']}")

    print("start-up, side by side ...", flush=True)
    section = startup(args.repeats, args.baseline, work)

    lines = [
        "# Kernel compile time and cold start",
        "",
        f"`python3 bench/bench_compile.py --repeats {args.repeats}`, {started}; {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores (shared), Python {platform.python_version()}; load average at the start "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}. Every row is whole processes (`subprocess`); seconds are "
        "the median of the runs [min]; CPU = user + system of the child.",
        "",
        *section,
        "## Cold start",
        "",
        "| case | numba cache | runs | wall s | CPU s | compile line |",
        "|---|---|---|---|---|---|",
        f"| seed: `planner run payment_release --world approval=pending` | empty (a new folder each run) | "
        f"{len(seed_cold)} | {_summary(seed_cold, 'wall')} | {_summary(seed_cold, 'cpu')} | "
        f"{'/'.join(sorted({_compile_line(r) for r in seed_cold}))} |",
        f"| seed, the same | after `planner warm` | {len(seed_warm)} | {_summary(seed_warm, 'wall')} | "
        f"{_summary(seed_warm, 'cpu')} | {'/'.join(sorted({_compile_line(r) for r in seed_warm}))} |",
        f"| `python -c 'import planner.cli'` | (not used) | {len(imports)} | {_summary(imports, 'wall')} | "
        f"{_summary(imports, 'cpu')} | no |",
        f"| large: `planner explain` 8 states x 12 observations, 3-chain | empty | 1 | {big_cold['wall']:.2f} | "
        f"{big_cold['cpu']:.2f} | {_compile_line(big_cold)} |",
        f"| large, the same | after `planner warm` | {len(big_warm)} | {_summary(big_warm, 'wall')} | "
        f"{_summary(big_warm, 'cpu')} | {'/'.join(sorted({_compile_line(r) for r in big_warm}))} |",
        "",
        f"Files the seed runs left in their empty cache folders: {sorted({r['files'] for r in seed_cold})} "
        "(the seed case runs in the Python tier: numba is never imported). The large domain's run printed, on stderr:",
        "",
        "```text",
        big_cold["stderr"].strip() or "(nothing)",
        "```",
        "",
        "## Compile time per kernel (`planner warm`, empty cache)",
        "",
        f"CPU seconds numba spent compiling each kernel, the kernels it calls excluded (inlined helpers are "
        f"compiled inside their callers and have no row). Total {report['total']:.1f} s of CPU; the warm process "
        f"took {report['wall']:.1f} s wall.",
        "",
        "| kernel | compile CPU s | signatures |",
        "|---|---|---|",
    ]
    if base_report is None:
        lines += [f"| `{name}` | {sec:.2f} | {sig} |" for name, sec, sig in report["kernels"]]
    else:
        base = {name: (sec, sig) for name, sec, sig in base_report["kernels"]}
        ours = {name: (sec, sig) for name, sec, sig in report["kernels"]}
        lines[-3:] = [
            f"Beside it, in the same run right after, the baseline ({args.baseline}, {_revision(args.baseline)}): "
            f"total {base_report['total']:.1f} s of CPU compiling, {base_report['wall']:.1f} s wall; the whole warm "
            f"process {report['process_cpu']:.1f} s of CPU here against {base_report['process_cpu']:.1f} s "
            f"({report['process_wall']:.1f} s and {base_report['process_wall']:.1f} s wall). A kernel with no "
            "compile in a tree has a dash there (in this tree the core helpers are kernels of their own, compiled "
            "once, where the baseline inlined them into every caller).",
            "",
            "| kernel | compile CPU s | signatures | baseline compile CPU s | baseline signatures |",
            "|---|---|---|---|---|",
        ]
        for name in sorted(set(base) | set(ours), key=lambda n: -max(ours.get(n, (0, 0))[0], base.get(n, (0, 0))[0])):
            o, b = ours.get(name), base.get(name)
            lines.append(f"| `{name}` | {f'{o[0]:.2f}' if o else '-'} | {o[1] if o else '-'} | "
                         f"{f'{b[0]:.2f}' if b else '-'} | {b[1] if b else '-'} |")
        lines.append(f"| total | {report['total']:.2f} | | {base_report['total']:.2f} | |")
    lines += [
        "",
        "A kernel with two signatures was compiled twice: `search._grown` rehashes the two memo tables (two "
        "record types); `bounded._back_up` is called once with a literal index inside `bounded._search` (a change "
        "to that kernel's source, left to its rewrite).",
        "",
        "## The Python tier's speed (sets `lookahead.jit.PYTHON_WORK`)",
        "",
        "One depth-limited search in the Python tier (`lookahead.jit.python_only()`), on "
        "`benchmark_domain(O, S, seed=1)`; work in state-operations, nodes x S x (A + Y x O).",
        "",
        "| O | S | depth | nodes | work | CPU s | work per CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [f"| {o} | {s} | {d} | {n:,} | {wk:,} | {cpu:.3f} | {wk / cpu:,.0f} |" for o, s, d, n, wk, cpu in speed]
    rates = [wk / cpu for *_, wk, cpu in speed]
    first = big_cold["cpu"] - statistics.median(r["cpu"] for r in big_warm)
    lines += [
        "",
        f"So `PYTHON_WORK` = {PYTHON_WORK:,} state-operations is {PYTHON_WORK / max(rates):.2f} to "
        f"{PYTHON_WORK / min(rates):.2f} s of Python tier, while a first compile costs the large domain's cold "
        f"run less its warm one, {first:.1f} s of CPU (`COMPILE_SECONDS` = {COMPILE_SECONDS} is what the line "
        "says) and every later process loads the kernels in a fraction of a second. Below the threshold "
        "compiling never pays; above it the compile is paid once per install.",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
