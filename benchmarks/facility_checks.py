"""A facility command on two installs of simstack, side by side: whole processes, alternating
A and B, CPU seconds (user + sys of each child and its children), and whether they printed the
same tables.

This machine's CPU speed changes from run to run (the same loop can take 1.2 s or 2.8 s), so
a single pair says little: the pairs alternate, and the table gives each side's least and
median CPU and the median of the pairs' ratios. A check prints its own run time on its first
line; the comparison leaves that line out.

    python benchmarks/facility_checks.py --a A/.venv/bin/simstack --b B/.venv/bin/simstack \\
        --b-env SIMSTACK_KERNEL=simpy --pairs 4 --models cms_conditions lhcb_hlt

``--task predict`` compares predictions instead (their tables print a wall time: compare the
written ``predictions.csv`` files yourself).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from dataclasses import dataclass, field

MODELS = ("lhcb_hlt", "cms_conditions", "gsi_fair", "slac_bsa", "pipeline", "tango")


@dataclass
class Side:
    """One install's runs of one command: CPU seconds per run and what it printed."""

    cpu_s: list[float] = field(default_factory=list)
    printed: set[str] = field(default_factory=set)


def timed(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """CPU seconds of ``command`` and its children (every process it waited for), and its
    standard output without the first line (which carries the run's own timing)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, done.stdout.split("\n", 1)[-1]


def compare(a: str, b: str, b_env: dict[str, str], task: str, model: str, pairs: int) -> tuple[Side, Side]:
    """``pairs`` alternating runs of ``SIMSTACK TASK model=MODEL jobs=1`` on each install."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    sides = (Side(), Side())
    for _ in range(pairs):
        for side, exe, extra in ((sides[0], a, {}), (sides[1], b, b_env)):
            cpu, printed = timed([exe, task, f"model={model}", "jobs=1"], {**base, **extra})
            side.cpu_s.append(cpu)
            side.printed.add(printed)
    return sides


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, help="the simstack executable of install A (the new one)")
    parser.add_argument("--b", required=True, help="the simstack executable of install B (the old one)")
    parser.add_argument("--b-env", nargs="*", default=[], metavar="KEY=VALUE", help="environment for B's runs")
    parser.add_argument("--task", default="check")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    args = parser.parse_args(argv)
    b_env = dict(item.split("=", 1) for item in args.b_env)
    print("| model | pairs | A: CPU s, least / median | B: CPU s, least / median | B/A, median of pairs "
          "| same tables |")
    print("| --- | --- | --- | --- | --- | --- |")
    for model in args.models:
        a, b = compare(args.a, args.b, b_env, args.task, model, args.pairs)
        ratio = statistics.median(y / x for x, y in zip(a.cpu_s, b.cpu_s, strict=True))
        same = "yes" if len(a.printed | b.printed) == 1 else "no"
        print(f"| `{model}` | {args.pairs} | {min(a.cpu_s):.2f} / {statistics.median(a.cpu_s):.2f} "
              f"| {min(b.cpu_s):.2f} / {statistics.median(b.cpu_s):.2f} | {ratio:.2f}x | {same} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
