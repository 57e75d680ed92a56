"""A bound must hold whatever the true mechanism: a synthetic case with a known truth in which
the calibrated mechanism is wrong (issue 33).

Sixteen blobs of 10 MB are fetched from a database by a pool of ``threads`` threads, then
parsed on 4 processor-sharing cores. The *truth* is a database whose total bandwidth grows
with the sessions beyond two (x (threads / 2) ** 0.5); the *fitted* model has a fixed
capacity. Both fit the 1- and 2-thread rows exactly (one stream is capped at 10 MB/s, two
share 15 MB/s), so the calibration cannot tell them apart, and the fitted model predicts no
gain beyond 2 threads where the truth still gains (fetch 7.5 s at 4 threads, 3.8 s at 16,
against 10.7 s).

The study declares a limit on the fetch from the fitted bandwidth ("the DB carries 160 MB no
faster than $db_capacity") beside limits from facts (the 1 Gb/s line, the parse work measured at
one thread over the 4 cores). Only the facts may bound a row: every ``bounds`` row holds the
truth, and the rows the fitted limit tightens are ``bounds-if``, which the truth breaks.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from simstack.studies.evaluate.metrics import Evaluator
from simstack.studies.fit.calibrate import calibrate_into
from simstack.studies.predict import write_predictions
from simstack.studies.schema.selection import RunSelection
from simstack.studies.schema.study import load_study

MODEL = """name: fetcher
description: Blobs fetched from a database by a pool of threads, then parsed on the client's cores.
parameters:
  threads: {value: 1}
  blobs: {value: 16, fact: the job lists 16 blobs}
  size: {value: 10MB, fact: each blob is 10 MB}
  cores: {value: 4, fact: the client has 4 cores}
  line_rate: {value: 125MB/s, fact: the client's 1 Gb/s link}
  stream_bandwidth: {value: 12MB/s, free: [2MB/s, 40MB/s]}
  db_bandwidth: {value: 20MB/s, free: [5MB/s, 60MB/s]}
  growth: {value: 0, doc: "how the DB's bandwidth grows with sessions beyond two; 0: a fixed capacity"}
  db_capacity: {value: "$db_bandwidth * max(1, $threads / 2) ** $growth"}
  parse: {value: 20ms, free: [5ms, 100ms]}
hosts:
  client: {cores: $cores, discipline: ps}
  server: {cores: 64, discipline: ps}
components:
  pool: {kind: threads, host: client, size: $threads}
  store: {kind: database, host: server, connections: 1000, latency: 0ms, bandwidth: $db_capacity,
          stream_bandwidth: $stream_bandwidth}
requests:
  job:
    host: client
    steps:
      - name: fetch
        steps:
          - parallel: {count: $blobs, limit: $threads}
            steps: [{hold: pool, steps: [{call: store, name: blob, bytes: $size}]}]
      - name: parse
        steps:
          - parallel: {count: $blobs, limit: $threads}
            steps: [{hold: pool, steps: [{name: parse_blob, cpu: $parse}]}]
workloads:
  run: {type: protocol, request: job, warmup: 0, repeat: 1}
"""

STUDY = """baselines: baselines.csv
defaults: {replications: 1, seed: 1}
metrics:
  fetch_1: {type: latency, request: job, step: fetch, parameters: {threads: 1}}
  fetch_2: {type: latency, request: job, step: fetch, parameters: {threads: 2}}
  parse_1: {type: latency, request: job, step: parse, parameters: {threads: 1}}
  parse_2: {type: latency, request: job, step: parse, parameters: {threads: 2}}
  fetch: {type: latency, request: job, step: fetch}
  parse: {type: latency, request: job, step: parse}
checks:
  - {id: fetch_1, metric: fetch_1, baseline: {quantity: fetch_1}, tolerance: 0.01}
  - {id: fetch_2, metric: fetch_2, baseline: {quantity: fetch_2}, tolerance: 0.01}
  - {id: parse_1, metric: parse_1, baseline: {quantity: parse_1}, tolerance: 0.01}
  - {id: parse_2, metric: parse_2, baseline: {quantity: parse_2}, tolerance: 0.01}
calibration:
  parameters: [stream_bandwidth, db_bandwidth, parse]
  targets: [fetch_1, fetch_2, parse_1, parse_2]
  method: least_squares
  max_evaluations: 60
predictions:
  metric: fetch
  value_column: seconds
  axes:
    threads: {values: [1, 2, 4, 8, 16], parameters: threads}
    phase: {fetch: {metric: fetch}, parse: {metric: parse}}
  interval:
    bounds:
      sense: lower
      along: [threads]
      scale: $threads
      facts: {parse_serial: {value: PARSE_SERIAL, source: "baselines.csv, parse_1: measured at one thread"}}
      limits:
        - {where: {phase: fetch}, value: $blobs * $size / $line_rate, doc: the line carries every blob}
        - {where: {phase: fetch}, value: $blobs * $size / $db_capacity, doc: the DB's bandwidth carries every blob}
        - {where: {phase: parse}, value: $parse_serial / $cores, doc: the parse work on the cores}
"""

TRUTH = {"growth": 0.5, "stream_bandwidth": 10e6, "db_bandwidth": 15e6, "parse": 0.05}
THREADS = (1, 2, 4, 8, 16)
Fitted = tuple[pd.DataFrame, dict[tuple[int, str], float], dict[str, Any]]
EXACT = 1e-9  # the parse is CPU-bound beyond 4 threads: the truth sits on the cores' limit, to rounding


def _holds(low: float, high: float, truth: float) -> bool:
    return low * (1 - EXACT) <= truth <= high * (1 + EXACT)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> Fitted:
    """The predictions of the fixed-capacity model fitted on the truth's 1- and 2-thread rows,
    and the truth at every row."""
    folder = tmp_path_factory.mktemp("wrong") / "fetcher"
    folder.mkdir()
    (folder / "model.yaml").write_text(MODEL)
    (folder / "checks.yaml").write_text(STUDY.replace("PARSE_SERIAL", "1s"))
    truth = Evaluator(load_study(folder), TRUTH)
    true = {(n, phase): truth.value(phase, RunSelection(parameters={"threads": n}))
            for n in THREADS for phase in ("fetch", "parse")}
    rows = "".join(f"{phase}_{n},{true[(n, phase)]},s\n" for n in (1, 2) for phase in ("fetch", "parse"))
    (folder / "baselines.csv").write_text("quantity,value,unit\n" + rows)
    (folder / "checks.yaml").write_text(STUDY.replace("PARSE_SERIAL", f"{true[(1, 'parse')]}s"))
    result, _ = calibrate_into(load_study(folder), progress=False)
    assert all(abs(r["rel_error"]) < 0.01 for r in result["residuals"]), result["residuals"]  # fits every row
    made = write_predictions(load_study(folder))
    return made.table, true, json.loads((folder / "predictions_meta.json").read_text())


def test_the_truth_breaks_the_fitted_mechanism(fitted: Fitted) -> None:
    """The setting is what it claims: the truth gains beyond 2 threads, the fitted model does not."""
    table, true, _ = fitted
    point = table.set_index(["threads", "phase"])["seconds"]
    assert true[(4, "fetch")] < 0.8 * point[(4, "fetch")] and true[(16, "fetch")] < 0.4 * point[(16, "fetch")]


def test_every_bounds_row_holds_the_truth(fitted: Fitted) -> None:
    """The parse rows (the cores and the work measured at one thread: facts) are bounds and hold
    it; so does the interval the facts alone give each bounds-if row (the meta file)."""
    table, true, meta = fitted
    bounded = table[table["basis"] == "bounds"]
    for row in bounded.itertuples():
        assert _holds(row.low, row.high, true[(row.threads, row.phase)]), row
    assert sorted(bounded["threads"]) == [4, 8, 16] and set(bounded["phase"]) == {"parse"}
    facts_only = meta["interval"]["bounds_if_rows"]
    assert len(facts_only) == 3
    for r in facts_only:
        assert _holds(r["bounds_low"], r["bounds_high"], true[(r["threads"], r["phase"])]), r


def test_a_bounds_if_row_names_its_assumption_and_the_truth_breaks_it(
        fitted: Fitted) -> None:
    table, true, _ = fitted
    rows = table[table["basis"] == "bounds-if"]
    assert set(rows["phase"]) == {"fetch"} and len(rows) == 3
    for named in rows["assumes"]:
        assert "$db_bandwidth fitted by the calibration" in named and "$growth a value chosen" in named
    missed = [r for r in rows.itertuples() if not _holds(r.low, r.high, true[(r.threads, r.phase)])]
    assert missed, "the bounds-if rows all hold the truth: the label would not be earned"
