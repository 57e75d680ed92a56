"""One replication's latencies per request class, read from its records while it runs.

A run stopped at a stated precision looks at its replications between rounds, and a single
long run extended to a precision looks at itself between extensions: both need each request
class's latencies (successful, not warm-up, in the order the requests started) without
turning the records into a table, which would consume them (``results.columns_frame``) while
the run may still go on. ``class_latencies`` reads the typed column buffers in place.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simstack.tables.records import REQUEST, Recorder, name_list
from simstack.tables.results import mser5

_COLUMN = {name: i for i, (name, _) in enumerate(REQUEST.columns)}


def class_latencies(recorder: Recorder, warmup: float | str) -> dict[str, np.ndarray]:
    """Per request class, one replication's latencies of successful recorded requests in the
    order they started, read from its records without consuming them (a run in progress
    goes on recording). ``warmup`` in seconds, or ``"mser5"``: the cut the run's requests
    table makes (``results.mser5`` over every request's latency in order of completion)."""
    columns = recorder.requests
    columns.flush()
    if not len(columns):
        return {}

    def column(name: str, dtype: Any) -> np.ndarray:
        return np.frombuffer(columns.buffers[_COLUMN[name]], dtype=dtype)

    start, end = column("start", np.float64), column("end", np.float64)
    latency = end - start
    keep = ~column("warmup", np.int8).astype(bool) & column("ok", np.int8).astype(bool)
    if warmup == "mser5":
        by_end = np.argsort(end, kind="stable")
        cut = np.zeros(end.size, dtype=bool)
        cut[by_end[:mser5(latency[by_end])]] = True
        keep &= ~cut
    elif float(warmup) > 0:
        keep &= start >= float(warmup)
    codes = column("request", np.int32)
    names = name_list(columns.names)
    out: dict[str, np.ndarray] = {}
    for code in np.unique(codes[keep]):
        mask = keep & (codes == code)
        order = np.argsort(start[mask], kind="stable")
        out[names[code]] = latency[mask][order]
    return out

