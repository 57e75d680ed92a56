"""A facility command on two installs of simstack, side by side: whole processes, alternating
A and B, CPU seconds (user + sys of each child and its children), and whether they printed the
same tables.

This machine's CPU speed changes from run to run (the same loop can take 1.2 s or 2.8 s), so
a single pair says little: the pairs alternate, and the table gives each side's least and
median CPU and the median of the pairs' ratios. A check prints each model's own time on the
model's first line (``NAME (1 of 6): 14 check(s), 0 out of tolerance, 0.1 s``): the comparison
leaves those lines out, and the table gives their sum too (the check's own work, without the
process's start), the median per side. ``--models all`` times the whole command, every model
with a ``checks.yaml`` in one process, as a regression run is made.

    python benchmarks/facility_checks.py --a A/.venv/bin/simstack --b B/.venv/bin/simstack \\
        --b-env SIMSTACK_KERNEL=simpy --pairs 4 --models all cms_conditions lhcb_hlt

``--task predict`` compares predictions instead (their tables print a wall time: compare the
written ``predictions.csv`` files yourself).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
from dataclasses import dataclass, field

MODELS = ("lhcb_hlt", "cms_conditions", "gsi_fair", "slac_bsa", "pipeline", "tango")
ALL = "all"  # the whole command: every model with a checks.yaml in one process
OWN_TIME = re.compile(r"^\S+ \(\d+ of \d+\): .*, (\d+(?:\.\d+)?) s$", re.MULTILINE)  # a model's first line


@dataclass
class Side:
    """One install's runs of one command: CPU seconds per run and what it printed."""

    cpu_s: list[float] = field(default_factory=list)
    own_s: list[float] = field(default_factory=list)  # the check's own time, as it printed it
    printed: set[str] = field(default_factory=set)


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """CPU seconds of ``command`` and its children (every process it waited for), the seconds
    its models' first lines print (summed), and its standard output without those lines."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    own = sum(float(seconds) for seconds in OWN_TIME.findall(done.stdout))
    return cpu, own, OWN_TIME.sub("", done.stdout)


def compare(a: str, b: str, b_env: dict[str, str], task: str, model: str, pairs: int) -> tuple[Side, Side]:
    """``pairs`` alternating runs of ``SIMSTACK TASK model=MODEL jobs=1`` on each install
    (``model`` ``all``: without ``model=``)."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    sides = (Side(), Side())
    for _ in range(pairs):
        for side, exe, extra in ((sides[0], a, {}), (sides[1], b, b_env)):
            chosen = [] if model == ALL else [f"model={model}"]
            cpu, own, printed = timed([exe, task, *chosen, "jobs=1"], {**base, **extra})
            side.cpu_s.append(cpu)
            side.own_s.append(own)
            side.printed.add(printed)
    return sides


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, help="the simstack executable of install A (the new one)")
    parser.add_argument("--b", required=True, help="the simstack executable of install B (the old one)")
    parser.add_argument("--b-env", nargs="*", default=[], metavar="KEY=VALUE", help="environment for B's runs")
    parser.add_argument("--task", default="check")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=[ALL, *MODELS],
                        help=f"models to check one by one; {ALL}: the whole command, every model in one process")
    args = parser.parse_args(argv)
    b_env = dict(item.split("=", 1) for item in args.b_env)
    print("| model | pairs | A: CPU s, least / median | B: CPU s, least / median | B/A, median of pairs "
          "| own time printed, A / B (median) | same tables |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for model in args.models:
        a, b = compare(args.a, args.b, b_env, args.task, model, args.pairs)
        ratio = statistics.median(y / x for x, y in zip(a.cpu_s, b.cpu_s, strict=True))
        same = "yes" if len(a.printed | b.printed) == 1 else "no"
        own = (f"{statistics.median(a.own_s):.1f} / {statistics.median(b.own_s):.1f} s" if any(a.own_s + b.own_s)
               else "-")
        print(f"| `{model}` | {args.pairs} | {min(a.cpu_s):.2f} / {statistics.median(a.cpu_s):.2f} "
              f"| {min(b.cpu_s):.2f} / {statistics.median(b.cpu_s):.2f} | {ratio:.2f}x | {own} | {same} |",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
