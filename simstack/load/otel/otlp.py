"""Reading OTLP JSON trace files as the OpenTelemetry Collector's file exporter writes them.

A span is one timed piece of work of one service (``service.name`` of its resource): an HTTP
handler, a database call, an internal function. Its ``parentSpanId`` says who waited for it,
so the spans of one ``traceId`` form the tree of one request through the stack. The file
holds one ``ExportTraceServiceRequest`` per line (``{"resourceSpans": [...]}``); ids are hex
strings and times 64-bit integers of nanoseconds, written as strings (the OTLP/JSON mapping).

A received trace file is data: its size and span count are bounded before and while it is
read, and every refusal names the file, the line and the key.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simstack.errors import DataError

MAX_BYTES = 200_000_000  # a day of a small stack's spans is tens of MB
MAX_SPANS = 1_000_000
MAX_NAME = 200  # characters of a service or span name
MAX_DURATION_NS = 86_400 * 10**9  # a span longer than a day is not a request's work
_HEX = re.compile(r"[0-9a-fA-F]{1,64}\Z")


@dataclass(frozen=True)
class Span:
    """One span: what ran (service, name), in which request (trace) under which caller."""

    service: str
    name: str
    trace: str
    span_id: str
    parent: str  # "" for a root span
    start_ns: int
    end_ns: int
    line: int
    cpu_s: float | None = None  # the span's ``process.cpu.time`` attribute (s of CPU), if recorded
    received_ns: int | None = None  # when the front end received the request (X-Request-Start), if captured


CPU_KEY = "process.cpu.time"  # the semantic-convention name, here as a span attribute: CPU seconds the span used
# a captured request header (semantic convention http.request.header.<key>, a string array): the
# receive stamp a front end (nginx, HAProxy, a load balancer) adds, "t=<time since the epoch>"
RECEIVED_KEY = "http.request.header.x-request-start"
_STAMP = re.compile(r"\s*(?:t=)?([0-9]{1,20}(?:\.[0-9]{1,9})?)\s*\Z")


def _cpu(span: dict[str, Any], source: str, line: int) -> float | None:
    """The span's CPU seconds from its ``process.cpu.time`` attribute, or None without one."""
    attributes = span.get("attributes", [])
    for item in attributes if isinstance(attributes, list) else []:
        if isinstance(item, dict) and item.get("key") == CPU_KEY:
            value = item.get("value")
            raw = value.get("doubleValue", value.get("intValue")) if isinstance(value, dict) else None
            try:
                cpu = float(raw)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                cpu = -1.0
            if not 0 <= cpu <= MAX_DURATION_NS / 1e9:
                raise DataError(f"{_where(source, line, 'span.attributes.' + CPU_KEY)}: expected a doubleValue "
                                f"of CPU seconds >= 0, got {str(raw)[:40]!r}")
            return cpu
    return None


def stamp_ns(text: str) -> int | None:
    """An ``X-Request-Start`` value (``t=`` and a time since the epoch) in nanoseconds, its unit
    told by its size as the APM agents that read this header do: seconds (nginx's ``$msec``,
    ``1700000000.123``), milliseconds (HAProxy's ``%Ts%ms``), microseconds (Apache's ``%t``) or
    nanoseconds; None when it is not such a time (after 2001 and before 2286)."""
    match = _STAMP.match(text)
    if match is None:
        return None
    whole, _, fraction = match.group(1).partition(".")
    value = int(whole)
    for lowest, unit in ((10**17, 1), (10**14, 10**3), (10**11, 10**6), (10**9, 10**9)):
        if value >= lowest:
            nanos = value * unit + int(fraction.ljust(9, "0")) * unit // 10**9
            return nanos if nanos < 10**19 else None
    return None


def _received(span: dict[str, Any], start: int, source: str, line: int) -> int | None:
    """The receive time of the span's ``X-Request-Start`` header, if captured; a stamp after the
    span's start (another host's clock) counts as the start."""
    attributes = span.get("attributes", [])
    for item in attributes if isinstance(attributes, list) else []:
        if isinstance(item, dict) and item.get("key") == RECEIVED_KEY:
            value = item.get("value")
            raw: Any = value.get("stringValue") if isinstance(value, dict) else None
            if raw is None and isinstance(value, dict) and isinstance(value.get("arrayValue"), dict):
                values = value["arrayValue"].get("values")
                first = values[0] if isinstance(values, list) and values else None
                raw = first.get("stringValue") if isinstance(first, dict) else None
            nanos = stamp_ns(raw) if isinstance(raw, str) else None
            if nanos is None or start - nanos > MAX_DURATION_NS:
                raise DataError(f"{_where(source, line, 'span.attributes.' + RECEIVED_KEY)}: expected a receive "
                                f"stamp 't=<time since the epoch>' at most a day before the span's start, "
                                f"got {str(raw)[:40]!r}")
            return min(nanos, start)
    return None


