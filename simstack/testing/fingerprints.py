"""Fingerprints of the facility models: a hash of each model's summary tables for a fixed seed.

The engine may change how it runs a model (faster dispatch, other record buffers, parallel
replications) but not what it computes: for the same seed the tables must stay bit-identical.
``tests/test_fingerprints.py`` compares against ``tests/data/fingerprints.json``; regenerate
that file only on purpose, when a change is meant to alter the random streams or the model
files::

    python -m simstack.testing.fingerprints --update
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from simstack import load_model, simulate
from simstack.engine.simulate import RunResult

FILE = Path(__file__).resolve().parents[2] / "tests" / "data" / "fingerprints.json"  # in a checkout


def runs() -> dict[str, Callable[[], RunResult]]:
    """One short, fixed-seed run per facility model (a few seconds in all)."""
    return {
        "pipeline": lambda: simulate(load_model("pipeline"), seed=3, replications=2, horizon=20.0,
                                     warmup=2.0, record_steps=True),
        "gsi_fair": lambda: simulate(load_model("gsi_fair", scenario="s1_1"), seed=5, record_steps=True),
        "slac_bsa": lambda: simulate(load_model("slac_bsa", scenario="calibration"), seed=7,
                                     horizon=0.5, record_steps=True),
        "tango": lambda: simulate(load_model("tango"), seed=11, replications=2, horizon=0.06,
                                  warmup=0.01, record_steps=True),
        "cms_conditions": lambda: simulate(load_model("cms_conditions"), seed=13, record_steps=True),
        # Without step records the engine fuses consecutive CPU steps: a path of its own.
        "slac_bsa_unrecorded": lambda: simulate(load_model("slac_bsa"), seed=17, horizon=0.5,
                                                record_steps=False),
        # replicated nodes, file servers, caches, memory (6 subfarms): as measured, and with fork,
        # checkpoints and the swarm (the model has no draws: one replication)
        "lhcb_hlt": lambda: simulate(load_model("lhcb_hlt", parameters={"subfarms": 6}), seed=1,
                                     horizon=3 * 3600.0, record_steps=False),
        "lhcb_hlt_optimised": lambda: simulate(load_model("lhcb_hlt", parameters={"subfarms": 6}, flags=[
            "local_cache", "fork", "checkpoint", "distribution", "swarm"]), seed=1, horizon=3 * 3600.0,
            record_steps=False),
    }


def tables(result: RunResult) -> dict[str, pd.DataFrame]:
    """The tables a fingerprint covers: per request class count / mean / max latency, per
    stage the same, and per resource its utilisation."""
    req = result.requests
    recorded = req[~req["warmup"]]
    by_class = (recorded.groupby(["request", "ok"], sort=True)["latency"]
                .agg(["count", "mean", "max"]).reset_index())
    steps = result.steps
    by_step = (steps.assign(duration=steps["end"] - steps["start"])
               .groupby(["request", "step", "component"], sort=True)["duration"]
               .agg(["count", "mean", "max"]).reset_index()) if not steps.empty else steps
    resources = result.resources[["rep", "resource", "kind", "utilisation"]].sort_values(
        ["rep", "resource", "kind"], kind="stable").reset_index(drop=True)
    return {"requests": by_class, "steps": by_step, "resources": resources}


def digest(frames: Mapping[str, pd.DataFrame]) -> str:
    """SHA-256 of the tables' exact values (floats by their bit patterns, via repr)."""
    h = hashlib.sha256()
    for name in sorted(frames):
        h.update(name.encode())
        for row in frames[name].itertuples(index=False):
            h.update(repr(tuple(float(v).hex() if isinstance(v, float) else v for v in row)).encode())
    return h.hexdigest()


def compute(names: list[str] | None = None) -> dict[str, str]:
    made = runs()
    return {name: digest(tables(made[name]())) for name in (names or list(made))}


def load() -> dict[str, Any]:
    return json.loads(FILE.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the committed fingerprints")
    args = parser.parse_args(argv)
    current = compute()
    if args.update:
        FILE.parent.mkdir(parents=True, exist_ok=True)
        FILE.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
        print(f"wrote {len(current)} fingerprints")
        return 0
    known = load()
    changed = sorted(k for k in current if known.get(k) != current[k])
    print("changed: " + ", ".join(changed) if changed else "all fingerprints match")
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
