"""Records are filled by name: each row builder's keywords are its schema's columns, so a
producer cannot put a value in the wrong column, and the tables read them back by name."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

from simstack.tables.records import DEADLINE, DEADLINE_COLUMNS, REQUEST, STEP, Recorder, Schema, parts
from simstack.tables.results import deadlines_table, requests_frame, steps_frame
from simstack.tables.rows import request_row, step_row
from simstack.tables.streamstats import SummaryRecorder


def _keywords(method: object) -> list[str]:
    params = inspect.signature(method).parameters  # type: ignore[arg-type]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for name, p in params.items() if name != "self")
    return [name for name in params if name != "self"]


def _columns(schema: Schema) -> list[str]:
    """The schema's columns as a producer names them: the request object ``req`` fills ``id``."""
    return ["req" if name == "id" else name for name, _ in schema.columns]


def test_a_rows_keywords_are_its_schemas_columns() -> None:
    assert _keywords(request_row) == _columns(REQUEST)
    assert _keywords(step_row) == _columns(STEP)
    for recorder in (Recorder, SummaryRecorder):  # a deadline row's request name and lateness follow from the rest
        assert _keywords(recorder.deadline) == [c for c in _columns(DEADLINE) if c not in ("request", "lateness")]


def test_records_land_in_the_columns_they_were_given_by_name() -> None:
    rec = Recorder(rep=4, record_steps=True)
    req = SimpleNamespace(id=7, cls="read", warmup=False, start=1.0)
    rec.request(request_row(reason="", ok=True, end=3.5, start=1.0, warmup=False, item=2, workload="w",
                            request="read", parent=-1, req=req))
    rec.step(step_row(end=3.5, service=2.0, wait=0.5, start=1.0, component="db", step="query", request="read",
                      req=req))
    rec.deadline(finished_after=2.5, deadline=2.0, step="query", req=req)
    rec.close()
    (request,) = requests_frame(parts([rec], "requests")).to_dict("records")
    assert request == {"rep": 4, "id": 7, "parent": -1, "request": "read", "workload": "w", "item": 2,
                       "warmup": False, "start": 1.0, "end": 3.5, "ok": True, "reason": "", "latency": 2.5}
    (step,) = steps_frame(parts([rec], "steps")).to_dict("records")
    assert step == {"rep": 4, "id": 7, "request": "read", "step": "query", "component": "db", "start": 1.0,
                    "wait": 0.5, "service": 2.0, "end": 3.5}
    (miss,) = deadlines_table(rec.deadlines).to_dict("records")
    assert list(miss) == list(DEADLINE_COLUMNS)
    assert miss == {"rep": 4, "id": 7, "request": "read", "step": "query", "deadline": 2.0, "finished_after": 2.5,
                    "lateness": 0.5}