def _where(source: str, line: int, key: str) -> str:
    return f"{source}: line {line}: {key}"


def _list(obj: Any, key: str, source: str, line: int, path: str) -> list[Any]:
    value = obj.get(key, []) if isinstance(obj, dict) else None
    if not isinstance(value, list):
        raise DataError(f"{_where(source, line, path + key)}: expected a list, got {type(value).__name__}")
    return value


def _text(span: dict[str, Any], key: str, source: str, line: int, *, hex_id: bool = False,
          required: bool = True) -> str:
    value = span.get(key, "")
    if not isinstance(value, str) or (required and not value):
        raise DataError(f"{_where(source, line, 'span.' + key)}: expected a non-empty string, got {value!r:.60}")
    if len(value) > MAX_NAME:
        raise DataError(f"{_where(source, line, 'span.' + key)}: longer than {MAX_NAME} characters")
    if hex_id and value and not _HEX.match(value):
        raise DataError(f"{_where(source, line, 'span.' + key)}: expected a hex id, got {value!r:.60}")
    return value


def _nanos(span: dict[str, Any], key: str, source: str, line: int) -> int:
    value = span.get(key)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or (isinstance(value, str)
                                                                        and not value.isdigit()):
        raise DataError(f"{_where(source, line, 'span.' + key)}: expected nanoseconds as a whole number, "
                        f"got {value!r:.60}")
    nanos = int(value)
    if nanos <= 0 or nanos >= 2**63:
        raise DataError(f"{_where(source, line, 'span.' + key)}: {nanos} is not a Unix time in nanoseconds")
    return nanos


def _service(resource: Any) -> str:
    attributes = resource.get("attributes", []) if isinstance(resource, dict) else []
    for item in attributes if isinstance(attributes, list) else []:
        if isinstance(item, dict) and item.get("key") == "service.name":
            value = item.get("value")
            if isinstance(value, dict) and isinstance(value.get("stringValue"), str) and value["stringValue"]:
                return str(value["stringValue"])[:MAX_NAME]
    return "unknown_service"


def _spans_of(request: Any, source: str, line: int, out: list[Span]) -> None:
    if not isinstance(request, dict) or "resourceSpans" not in request:
        raise DataError(f"{_where(source, line, 'resourceSpans')}: expected an object with resourceSpans "
                        f"(an OTLP JSON trace export)")
    for rs in _list(request, "resourceSpans", source, line, ""):
        service = _service(rs.get("resource") if isinstance(rs, dict) else None)
        for ss in _list(rs, "scopeSpans", source, line, "resourceSpans[]."):
            for span in _list(ss, "spans", source, line, "scopeSpans[]."):
                if not isinstance(span, dict):
                    raise DataError(f"{_where(source, line, 'spans[]')}: expected an object")
                start, end = _nanos(span, "startTimeUnixNano", source, line), _nanos(span, "endTimeUnixNano",
                                                                                   source, line)
                if not 0 <= end - start <= MAX_DURATION_NS:
                    raise DataError(f"{_where(source, line, 'span.endTimeUnixNano')}: {end} is before the start "
                                    f"{start} or more than a day after it")
                out.append(Span(service, _text(span, "name", source, line), _text(span, "traceId", source, line,
                                hex_id=True), _text(span, "spanId", source, line, hex_id=True),
                                _text(span, "parentSpanId", source, line, hex_id=True, required=False),
                                start, end, line, _cpu(span, source, line), _received(span, start, source, line)))
                if len(out) > MAX_SPANS:
                    raise DataError(f"{source}: line {line}: more than {MAX_SPANS:,} spans; import a shorter window")


def read_otlp(path: Path) -> list[Span]:
    """Every span of an OTLP JSON file (one export request per line, or one pretty-printed)."""
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    if path.stat().st_size > MAX_BYTES:
        raise DataError(f"{path}: larger than {MAX_BYTES // 1_000_000} MB, refused; import a shorter window")
    source = path.name
    text = path.read_bytes().decode("utf-8", errors="replace")
    spans: list[Span] = []
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):
        whole = None
    if isinstance(whole, dict):
        _spans_of(whole, source, 1, spans)
    else:
        for number, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                request = json.loads(raw)
            except (ValueError, RecursionError) as exc:
                raise DataError(f"{source}: line {number}: not JSON ({str(exc)[:80]})") from None
            _spans_of(request, source, number, spans)
    if not spans:
        raise DataError(f"{source}: holds no spans (expected OTLP JSON: resourceSpans[].scopeSpans[].spans[])")
    return spans
