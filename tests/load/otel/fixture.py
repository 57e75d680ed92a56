"""OTLP JSON traces generated from known laws: a root operation of the ``api`` service that
works for gamma(3ms, 0.5), calls ``db: SELECT settings`` (exp(2ms)), then ``cache: get`` and
``audit: log`` in parallel (lognormal(1ms, 0.5) and exp(1.5ms)). Requests arrive 50 ms apart
on average, so they rarely overlap and the spans show the laws themselves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

T0 = 1_700_000_000 * 10**9


def _span(trace: str, sid: str, parent: str, name: str, start: float, end: float) -> dict[str, Any]:
    return {"traceId": trace, "spanId": sid, "parentSpanId": parent, "name": name, "kind": 2,
            "startTimeUnixNano": str(T0 + int(start * 1e9)), "endTimeUnixNano": str(T0 + int(end * 1e9)),
            "attributes": []}


def _request(service: str, spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name",
                                                            "value": {"stringValue": service}}]},
                               "scopeSpans": [{"scope": {"name": "fixture"}, "spans": spans}]}]}


def traces(n: int, seed: int = 1) -> list[str]:
    """``n`` traces as lines of the collector's file exporter (one export request per service)."""
    rng = np.random.default_rng(seed)
    by_service: dict[str, list[dict[str, Any]]] = {"api": [], "db": [], "cache": [], "audit": []}
    t = 0.0
    for i in range(n):
        t += rng.exponential(0.05)
        trace, root = f"{i + 1:032x}", f"{4 * i + 1:016x}"
        own = rng.gamma(4.0, 0.003 / 4.0)  # gamma(3ms, 0.5): shape 1/cv² = 4
        db_end = t + own + rng.exponential(0.002)
        sigma = np.sqrt(np.log(1 + 0.25))
        cache_end = db_end + rng.lognormal(np.log(0.001) - sigma**2 / 2, sigma)
        audit_end = db_end + rng.exponential(0.0015)
        end = max(cache_end, audit_end)
        by_service["api"].append(_span(trace, root, "", "GET /trim", t, end))
        by_service["db"].append(_span(trace, f"{4 * i + 2:016x}", root, "SELECT settings", t + own, db_end))
        by_service["cache"].append(_span(trace, f"{4 * i + 3:016x}", root, "get", db_end, cache_end))
        by_service["audit"].append(_span(trace, f"{4 * i + 4:016x}", root, "log", db_end, audit_end))
    return [json.dumps(_request(s, spans)) for s, spans in by_service.items()]


RATE, SECONDS = 60.0, 30.0


def held_service(path: Path, *, stretched: bool) -> None:
    """A 2-worker first-come-first-served service under Poisson arrivals (60/s for 30 s, stamped
    with X-Request-Start), each request's span a worker's hold of gamma(11 ms, squared CV 0.5), a
    waiting request's 50 us after the worker freed:
    independent, or twice as long in every other 4 s (``stretched``)."""
    rng = np.random.default_rng(7)
    arrivals = np.cumsum(rng.exponential(1 / RATE, int(RATE * SECONDS)))
    free = [0.0, 0.0]
    spans = []
    for i, a in enumerate(arrivals):
        k = int(np.argmin(free))
        start = a if a >= free[k] else free[k] + 50e-6  # a waiting request: 50 us to hand the worker on
        hold = rng.gamma(2.0, 0.0055)  # 11 ms, squared CV 0.5 (as the real service's)
        if stretched and int(start // 4.0) % 2:
            hold *= 2.0
        free[k] = start + hold
        span = _span(f"{i + 1:032x}", f"{i + 1:016x}", "", "GET /x", start, start + hold)
        stamp = f"t={(T0 + int(a * 1e9)) // 1000}"
        span["attributes"] = [{"key": "http.request.header.x-request-start",
                               "value": {"arrayValue": {"values": [{"stringValue": stamp}]}}}]
        spans.append(span)
    path.write_text(json.dumps(_request("api", spans)) + "\n")
