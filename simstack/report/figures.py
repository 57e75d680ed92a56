"""The figure types a ``report:`` section may list, each one small module with ``FIELDS``
(its keys, parsed with located errors) and ``build(context, figure) -> [figure, table]``."""

from __future__ import annotations

from types import ModuleType

from simstack.report import (
    calibration,
    capacity,
    curve,
    distribution,
    hierarchy,
    load,
    parity,
    per_item,
    predictions,
    speedup,
    stages,
    timeline,
    topology,
    utilisation,
    whatifs,
)

BUILDERS: dict[str, ModuleType] = {
    "stages": stages,            # where the time goes, per configuration (step records)
    "metric": curve,             # a metric against an axis, CIs, measured points
    "capacity": capacity,        # failure curves around each configuration's capacity
    "utilisation": utilisation,  # utilisation per resource
    "topology": topology,        # the model's graph
    "whatifs": whatifs,          # a metric across what-ifs, bars with CIs
    "predictions": predictions,  # predictions.csv (with intervals) against measurements
    "parity": parity,            # every prediction against its measurement
    "distribution": distribution,  # a column of a data file: histogram, share of the largest
    "calibration": calibration,  # calibrated.yaml: residuals of the targets, fitted values
    "speedup": speedup,          # a metric over its value at a reference axis point, CIs of the ratio
    "hierarchy": hierarchy,      # a settings hierarchy, coloured by the runs that recalculate it
    "per_item": per_item,        # failure fraction per item, latency box plots per run or item
    "timeline": timeline,        # requests of a class done against time (a start-up's progress)
    "load": load,                # a resource's busy servers and queue over time (run trace)
}
