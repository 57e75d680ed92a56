"""Property: any model document either runs cleanly or is refused with a located error.

A Hypothesis strategy writes model documents: mostly valid random combinations of hosts,
servers, thread pools, locks, queues, databases and links, request classes built from
every kind of step, and finite or short workloads; and broken ones, made by one mutation
of a valid document (wrong kind, unknown reference, negative or zero value, malformed
unit, parallel limit 0, missing key, unknown key, wrong type, malformed section or step).
``build_spec`` followed by a short ``simulate`` must then either return a result that
satisfies the run invariants or raise ``ModelError`` / ``ConfigError``: never any other
exception, never a hang.

Request classes reference only later classes (calls, sends and queue handlers form a
DAG) so that valid documents cannot describe an unbounded cascade of work; the few inputs
known to crash or hang the engine are kept out of the random search and pinned instead by
the regression tests at the end of this file.
"""

from __future__ import annotations

import copy
import math
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import assume, given, note, settings
from hypothesis import strategies as st

from simstack import ConfigError, ModelError, simulate
from simstack.load.loader import build_spec
from simstack.testing import check_invariants

HORIZON = 0.2  # seconds; generated rates and durations keep a run to a few hundred events
MAX_LEAVES = 40  # leaf steps per generated top-level request, sub-requests included
EXAMPLE_TIME_LIMIT = 10.0  # seconds of wall time; a typical example takes a few tens of milliseconds


