"""A small real service for the traces-to-model benchmark (``benchmarks/otel_real_system.py``).

An HTTP server on 127.0.0.1 whose connections are handed to a fixed pool of worker threads
(``workers``), as a threaded control-system gateway does. Each request works for an
exponential time (sleeping, so the machine's other load barely disturbs it), takes a global
lock for a short critical section, and reads a row from a real SQLite file, each in a span of
the OpenTelemetry SDK. The spans are written as OTLP JSON lines, the format the collector's
file exporter writes, by a small exporter below (the SDK itself writes OTLP only to a
network endpoint). A load generator sends Poisson arrivals, each on its own thread (an open
workload), and records each response time as the client sees it.

Needs ``opentelemetry-sdk`` (the ``dev`` extra).
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Tracer, get_current_span

CPU_KEY = "process.cpu.time"  # semantic-convention name, as a span attribute: the span's own CPU seconds
# the front end's receive stamp, as a server span carries a captured request header (semantic
# convention http.request.header.<key>); here the load generator plays the proxy and stamps it
START_KEY = "http.request.header.x-request-start"
ACCEPTED_KEY = "diagnostic.accepted_unix_nano"  # when the acceptor thread took the connection (diagnosis only)
_cpu = threading.local()  # per thread: the CPU seconds of the children of each open span


@contextmanager
def cpu_span(tracer: Tracer, name: str, kind: SpanKind = SpanKind.INTERNAL) -> Iterator[None]:
    """A span recording the thread CPU time of its own work (less its children's) as ``process.cpu.time``."""
    stack: list[float] = _cpu.__dict__.setdefault("stack", [])
    with tracer.start_as_current_span(name, kind=kind) as span:
        stack.append(0.0)
        t0 = time.thread_time()
        try:
            yield
        finally:
            total = time.thread_time() - t0
            span.set_attribute(CPU_KEY, max(total - stack.pop(), 0.0))
            if stack:
                stack[-1] += total


def _attribute(key: str, value: Any) -> dict[str, Any]:
    """One attribute in the OTLP JSON mapping (a double, an int as a string, or a string array)."""
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"arrayValue": {"values": [{"stringValue": str(v)} for v in value]}}}


class OtlpJsonLines(SpanExporter):
    """Appends each batch of finished spans as one OTLP JSON export request per service."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        by_service: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for s in spans:
            assert s.context is not None
            by_service[str(s.resource.attributes.get("service.name", "unknown"))].append({
                "traceId": f"{s.context.trace_id:032x}", "spanId": f"{s.context.span_id:016x}",
                "parentSpanId": f"{s.parent.span_id:016x}" if s.parent else "", "name": s.name,
                "kind": s.kind.value + 1, "startTimeUnixNano": str(s.start_time), "endTimeUnixNano": str(s.end_time),
                "attributes": [_attribute(k, v) for k, v in (s.attributes or {}).items()]})
        with self._lock, self.path.open("a", encoding="utf-8") as out:
            for service, items in by_service.items():
                out.write(json.dumps({"resourceSpans": [{"resource": {"attributes": [
                    {"key": "service.name", "value": {"stringValue": service}}]},
                    "scopeSpans": [{"scope": {"name": "otel_service"}, "spans": items}]}]}) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


class _PoolServer(ThreadingHTTPServer):
    """Each accepted connection waits for one of ``workers`` threads (not a thread each)."""

    def __init__(self, workers: int, handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.pool = ThreadPoolExecutor(workers)

        self.accepted = threading.local()  # per worker: when the acceptor took its current connection

    def process_request(self, request: Any, client_address: Any) -> None:
        self.pool.submit(self._on_worker, time.time_ns(), request, client_address)

    def _on_worker(self, accepted: int, request: Any, client_address: Any) -> None:
        self.accepted.ns = accepted
        self.accepted.entered = time.time_ns()
        self.process_request_thread(request, client_address)
        self.accepted.left = time.time_ns()


def make_db(path: Path, rows: int = 1000) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE IF NOT EXISTS settings (id INTEGER PRIMARY KEY, value REAL)")
        db.executemany("INSERT OR REPLACE INTO settings VALUES (?, ?)", [(i, i * 0.5) for i in range(rows)])


class Service:
    """The running service: ``with Service(...) as svc: svc.port``; spans land in ``traces``."""

    def __init__(self, folder: Path, *, workers: int, work: float, critical: float, lock: bool = True) -> None:
        self.traces = folder / "traces.jsonl"
        self.db_path = folder / "settings.db"
        make_db(self.db_path)
        self.provider = TracerProvider(resource=Resource.create({"service.name": "gateway"}))
        self.provider.add_span_processor(BatchSpanProcessor(OtlpJsonLines(self.traces)))
        tracer = self.provider.get_tracer("otel_service")
        gate = threading.Lock() if lock else None
        local = threading.local()
        db_path = self.db_path

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True  # the reply's two writes must not wait for a delayed ACK (40 ms)

            def log_message(self, *args: Any) -> None:
                return None

            def handle(self) -> None:
                # the span covers all the worker does for the connection (reading the request,
                # writing the reply), as a server middleware's span does: it is the worker's busy time
                with cpu_span(tracer, "GET /setting", SpanKind.SERVER):
                    super().handle()

            def do_GET(self) -> None:  # noqa: N802 (the http.server hook's name)
                span = get_current_span()  # the server span of handle()
                marks = self.server.accepted  # type: ignore[attr-defined]
                span.set_attribute(ACCEPTED_KEY, marks.ns)
                span.set_attribute("diagnostic.entered_unix_nano", marks.entered)
                span.set_attribute("diagnostic.previous_left_unix_nano", getattr(marks, "left", 0))
                span.set_attribute("diagnostic.thread", threading.get_ident())
                stamp = self.headers.get("X-Request-Start")
                if stamp:
                    span.set_attribute(START_KEY, [stamp])
                asked, t0 = random.expovariate(1 / work), time.perf_counter()
                time.sleep(asked)  # the sleep's overshoot: the wait to run again (a core, the interpreter lock)
                span.set_attribute("diagnostic.work_overshoot_s", time.perf_counter() - t0 - asked)
                with cpu_span(tracer, "critical section"):
                    if gate is not None:
                        with gate:
                            time.sleep(critical)
                    else:
                        time.sleep(critical)
                with cpu_span(tracer, "SELECT settings", SpanKind.CLIENT):
                    if not hasattr(local, "db"):
                        local.db = sqlite3.connect(db_path)
                    key = random.randrange(1000)
                    value = local.db.execute("SELECT value FROM settings WHERE id = ?", (key,)).fetchone()
                body = json.dumps({"value": value[0]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = _PoolServer(workers, Handler)
        self.port = self.server.server_address[1]

    def __enter__(self) -> Service:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.pool.shutdown(wait=True)
        self.server.server_close()
        self.provider.force_flush()
        self.provider.shutdown()


def serve(argv: list[str]) -> None:
    """Run the service in this process until a line arrives on standard input (a process of
    its own, so that the load generator's threads do not share its interpreter lock)."""
    folder, workers, work, critical, lock = Path(argv[0]), int(argv[1]), float(argv[2]), float(argv[3]), argv[4] == "1"
    folder.mkdir(parents=True, exist_ok=True)
    with Service(folder, workers=workers, work=work, critical=critical, lock=lock) as service:
        print(service.port, flush=True)
        sys.stdin.readline()


if __name__ == "__main__":
    serve(sys.argv[1:])
