"""The page's two answers for a setting: the instant one (approximate MVA) and the precise one
(the setting against the baseline on common random numbers), as plain tables.

Both load the model the way ``simstack run`` does (``precedence.load_chosen``: calibrated
values, then the page's overrides), so a what-if saved from the page runs on the command line
with the same figures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from simstack.lang.spec import ModelSpec
from simstack.load.precedence import calibrated_parameters, load_chosen, run_settings
from simstack.serve.workloads import is_workload_key, load_with_workloads
from simstack.studies.analysis.solve import chain_table, solve_model, station_table
from simstack.studies.compare import compare
from simstack.tables.stopping import precision_from

SETTING_NAME = "page"  # the what-if name the page's setting has in a comparison


def load_setting(model_file: Path, parameters: Mapping[str, Any], flags: Mapping[str, bool],
                 scenario: str | None = None) -> ModelSpec:
    """The model in ``scenario`` with the page's overrides, over its calibrated values (as
    ``simstack run``); a workload's literal rate or client count (``clients.clients``)
    replaced in the document."""
    calibrated = calibrated_parameters(model_file.parent)
    plain = {k: v for k, v in parameters.items() if not is_workload_key(k)}
    fields = {k: v for k, v in parameters.items() if is_workload_key(k)}
    if fields:
        return load_with_workloads(model_file, calibrated, plain, flags, fields, scenario)
    return load_chosen(model_file, calibrated, None, scenario=scenario, parameters=plain, flags=dict(flags))


@dataclass(frozen=True)
class Instant:
    """The approximate answer: per request stream and per busy station."""

    chains: pd.DataFrame
    stations: pd.DataFrame


def instant(spec: ModelSpec) -> Instant:
    """Approximate MVA of the setting (``simstack solve``); raises ModelError where it cannot answer."""
    solution = solve_model(spec)
    chains = chain_table(solution)[["workload", "request", "throughput_per_s", "response_ms"]]
    stations = station_table(solution)
    if not stations.empty:
        stations = (stations.groupby(["station", "what"], sort=False)["utilisation"].first().reset_index()
                    .assign(**{"utilisation_%": lambda t: t["utilisation"] * 100}).drop(columns="utilisation")
                    .sort_values("utilisation_%", ascending=False, na_position="last"))
    return Instant(chains, stations)


def beside(model: Instant | None, setting: Instant) -> pd.DataFrame:
    """The setting's streams with the model's own figures beside them (``... (model)``)."""
    if model is None:
        return setting.chains
    keys = ["workload", "request"]
    merged = setting.chains.merge(model.chains, on=keys, how="left", suffixes=("", " (model)"))
    order = [c for name in ("throughput_per_s", "response_ms") for c in (f"{name} (model)", name)]
    return merged[[*keys, *order]]


def simulation_settings(spec: ModelSpec, replications: int, horizon: float | None, jobs: int = 1) -> dict[str, Any]:
    """``simulate``'s keyword arguments as ``simstack run`` makes them, with the page's
    replications and horizon (seconds) over the model's own settings; ``jobs`` replications at
    once (on the backend the runner chose)."""
    chosen = run_settings(spec.settings, {"replications": replications, "horizon": horizon})
    return {**chosen, "record_steps": False, "progress": False, "record": "full", "jobs": jobs}


PRECISION_MOST = 200  # replications of each side at most, when a precision target decides their number


def precise(model_file: Path, parameters: Mapping[str, Any], flags: Mapping[str, bool], replications: int,
            horizon: float | None, precision: float | None = None, scenario: str | None = None,
            report: Callable[[str], None] | None = None,
            jobs: int = 1) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """The setting against the model on common random numbers (``studies.compare``): its
    ``requests`` and ``resources`` tables and the settings they ran with. With ``precision``
    (``sim.precision.relative``) replications are added in rounds until every request class's
    mean latency change is known within that share (at most ``PRECISION_MOST``). ``report``
    hears "k of n replications done" as each one ends. The model as it is is the baseline;
    ``scenario`` is the setting's (as a what-if's scenario is on the command line)."""
    before = load_setting(model_file, {}, {})
    after = load_setting(model_file, parameters, flags, scenario)
    settings = simulation_settings(before, replications, horizon, jobs)
    target = None if precision is None else precision_from({"relative": precision,
                                                             "max_replications": PRECISION_MOST})
    done = [0]

    def tick(_rep: int) -> None:
        done[0] += 1
        if report is not None:
            report(progress_line(done[0], None if target is not None else 2 * replications))

    comparison = compare(before, {SETTING_NAME: after}, {**settings, "on_replication": tick}, target)
    chosen = {**settings, "replications": comparison.replications}
    if comparison.stopped is not None:
        chosen["stopped"] = comparison.stopped.stopped  # "precision" when met, else the limit that ended it
    return comparison.requests, comparison.resources, chosen


def progress_line(done: int, planned: int | None) -> str:
    """``7 of 10 replications done`` (the model's, then the setting's); without a plan (a
    precision decides), ``7 replications done``."""
    if planned is None:
        return f"{done} replications done (the model's and the setting's, in rounds until the precision is met)"
    return f"{done} of {planned} replications done (the model's, then the setting's)"


def figure(value: object) -> str:
    """A number as the console prints it: four significant digits; a missing one as '-'."""
    if isinstance(value, float | int) and not isinstance(value, bool):
        return "-" if value != value else f"{value:.4g}"
    return str(value)


def paired_rows(requests: pd.DataFrame, resources: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """The before/after table as printed by ``simstack model=M whatif=W``: per request class
    and busy resource, before, after, the difference and the ratio with their intervals."""
    header = ["what", "statistic", "before", "after", "difference", "difference interval", "ratio"]
    rows = []
    for frame, what in ((requests, "request"), (resources, "resource")):
        for row in frame.to_dict("records"):
            if what == "resource" and not (row["before"] or row["after"]):
                continue  # idle in both, as the console leaves it out
            rows.append([str(row[what]), str(row["statistic"]), figure(row["before"]), figure(row["after"]),
                         figure(row["difference"]),
                         f"[{figure(row['difference_low'])}, {figure(row['difference_high'])}]",
                         figure(row["ratio"])])
    return header, rows


__all__ = ["Instant", "PRECISION_MOST", "SETTING_NAME", "beside", "figure", "instant", "load_setting", "paired_rows",
           "precise", "progress_line", "simulation_settings"]
