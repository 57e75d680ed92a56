"""A run's figures (issue 29, items 7 and 9): ``kinds: [lock]`` keeps the global lock (whose
kind reads ``lock (global)``), utilisation is drawn in % as the console prints it, and a run
that lost requests says so in a visible note above the figure."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import pytest

from simstack import simulate
from simstack.errors import ModelError
from simstack.load.loader import build_spec
from simstack.report import stages, utilisation
from simstack.studies.schema.report import FigureSpec

# An EPICS IOC in small: a scan thread under the global lock, a per-record lock nobody takes
# for long, and an archive queue that overflows.
IOC = {
    "name": "ioc",
    "hosts": {"ioc": {"cores": 1, "discipline": "fifo"}, "archiver": {"cores": 1}},
    "components": {
        "scan": {"kind": "threads", "host": "ioc", "size": 1},
        "global": {"kind": "lock"},
        "record_lock": {"kind": "lock", "per": "record"},
        "archive": {"kind": "queue", "host": "archiver", "capacity": 1, "when_full": "drop", "consumers": 1,
                    "handler": "archive_write"},
    },
    "requests": {
        "process": {"host": "ioc", "steps": [
            {"hold": "scan", "steps": [{"hold": "global", "steps": [{"cpu": "1ms", "name": "record"}]},
                                       {"hold": "record_lock", "key": "item", "steps": [{"delay": "1us"}]}]},
            {"send": "archive", "name": "archive"}]},
        "archive_write": {"host": "archiver", "steps": [{"cpu": "5ms", "name": "write"}]},
    },
    "workloads": {"scan": {"type": "open", "request": "process", "rate": "400/s"}},
}


class Runs:
    """The one thing a figure builder asks of its context: a run per selection."""

    def __init__(self, result: Any):
        self.result = result

    def run(self, sel: Any, steps: bool = False) -> Any:
        return self.result


@pytest.fixture(scope="module")
def ioc() -> Any:
    return simulate(build_spec(copy.deepcopy(IOC), Path("ioc.yaml")), seed=4, replications=2, horizon=2.0,
                    record_steps=True)


def _figure(parts: list) -> go.Figure:
    return next(p for p in parts if isinstance(p, go.Figure))


def test_kinds_lock_keeps_the_global_lock_and_draws_percent(ioc: Any) -> None:
    spec = FigureSpec("utilisation", "", "", {"runs": {"ioc": None}, "resources": None, "kinds": ["lock"],
                                              "stacked": False}, "report.figures[0]")
    figure = _figure(utilisation.build(Runs(ioc), spec))  # type: ignore[arg-type]
    bars = figure.data[0]
    assert set(bars.x) == {"global", "record_lock"}
    means = ioc.resource_summary().set_index("resource")["utilisation"]
    assert dict(zip(bars.x, bars.y, strict=True))["global"] == pytest.approx(means["global"] * 100, rel=1e-9)
    assert means["global"] > 0.3  # the lock an IOC model exists to study, busy
    assert "%" in figure.layout.yaxis.title.text and figure.layout.xaxis.title.text
    exact = FigureSpec("utilisation", "", "", {"runs": {"ioc": None}, "resources": None,
                                               "kinds": ["lock (global)"], "stacked": False}, "report.figures[0]")
    assert set(_figure(utilisation.build(Runs(ioc), exact)).data[0].x) == {"global"}  # type: ignore[arg-type]
    wrong = FigureSpec("utilisation", "", "", {"runs": {"ioc": None}, "resources": None, "kinds": ["locks"],
                                               "stacked": False}, "report.figures[0]")
    with pytest.raises(ModelError, match="no resource of kind 'locks'; kinds: .*lock"):
        utilisation.build(Runs(ioc), wrong)  # type: ignore[arg-type]


def test_a_run_that_dropped_requests_has_a_visible_note(ioc: Any) -> None:
    for module, options in ((utilisation, {"resources": None, "kinds": None, "stacked": False}),
                            (stages, {"request": "process", "steps": None, "unit": "ms", "per": "request"})):
        spec = FigureSpec(module.__name__.rsplit(".", 1)[1], "", "", {"runs": {"ioc": None}, **options},
                          "report.figures[0]")
        notes = [p for p in module.build(Runs(ioc), spec) if isinstance(p, str)]  # type: ignore[arg-type]
        assert len(notes) == 1 and "Losses in &#x27;ioc&#x27;" in notes[0]
        assert "request archive_write" in notes[0] and "resource archive" in notes[0] and "queue full" in notes[0]


def test_a_model_without_a_time_unit_is_drawn_in_model_time_units() -> None:
    result = simulate(build_spec({**copy.deepcopy(IOC), "settings": {"time_unit": "none"}}, Path("ioc.yaml")),
                      seed=4, replications=2, horizon=1.0, record_steps=True)
    spec = FigureSpec("stages", "", "", {"runs": {"ioc": None}, "request": "process", "steps": None, "unit": "ms",
                                         "per": "request"}, "report.figures[0]")
    figure = _figure(stages.build(Runs(result), spec))  # type: ignore[arg-type]
    assert figure.layout.yaxis.title.text == "mean time per request (model time units)"
    mark = next(t for t in figure.data if t.name == "request latency")
    latency = result.summary().set_index("request").loc["process", "mean"]
    assert mark.y[0] == pytest.approx(latency, rel=1e-9)  # not scaled to ms
