"""OTLP JSON traces generated from known laws: a root operation of the ``api`` service that
works for gamma(3ms, 0.5), calls ``db: SELECT settings`` (exp(2ms)), then ``cache: get`` and
``audit: log`` in parallel (lognormal(1ms, 0.5) and exp(1.5ms)). Requests arrive 50 ms apart
on average, so they rarely overlap and the spans show the laws themselves."""

from __future__ import annotations

import json
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
