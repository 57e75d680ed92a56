"""The alternative readings of the held-out servers (NOTES.md section 10), as the analytic
solver sees them: the two 2-socket readings change no calibration row (so their fit is the
point's, and `simstack calibrate alternative=...` would return it), but they move the C++
and Java predictions on c5n.18xlarge in opposite directions; omniORB's thread pool only
exists above 55 connections of an omniORB server."""

from __future__ import annotations

import numpy as np
import pytest

from simstack.io.paths import model_dir_of
from simstack.lang.units import quantity
from simstack.load.precedence import calibrated_parameters
from simstack.studies.analysis.network import build_network
from simstack.studies.evaluate.rowtargets import Series, target_series
from simstack.studies.fit.surrogate import MvaCurves
from simstack.studies.schema.rows import point_selection
from simstack.studies.schema.selection import RunSelection, merge
from simstack.studies.schema.study import load_study

pytestmark = pytest.mark.slow  # facility back-tests: whole models against their baselines and committed predictions

MODEL_DIR = model_dir_of("tango", None)
STALLS = ["stall_absolute", "stall_python_only"]


@pytest.fixture(scope="module")
def study():
    return load_study(MODEL_DIR)


@pytest.fixture(scope="module")
def values() -> dict[str, float]:
    return {k: quantity(v) for k, v in calibrated_parameters(MODEL_DIR).items()}


def _network(curves: MvaCurves, selection: RunSelection, values, clients: int):
    return build_network(curves.spec(Series(selection, (clients,), np.array([0])), values, clients))


def test_the_two_socket_alternatives_change_no_calibration_row(study, values) -> None:
    cal = study.calibration
    metric = study.metrics[cal.rows.metric]
    _, _, series = target_series(MODEL_DIR, cal.rows, study.predictions.axes, metric, "test")
    curves = MvaCurves(study, "op_done", "clients")
    for s in series:
        n = max(s.populations)
        point = _network(curves, s.selection, values, n)
        for flag in STALLS:
            other = _network(curves, merge(s.selection, RunSelection(flags={flag: True})), values, n)
            assert other == point, (flag, s.label)


def _held_out(study, server_language: str, clients: int, flags: dict[str, bool]) -> RunSelection:
    point = {"client_instance": "c5n.18xlarge", "client_language": "Python", "server_instance": "c5n.18xlarge",
             "server_language": server_language, "operation": "attribute_read"}
    sel = merge(study.metrics["ops_per_s"].run, point_selection(point, study.predictions.axes, "test"))
    return merge(sel, RunSelection(parameters={"clients": clients}, flags=flags))


@pytest.mark.parametrize("lang", ["C++", "Java"])
def test_the_two_socket_alternatives_move_the_held_out_reads(study, values, lang: str) -> None:
    curves = MvaCurves(study, "op_done", "clients")
    at = {name: curves.value(Series(_held_out(study, lang, 128, flags), (), np.array([])), values)
          for name, flags in (("point", {}), ("absolute", {"stall_absolute": True}),
                              ("python_only", {"stall_python_only": True}))}
    # no stall is fastest; the Python server's stall per hand-over is longer than the C++
    # section's proportional one and shorter than the Java section's
    assert at["python_only"] > max(at["point"], at["absolute"]), at
    section = {"C++": "s_cpp_read", "Java": "s_java_read"}[lang]
    assert (at["absolute"] < at["point"]) == (values[section] < values["s_py_read"]), at
    assert abs(at["absolute"] / at["point"] - 1) > 0.03, at


def test_the_orb_pool_exists_only_above_55_connections_of_an_omniorb_server(study, values) -> None:
    """The watcher's visit is in the network only where the flag means something."""
    curves = MvaCurves(study, "op_done", "clients")
    on = {"orb_pool": True}
    for lang, clients, changes in (("C++", 46, False), ("C++", 72, True), ("Python", 128, True), ("Java", 128, False)):
        pool = _network(curves, _held_out(study, lang, clients, on), values, clients)
        watcher = [v.mean for c in pool.chains.values() for v in _visits(c.body) if v.station.startswith("orb_watcher")]
        assert (sum(watcher) > 0) == changes, (lang, clients, watcher)


def _visits(body):
    for node in body:
        if hasattr(node, "station") and hasattr(node, "mean"):
            yield node
        elif hasattr(node, "body"):
            yield from _visits(node.body)
        elif hasattr(node, "branches"):
            for b in node.branches:
                yield from _visits(b)