# -- time limit ---------------------------------------------------------------------------
class Hang(Exception):
    pass


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """Run fn, raising Hang if it takes longer (SIGALRM: main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("needs the main thread for SIGALRM")

    def on_alarm(_signum: int, _frame: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- building blocks ----------------------------------------------------------------------
DURATIONS = st.one_of(
    st.sampled_from(["exp(2ms)", "lognormal(1ms, 0.5)", "gamma(mean=1ms, cv=2)", "uniform(100us, 3ms)",
                     "normal(1ms, 0.3ms)", "const(500us)", "3ms", "250 us", 0, 0.002,
                     {"dist": "exp", "mean": "1ms"}, {"dist": "gamma", "mean": "2ms", "cv": 0.5}]),
    st.floats(1e-5, 5e-3).map(lambda x: f"exp({x * 1e3:.4g}ms)"),
)
POSITIVE_DURATIONS = st.sampled_from(["exp(2ms)", "lognormal(1ms, 0.5)", "5ms", "uniform(1ms, 3ms)", 0.003])
SIZES = st.sampled_from(["2KB", "exp(10KB)", 512, "1MiB", "uniform(1KB, 4KB)"])
BANDWIDTHS = st.sampled_from(["1Gb/s", "100MB/s", "inf", 5e7])
COUNTS = st.integers(1, 4) | st.just("inf")


class Names:
    """What a request class may refer to while its steps are drawn."""

    def __init__(self, hosts: list[str], comps: dict[str, dict[str, Any]], n_requests: int,
                 handlers: dict[str, int], flags: list[str]):
        self.hosts = hosts
        self.comps = comps
        self.n_requests = n_requests
        self.handlers = handlers  # queue name -> index of its handler class
        self.flags = flags

    def of_kind(self, *kinds: str) -> list[str]:
        return [n for n, c in self.comps.items() if c["kind"] in kinds]


@st.composite
def modifiers(draw: st.DrawFn, names: Names) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["name"] = draw(st.sampled_from(["fetch", "compute", "reply", "scan record", "step"]))
    if draw(st.integers(0, 5)) == 0:
        out["deadline"] = draw(st.sampled_from(["2ms", "10ms", 0.05]))
        out["on_miss"] = draw(st.sampled_from(["record", "fail"]))
    if names.flags and draw(st.integers(0, 5)) == 0:
        out[draw(st.sampled_from(["when", "unless"]))] = draw(st.sampled_from(names.flags))
    return out


@st.composite
def step(draw: st.DrawFn, names: Names, index: int, depth: int, scoped: bool) -> dict[str, Any]:
    """One step of request class ``index``; ``scoped``: a cpu step has a host to run on."""
    later = [f"r{j}" for j in range(index + 1, names.n_requests)]
    options = ["delay"]
    if scoped:
        options += ["cpu", "cpu"]
    if names.of_kind("server", "database", "link"):
        options += ["call", "call"]
    if later:
        options += ["call_request", "send_request"]
    if [q for q, h in names.handlers.items() if h > index]:
        options.append("send_queue")
    if depth < 2:
        if names.of_kind("threads", "lock"):
            options += ["hold", "hold"]
        options += ["parallel", "steps"]
    action = draw(st.sampled_from(options))
    out = draw(modifiers(names))

    def body(inner_scoped: bool) -> list[dict[str, Any]]:
        return draw(st.lists(step(names, index, depth + 1, inner_scoped), min_size=1, max_size=2))

    if action == "delay":
        out["delay"] = draw(DURATIONS)
    elif action == "cpu":
        if draw(st.integers(0, 4)) == 0:
            out["cpu"] = {"demand": draw(DURATIONS), "per_byte": "1ns", "bytes": draw(SIZES)}
        else:
            out["cpu"] = draw(DURATIONS)
    elif action == "call":
        target = draw(st.sampled_from(names.of_kind("server", "database", "link")))
        out["call"] = target
        kind = names.comps[target]["kind"]
        if kind == "server" and draw(st.booleans()):
            out["service"] = draw(DURATIONS)
        elif kind == "database":
            if draw(st.booleans()):
                out["bytes"] = draw(SIZES)
            if draw(st.booleans()):
                out["write"] = draw(st.booleans())
            if draw(st.integers(0, 3)) == 0:
                out["latency"] = draw(DURATIONS)
        elif kind == "link" and draw(st.booleans()):
            out["bytes"] = draw(SIZES)
    elif action == "call_request":
        out["call"] = draw(st.sampled_from(later))
    elif action == "send_request":
        out["send"] = draw(st.sampled_from(later))
    elif action == "send_queue":
        out["send"] = draw(st.sampled_from([q for q, h in names.handlers.items() if h > index]))
    elif action == "hold":
        target = draw(st.sampled_from(names.of_kind("threads", "lock")))
        comp = names.comps[target]
        out["hold"] = target
        if comp.get("per"):
            out["key"] = draw(st.sampled_from(["item", "dev1", "dev2"]))
        if comp.get("readers") and draw(st.booleans()):
            out["mode"] = "read"
        out["steps"] = body(scoped or comp["kind"] == "threads")
    elif action == "parallel":
        out["parallel"] = {"count": draw(st.integers(1, 3))}
        if draw(st.booleans()):
            out["parallel"]["limit"] = draw(COUNTS)
        out["steps"] = body(scoped)
    else:
        out["steps"] = body(scoped)
    return out


@st.composite
def component(draw: st.DrawFn, kind: str, hosts: list[str], handler: str | None) -> dict[str, Any]:
    if kind == "threads":
        out = {"kind": "threads", "host": draw(st.sampled_from(hosts)), "size": draw(COUNTS)}
        if draw(st.booleans()):
            out["priority"] = draw(st.integers(-2, 20))
        if draw(st.booleans()):
            out["when_full"] = draw(st.sampled_from(["block", "drop"]))
            out["queue_capacity"] = draw(st.integers(0, 3) | st.just("inf"))
        return out
    if kind == "server":
        return {"kind": "server", "servers": draw(COUNTS), "service": draw(DURATIONS)}
    if kind == "lock":
        out = {"kind": "lock"}
        if draw(st.booleans()):
            out["per"] = "device"
        if draw(st.booleans()):
            out["readers"] = True
        return out
    if kind == "queue":
        return {"kind": "queue", "host": draw(st.sampled_from(hosts)), "handler": handler,
                "capacity": draw(COUNTS), "when_full": draw(st.sampled_from(["drop", "block"])),
                "consumers": draw(st.integers(1, 2)), "priority": draw(st.integers(0, 5))}
    if kind == "database":
        out = {"kind": "database", "latency": draw(POSITIVE_DURATIONS), "connections": draw(COUNTS),
               "bandwidth": draw(BANDWIDTHS)}
        if draw(st.booleans()):
            out["growth"] = {"per": "1MB", "factor": draw(st.sampled_from([0, 0.1, 2]))}
            out["stored"] = draw(st.sampled_from([0, "10KB", "5MB"]))
        return out
    assert kind == "link"
    return {"kind": "link", "latency": draw(POSITIVE_DURATIONS), "bandwidth": draw(BANDWIDTHS)}


@st.composite
def workload(draw: st.DrawFn, request: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(["open", "closed", "periodic", "protocol"]))
    out: dict[str, Any] = {"type": kind, "request": request}
    if kind == "open":
        if draw(st.booleans()):
            out["rate"] = draw(st.sampled_from([20, "50/s", "100Hz", "3000/min", 150.0]))
        else:
            out["interarrival"] = draw(POSITIVE_DURATIONS)
        out["count"] = draw(st.integers(1, 30) | st.just("inf"))
        if draw(st.booleans()):
            out["start"] = draw(st.sampled_from([0, "10ms", 0.05]))
    elif kind == "closed":
        out["clients"] = draw(st.integers(1, 3))
        out["think"] = draw(POSITIVE_DURATIONS)
        out["count"] = draw(st.integers(1, 5))  # finite: zero think and zero-time requests hang (ENDLESS)
    elif kind == "periodic":
        if draw(st.booleans()):
            out["frequency"] = draw(st.sampled_from(["100Hz", 360, "50/s"]))
        else:
            out["period"] = draw(st.sampled_from(["10ms", 0.02, "5 ms"]))
        if draw(st.booleans()):
            out["phase"] = draw(st.sampled_from([0, "3ms"]))
        if draw(st.booleans()):
            out["jitter"] = draw(DURATIONS)
        out["copies"] = draw(st.integers(1, 3))
        out["count"] = draw(st.integers(1, 10) | st.just("inf"))
    else:
        out["warmup"] = draw(st.integers(0, 2))
        out["repeat"] = draw(st.integers(1, 5))
        if draw(st.booleans()):
            out["gap"] = draw(POSITIVE_DURATIONS)
    return out


@st.composite
def valid_models(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": "generated"}
    hosts = {f"h{i}": {"cores": draw(st.integers(1, 4)),
                       "discipline": draw(st.sampled_from(["fifo", "ps", "priority"]))}
             for i in range(draw(st.integers(0, 2)))}
    for spec in hosts.values():
        if draw(st.integers(0, 3)) == 0:
            spec["speed"] = draw(st.sampled_from([0.5, 2, 1.5]))
    n_requests = draw(st.integers(1, 3))
    kinds = draw(st.lists(st.sampled_from(["threads", "server", "lock", "queue", "database", "link"]),
                          max_size=5))
    comps: dict[str, dict[str, Any]] = {}
    handlers: dict[str, int] = {}
    for i, kind in enumerate(kinds):
        if kind in ("threads", "queue") and not hosts:
            continue
        handler = None
        if kind == "queue":
            if n_requests < 2:
                continue
            handlers[f"c{i}"] = draw(st.integers(1, n_requests - 1))  # never r0, which workloads drive
            handler = f"r{handlers[f'c{i}']}"
        comps[f"c{i}"] = draw(component(kind, list(hosts), handler))
    flags = ["fast_path", "audit"][: draw(st.integers(0, 2))]
    names = Names(list(hosts), comps, n_requests, handlers, flags)
    requests: dict[str, Any] = {}
    for i in range(n_requests):
        own_host = draw(st.sampled_from(list(hosts))) if hosts and draw(st.booleans()) else None
        scoped = own_host is not None or i in handlers.values()
        steps = draw(st.lists(step(names, i, 0, scoped), min_size=1, max_size=3))
        if own_host is None and draw(st.booleans()):
            requests[f"r{i}"] = steps  # the short form: a bare list of steps
        else:
            requests[f"r{i}"] = {"steps": steps}
            if own_host is not None:
                requests[f"r{i}"]["host"] = own_host
                if draw(st.booleans()):
                    requests[f"r{i}"]["priority"] = draw(st.integers(0, 9))
    doc.update({"hosts": hosts, "components": comps, "requests": requests})
    doc["workloads"] = {f"w{k}": draw(workload("r0")) for k in range(draw(st.integers(1, 2)))}
    if flags:
        doc["flags"] = flags if draw(st.booleans()) else {f: draw(st.booleans()) for f in flags}
    if draw(st.integers(0, 3)) == 0:
        doc["parameters"] = {"think_time": {"value": "4ms", "doc": "used as $think_time"}}
        doc["workloads"]["w0"]["think" if doc["workloads"]["w0"]["type"] == "closed" else "doc"] = "$think_time"
    assume(leaf_steps(doc, "r0") <= MAX_LEAVES)
    if not hosts and draw(st.booleans()):
        del doc["hosts"]
    if not comps and draw(st.booleans()):
        del doc["components"]
    return doc


def leaf_steps(doc: dict[str, Any], request: str) -> int:
    """Leaf steps one request of this class runs, counting sub-requests and fan-outs."""

    def count(steps: list[dict[str, Any]]) -> int:
        total = 0
        for item in steps:
            target = item.get("call", item.get("send"))
            if "parallel" in item:
                total += item["parallel"]["count"] * count(item["steps"])
            elif "steps" in item:
                total += count(item["steps"])
            elif isinstance(target, str) and target in doc["requests"]:
                total += 1 + leaf_steps(doc, target)
            elif isinstance(target, str) and doc["components"][target].get("handler"):
                total += 1 + leaf_steps(doc, doc["components"][target]["handler"])
            else:
                total += 1
        return total

    raw = doc["requests"][request]
    return count(raw if isinstance(raw, list) else raw["steps"])


# -- mutations ----------------------------------------------------------------------------
REFERENCE_KEYS = {"call", "send", "hold", "request", "host", "handler", "when", "unless", "kind"}
# Stored volumes and growth factors have their own regression cases in FIXED_TOO below.
NUMERIC_KEYS = {"cores", "size", "servers", "rate", "count", "clients", "period", "frequency", "connections",
                "copies", "repeat", "consumers", "capacity", "queue_capacity", "limit", "delay", "cpu",
                "service", "latency", "think", "interarrival", "gap", "deadline", "bandwidth", "speed",
                "jitter", "demand", "bytes", "warmup", "priority", "start", "phase", "per_byte"}
BAD_NUMBERS = [0, -1, -0.5, "-5ms", "exp(-1ms)", "exp(0)", "lognormal(1ms, 0)", "uniform(5ms, 1ms)", "0/s",
               "gamma(mean=-1ms, cv=1)", math.nan, math.inf, -math.inf, "nan", "inf", "exp(nan)", "1e400"]
BAD_UNITS = ["5 sec", "3 parsecs", "1,5ms", "fast", "exp(2 msec)", "3 per s", "5/fortnight", "12 kg",
             "100 MB per s", "lognormal(1ms)", "weibull(1ms, 2)", "exp(1ms", "2e", "ms"]
WRONG_TYPES = [True, False, "x", "", 3.5, 7, {"a": 1}, [1, 2], [], None, math.nan]
KNOWN_KINDS_MISSPELT = ["servr", "thread", "Lock", "queues", "db", "", 5, None, True]


def sites(node: Any, path: str = "") -> Iterator[tuple[dict | list, Any, str]]:
    """Every (container, key) of the document, depth first, with its dotted path."""
    if isinstance(node, dict):
        for key in list(node):
            yield node, key, f"{path}.{key}" if path else str(key)
            yield from sites(node[key], f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for i in range(len(node)):
            yield node, i, f"{path}[{i}]"
            yield from sites(node[i], f"{path}[{i}]")


def _pick(draw: st.DrawFn, doc: dict, accept: Callable[[Any, Any], bool]) -> tuple[dict | list, Any, str] | None:
    found = [s for s in sites(doc) if accept(s[0], s[1])]
    return draw(st.sampled_from(found)) if found else None


def _is_step(node: Any) -> bool:
    return isinstance(node, dict) and any(a in node for a in ("cpu", "delay", "hold", "call", "send",
                                                                 "parallel", "steps"))


@st.composite
def mutated_models(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(draw(valid_models()))
    kind = draw(st.sampled_from(["wrong_kind", "unknown_reference", "bad_number", "bad_unit", "limit_zero",
                                 "missing_key", "unknown_key", "wrong_type", "bad_section", "bad_step"]))
    note(f"mutation: {kind}")
    site = None
    if kind == "wrong_kind":
        site = _pick(draw, doc, lambda c, k: k == "kind" and isinstance(c, dict))
        if site:
            site[0][site[1]] = draw(st.sampled_from(KNOWN_KINDS_MISSPELT))
    elif kind == "unknown_reference":
        site = _pick(draw, doc, lambda c, k: isinstance(c, dict) and k in REFERENCE_KEYS - {"kind"}
                     and isinstance(c[k], str))
        if site:
            site[0][site[1]] = draw(st.sampled_from(["nope", "r9", "h9", "c99", "undeclared_flag"]))
    elif kind == "bad_number":
        site = _pick(draw, doc, lambda c, k: isinstance(c, dict) and k in NUMERIC_KEYS
                     and not isinstance(c[k], dict | list))
        if site:
            site[0][site[1]] = draw(st.sampled_from(BAD_NUMBERS))
    elif kind == "bad_unit":
        site = _pick(draw, doc, lambda c, k: isinstance(c, dict) and k in NUMERIC_KEYS
                     and not isinstance(c[k], dict | list))
        if site:
            site[0][site[1]] = draw(st.sampled_from(BAD_UNITS))
    elif kind == "limit_zero":
        site = _pick(draw, doc, lambda c, k: isinstance(c, dict) and k == "parallel")
        if site:
            site[0][site[1]][draw(st.sampled_from(["limit", "count"]))] = draw(st.sampled_from([0, -1, 0.5]))
        else:
            first = doc["requests"]["r0"]
            steps = first if isinstance(first, list) else first["steps"]
            steps.append({"parallel": {"count": 2, "limit": 0}, "steps": [{"delay": "1ms"}]})
            site = (steps, len(steps) - 1, "requests.r0 (appended)")
    elif kind == "missing_key":
        site = _pick(draw, doc, lambda c, k: isinstance(c, dict))
        if site:
            del site[0][site[1]]
    elif kind == "unknown_key":
        site = _pick(draw, doc, lambda c, k: isinstance(c[k], dict))
        target = site[0][site[1]] if site else doc
        target[draw(st.sampled_from(["colour", "servers_", "kinds", "timeout"]))] = 1
    elif kind == "wrong_type":
        site = _pick(draw, doc, lambda c, k: True)
        if site:
            container, key, _ = site
            container[key] = draw(st.sampled_from(WRONG_TYPES))
    elif kind == "bad_section":
        section = draw(st.sampled_from(["hosts", "components", "requests", "workloads", "flags", "parameters",
                                        "extras"]))
        doc[section] = draw(st.sampled_from([[1, 2], "text", 3, None, {}, [{"a": 1}]]))
        site = (doc, section, section)
    else:  # bad_step
        site = _pick(draw, doc, lambda c, k: isinstance(c, list) and _is_step(c[k]))
        if site:
            container, key, _ = site
            container[key] = draw(st.sampled_from(
                ["delay 5ms", None, {}, {"delay": "1ms", "cpu": "1ms"}, {"hold": "c0"}, {"parallel": 3},
                 {"steps": []}, {"name": "lonely"}, {"delay": "1ms", "deadline": 0},
                 {"delay": "1ms", "on_miss": "panic"}, {"hold": "c0", "steps": [{"delay": 1}], "mode": "shared"}]))
    note(f"mutated at: {site[2] if site else '(nothing applicable)'}")
    return doc


def run_or_refuse(doc: Any) -> str:
    """The property itself: a clean result or a simstack error, nothing else, in bounded time."""
    return within(EXAMPLE_TIME_LIMIT, lambda: _run_or_refuse(doc))


def _run_or_refuse(doc: Any) -> str:
    try:
        spec = build_spec(doc, None)
        res = simulate(spec, seed=3, replications=2, horizon=HORIZON, record_steps=True)
    except (ModelError, ConfigError) as exc:
        assert str(exc), "an error without a message"
        return "refused"
    check_invariants(res)
    return "ran"


@settings(max_examples=150)
@given(valid_models())
def test_valid_models_run_and_satisfy_the_invariants(doc: dict[str, Any]) -> None:
    note(repr(doc))
    run_or_refuse(doc)


@settings(max_examples=150)
@given(mutated_models())
def test_broken_models_are_refused_with_a_simstack_error(doc: dict[str, Any]) -> None:
    note(repr(doc))
    run_or_refuse(doc)


def test_the_generator_mostly_writes_models_that_run() -> None:
    """Most generated valid documents must really run: otherwise the property is vacuous."""
    outcomes = []

    @settings(max_examples=40, database=None)
    @given(valid_models())
    def collect(doc: dict[str, Any]) -> None:
        outcomes.append(run_or_refuse(doc))

    collect()
    assert outcomes.count("ran") >= 0.6 * len(outcomes), outcomes


# -- regressions ---------------------------------------------------------------------------
# Inputs that once crashed, corrupted or hung the engine: each must stay refused or clean.
OPEN_ONE = {"w": {"type": "open", "request": "a", "interarrival": "50ms", "count": 1}}  # one arrival, inside HORIZON
CPU_ON_H = {"hosts": {"h": {"cores": 1}}, "workloads": OPEN_ONE}

FIXED = {
    "settings-not-a-mapping": {"requests": {"a": [{"delay": 1}]}, "workloads": OPEN_ONE, "settings": [1, 2]},
    "settings-a-string": {"requests": {"a": [{"delay": 1}]}, "workloads": OPEN_ONE, "settings": "fast"},
    "cores-infinite": {**CPU_ON_H, "hosts": {"h": {"cores": math.inf}},
                       "requests": {"a": {"host": "h", "steps": [{"cpu": 1}]}}},
    "cores-nan": {**CPU_ON_H, "hosts": {"h": {"cores": math.nan}},
                  "requests": {"a": {"host": "h", "steps": [{"cpu": 1}]}}},
    "priority-infinite": {**CPU_ON_H, "requests": {"a": {"host": "h", "priority": math.inf, "steps": [{"cpu": 1}]}}},
    "queue-capacity-infinite": {**CPU_ON_H, "components": {"t": {"kind": "threads", "host": "h", "size": 1,
                                                                 "queue_capacity": math.inf}},
                                "requests": {"a": [{"hold": "t", "steps": [{"delay": 1}]}]}},
    "count-nan": {"requests": {"a": [{"delay": 1}]},
                  "workloads": {"w": {"type": "open", "request": "a", "rate": 1, "count": math.nan}}},
    "kind-a-list": {"components": {"s": {"kind": ["server"]}}, "requests": {"a": [{"delay": 1}]},
                    "workloads": OPEN_ONE},
    "call-target-a-list": {"components": {"s": {"kind": "server", "service": 1}},
                           "requests": {"a": [{"call": ["s"]}]}, "workloads": OPEN_ONE},
    "send-target-a-dict": {"requests": {"a": [{"send": {"b": 1}}], "b": [{"delay": 1}]}, "workloads": OPEN_ONE},
    "when-flag-a-list": {"flags": ["f"], "requests": {"a": [{"delay": 1, "when": ["f"]}]}, "workloads": OPEN_ONE},
    "gamma-cv-infinite": {"requests": {"a": [{"delay": "gamma(1ms, inf)"}]}, "workloads": OPEN_ONE},
    "delay-nan": {"requests": {"a": [{"delay": math.nan}]}, "workloads": OPEN_ONE},
    "delay-infinite": {"requests": {"a": [{"delay": math.inf}]}, "workloads": OPEN_ONE},
    "lognormal-cv-nan": {"requests": {"a": [{"delay": "lognormal(1ms, nan)"}]}, "workloads": OPEN_ONE},
    "open-start-negative": {"requests": {"a": [{"delay": 1}]},
                            "workloads": {"w": {"type": "open", "request": "a", "interarrival": "10ms", "start": -5,
                                                "count": 2}}},
    "periodic-phase-negative": {"requests": {"a": [{"delay": 1}]},
                                "workloads": {"w": {"type": "periodic", "request": "a", "period": "10ms", "phase": -1,
                                                    "count": 2}}},
    "cpu-per-byte-negative": {
        **CPU_ON_H, "requests": {"a": {"host": "h", "steps": [{"cpu": {"demand": "1ms", "per_byte": -1,
                                                                         "bytes": "1KB"}}]}}},
    # These used to run forever.
    "link-bandwidth-infinite": {"components": {"net": {"kind": "link", "latency": "1ms", "bandwidth": "inf"}},
                                "requests": {"a": [{"call": "net", "bytes": "2KB"}]}, "workloads": OPEN_ONE},
    "normal-mean-far-below-zero": {"requests": {"a": [{"delay": "normal(-100ms, 1ms)"}]}, "workloads": OPEN_ONE},
    "open-interarrival-zero-without-count": {"requests": {"a": [{"delay": "1ms"}]},
                                             "workloads": {"w": {"type": "open", "request": "a", "interarrival": 0}}},
}

FIXED_TOO = {
    "send-cycle-in-zero-time": {"requests": {"a": [{"send": "a"}]}, "workloads": OPEN_ONE},
    "queue-handler-feeds-its-own-queue": {
        **CPU_ON_H, "components": {"q": {"kind": "queue", "host": "h", "handler": "b", "capacity": 5}},
        "requests": {"a": [{"send": "q"}], "b": [{"send": "q"}]}},
    "workload-drives-a-queue-handler-directly": {
        **CPU_ON_H, "components": {"q": {"kind": "queue", "host": "h", "handler": "a"}},
        "requests": {"a": [{"cpu": "1ms"}], "b": [{"send": "q"}]}},
    # Accepted, then negative durations reach the clock: negative latencies.
    "database-growth-factor-negative": {
        "components": {"d": {"kind": "database", "latency": "1ms", "growth": {"per": "1KB", "factor": -10}}},
        "requests": {"a": [{"call": "d", "bytes": "1MB", "write": True}, {"call": "d"}]},
        "workloads": OPEN_ONE},
    "database-stored-negative": {
        "components": {"d": {"kind": "database", "latency": "1ms", "stored": "-1GB",
                             "growth": {"per": "1MB", "factor": 1}}},
        "requests": {"a": [{"call": "d"}]}, "workloads": OPEN_ONE},
}

ENDLESS = {
    "closed-loop-in-zero-time": {"requests": {"a": [{"delay": 0}]},
                                 "workloads": {"w": {"type": "closed", "request": "a", "clients": 1}}},
}


@pytest.mark.parametrize("doc", list(FIXED.values()), ids=list(FIXED))
def test_once_crashing_inputs_are_refused_or_run_cleanly(doc: dict[str, Any]) -> None:
    run_or_refuse(doc)


@pytest.mark.parametrize("doc", list(FIXED_TOO.values()), ids=list(FIXED_TOO))
def test_once_corrupting_inputs_are_refused_or_run_cleanly(doc: dict[str, Any]) -> None:
    run_or_refuse(doc)


@pytest.mark.parametrize("doc", list(ENDLESS.values()), ids=list(ENDLESS))
def test_once_endless_inputs_are_refused_and_end(doc: dict[str, Any]) -> None:
    within(3, lambda: _run_or_refuse(doc))
