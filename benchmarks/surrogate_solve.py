"""CPU time of the calibration surrogate's solves on the Tango model. Prints; not a timed test.

    .venv/bin/python benchmarks/surrogate_solve.py            # three series, 20 curves each
    .venv/bin/python benchmarks/surrogate_solve.py --all      # + every row once (199 series)

A *curve* is what the calibration asks for one series at one parameter set: the throughput at
each of its client counts (one MVA recursion through 1..N clients; for Java clients, whose
JVM background is a second closed chain, one Schweitzer-Bard solve per client count). The
series: C++ client and server on c5n.2xlarge (the recursion to 96 clients), Java client and
server on c5n.2xlarge (two closed chains, 8 client counts), Python on the 2-socket c5n.18xlarge
(per-client placement data, the recursion to 128). The model file's values are used.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from simstack.io.paths import model_dir_of
from simstack.io.safeyaml import read_yaml
from simstack.load.loader import build_spec
from simstack.studies.evaluate.rowtargets import target_series
from simstack.studies.fit.calibrate import quantity
from simstack.studies.fit.surrogate import MvaCurves
from simstack.studies.schema.study import load_study

SERIES = ("c5n.2xlarge | C++ | c5n.2xlarge | C++ | attribute_read | False",
          "c5n.2xlarge | Java | c5n.2xlarge | Java | attribute_read | False",
          "c5n.18xlarge | Python | c5n.18xlarge | Python | attribute_read | False")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--curves", type=int, default=20, help="curves per series (best of 3 rounds)")
    parser.add_argument("--all", action="store_true", help="also every series once")
    args = parser.parse_args()
    folder = model_dir_of("tango", None)
    study = load_study(folder)
    cal: Any = study.calibration
    metric: Any = study.metrics[cal.rows.metric]
    assert study.predictions is not None
    _, _, series = target_series(folder, cal.rows, study.predictions.axes, metric, "calibration.targets")
    model = build_spec(read_yaml(folder / "model.yaml"), folder / "model.yaml")
    values = {n: quantity(p.value) for n, p in model.parameters.items() if p.free is not None}
    curves = MvaCurves(study, metric.request, cal.rows.population)
    by_label = {s.label: s for s in series}
    for label in SERIES:
        best = float("inf")
        for _ in range(3):
            solves, started = curves.solves, time.process_time()
            for _ in range(args.curves):
                curves.curve(by_label[label], values)
            took = time.process_time() - started
            best = min(best, took / args.curves)
        per_solve = took / (curves.solves - solves)
        print(f"{label}: {best * 1e3:.1f} ms CPU per curve ({per_solve * 1e3:.1f} ms per solve)")
    if args.all:
        solves, started = curves.solves, time.process_time()
        for s in series:
            curves.curve(s, values)
        took = time.process_time() - started
        print(f"every series once ({len(series)} curves, {curves.solves - solves} solves): {took:.1f} s CPU, "
              f"{took / (curves.solves - solves) * 1e3:.1f} ms per solve")


if __name__ == "__main__":
    main()
