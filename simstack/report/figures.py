"""The figure builders of a report page, one small module per figure type.

Importing this module registers every builder (``simstack.report.registry``); ``builder``
finds the one for a figure type. Each module draws one kind of figure from a
``Context`` (the study, its cached runs, the report's run settings) and returns its parts:
a Plotly figure and the table of the numbers plotted.
"""

from __future__ import annotations

from simstack.report import (  # noqa: F401  (imported to register their builders)
    calibration,
    capacity,
    curve,
    distribution,
    hierarchy,
    latency_cdf,
    load,
    over_time,
    parity,
    per_item,
    predictions,
    speedup,
    stages,
    stations,
    timeline,
    topology,
    utilisation,
    whatifs,
)
from simstack.report.registry import BUILDERS, Builder


def builder(kind: str) -> Builder:
    """The builder of figure type ``kind`` (every type of the schema has one)."""
    return BUILDERS[kind]

