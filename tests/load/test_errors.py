"""Every bad input in a model file is refused before simulated time starts, with one
located message: ``file: key.path: what is wrong (the value), what was expected``.

Each test writes a small model to ``tmp_path`` (the valid ``BASE`` with one change), loads
it and pins the whole message, so a message that loses its file, its key path, the echoed
value or the list of valid options fails here.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import simstack
from simstack import ModelError
from simstack.kinds import REGISTRY
from simstack.load.loader import build_spec

BASE_TEXT = """
hosts:
  app: {cores: 2}
components:
  pool: {kind: threads, host: app, size: 4}
  db: {kind: database, latency: 1ms, connections: 2}
  srv: {kind: server, service: exp(2ms)}
  mutex: {kind: lock}
  device_lock: {kind: lock, per: device}
requests:
  read:
    steps:
      - hold: pool
        steps: [{cpu: 1ms}, {call: db}]
workloads:
  users: {type: open, rate: 10/s, request: read}
"""
BASE: dict[str, Any] = yaml.safe_load(BASE_TEXT)
KINDS = ", ".join(sorted(REGISTRY))


def model(*edits: tuple[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """BASE with ``(dotted.path, value)`` edits applied; list items as ``steps.0``."""
    doc = copy.deepcopy(BASE)
    for dotted, value in edits:
        *parents, last = dotted.split(".")
        node: Any = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node.setdefault(key, {})
        node[int(last) if isinstance(node, list) else last] = value
    for dotted in drop:
        *parents, last = dotted.split(".")
        node = doc
        for key in parents:
            node = node[key]
        del node[last]
    return doc


def steps(*items: Any) -> tuple[str, Any]:
    """An edit that replaces the steps of request class ``read``."""
    return ("requests.read.steps", list(items))


def write(tmp_path: Path, doc: Any, name: str = "model.yaml") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc, sort_keys=False, allow_unicode=True))
    return path


def refused(tmp_path: Path, doc: Any, **overrides: Any) -> str:
    """The message of the ModelError that loading ``doc`` raises (the test fails if none)."""
    path = write(tmp_path, doc)
    with pytest.raises(ModelError) as info:
        simstack.load_model(path, **overrides)
    return str(info.value)


def expect(tmp_path: Path, doc: Any, where: str | None, message: str, **overrides: Any) -> None:
    """Loading ``doc`` fails with exactly ``<file>: <where>: <message>``."""
    path = write(tmp_path, doc)
    full = f"{path}: {where}: {message}" if where else f"{path}: {message}"
    with pytest.raises(ModelError, match=f"^{re.escape(full)}$"):
        simstack.load_model(path, **overrides)


def test_the_base_model_loads(tmp_path: Path) -> None:
    spec = simstack.load_model(write(tmp_path, BASE))
    simstack.build_graph(spec)
    assert set(spec.components) == {"pool", "db", "srv", "mutex", "device_lock"}


# -- references to things that do not exist ---------------------------------------------------
def test_unknown_kind_lists_the_known_kinds(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.box", {"kind": "mailbox"})), "components.box.kind",
           f"unknown kind 'mailbox'; known kinds: {KINDS}")
    assert "lock" in KINDS and "threads" in KINDS


def test_misspelt_kind_suggests_the_near_one(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.pool.kind", "thread")), "components.pool.kind",
           f"unknown kind 'thread' (did you mean 'threads'?); known kinds: {KINDS}")


def test_component_without_kind(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.srv", {"service": "2ms"})), "components.srv",
           f"a component needs a 'kind' (one of {KINDS}), got {{'service': '2ms'}}")


def test_kind_that_is_not_a_name(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.srv.kind", ["server"])), "components.srv.kind",
           f"unknown kind ['server']; known kinds: {KINDS}")


def test_an_idle_spinner_needs_a_priority_host(tmp_path: Path) -> None:
    expect(tmp_path, model(("hosts.app.idle_spinner", 1)), "hosts.app.idle_spinner",
           "idle_spinner needs discipline: priority (a spinner under ps would share the cores), got "
           "discipline: ps")


def test_component_on_an_unknown_host(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.pool.host", "ap")), "components.pool.host",
           "unknown host 'ap' (did you mean 'app'?); hosts: app")


def test_request_class_on_an_unknown_host(tmp_path: Path) -> None:
    expect(tmp_path, model(("requests.read.host", "dbhost")), "requests.read.host",
           "unknown host 'dbhost'; hosts: app")


def test_step_calls_an_unknown_component(tmp_path: Path) -> None:
    expect(tmp_path, model(steps({"call": "database"})), "requests.read.steps[0].call",
           "unknown component or request class 'database'; components usable with call: db, srv; "
           "request classes: read")


def test_step_holds_an_unknown_component(tmp_path: Path) -> None:
    expect(tmp_path, model(steps({"hold": "pool2", "steps": [{"delay": "1ms"}]})), "requests.read.steps[0].hold",
           "unknown component 'pool2' (did you mean 'pool'?); components usable with hold: device_lock, mutex, pool")


def test_step_uses_a_component_in_a_role_it_does_not_play(tmp_path: Path) -> None:
    expect(tmp_path, model(steps({"call": "pool"})), "requests.read.steps[0].call",
           "'pool' is a threads component; threads components are used with hold: not call:; "
           "components usable with call: db, srv; request classes: read")


def test_step_target_that_is_not_a_name(tmp_path: Path) -> None:
    expect(tmp_path, model(steps({"call": ["db"]})), "requests.read.steps[0].call",
           "unknown component or request class ['db']; components usable with call: db, srv; "
           "request classes: read")
    expect(tmp_path, model(steps({"send": {"db": 1}})), "requests.read.steps[0].send",
           "unknown component or request class {'db': 1}; components usable with send: (none); "
           "request classes: read")


def test_workload_drives_an_unknown_request_class(tmp_path: Path) -> None:
    expect(tmp_path, model(("workloads.users.request", "reed")), "workloads.users.request",
           "unknown request class 'reed' (did you mean 'read'?); request classes: read")


def test_unknown_call_option_lists_the_options(tmp_path: Path) -> None:
    expect(tmp_path, model(steps({"call": "srv", "bytes": "1KB"})), "requests.read.steps[0].bytes",
           "unknown option 'bytes' for a call to server 'srv'; options: service")


def test_request_class_named_like_a_component(tmp_path: Path) -> None:
    expect(tmp_path, model(("requests.db", [{"delay": "1ms"}])), "requests.db",
           "name 'db' is both a component and a request class; rename one")


# -- numbers out of range -----------------------------------------------------------------------
def test_zero_cores(tmp_path: Path) -> None:
    expect(tmp_path, model(("hosts.app.cores", 0)), "hosts.app.cores", "must be >= 1, got 0")


def test_fractional_cores(tmp_path: Path) -> None:
    expect(tmp_path, model(("hosts.app.cores", 2.5)), "hosts.app.cores", "expected a whole number, got 2.5")


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_cores(tmp_path: Path, value: float) -> None:
    expect(tmp_path, model(("hosts.app.cores", value)), "hosts.app.cores", f"expected a whole number, got {value!r}")


def test_zero_speed(tmp_path: Path) -> None:
    expect(tmp_path, model(("hosts.app.speed", 0)), "hosts.app.speed", "must be > 0, got 0")


def test_negative_rate_with_unit(tmp_path: Path) -> None:
    expect(tmp_path, model(("workloads.users.rate", "-5/s")), "workloads.users.rate", "must be > 0, got '-5/s'")


def test_negative_bare_rate(tmp_path: Path) -> None:
    expect(tmp_path, model(("workloads.users.rate", -5)), "workloads.users.rate", "must be > 0, got -5")


def test_zero_size(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.pool.size", 0)), "components.pool.size", "must be >= 1, got 0")


def test_negative_size(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.pool.size", -3)), "components.pool.size", "must be >= 1, got -3")


def test_negative_service_mean(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.srv.service", "exp(-2ms)")), "components.srv.service",
           "exp: mean must be > 0, got '-2ms' in 'exp(-2ms)'")


def test_negative_constant_service(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.srv.service", "-2ms")), "components.srv.service",
           "must be >= 0, got '-2ms'")


def test_negative_delay_inside_a_nested_step(tmp_path: Path) -> None:
    doc = model(steps({"hold": "pool", "steps": [{"cpu": "1ms"}, {"delay": -1}]}))
    expect(tmp_path, doc, "requests.read.steps[0].steps[1].delay", "must be >= 0, got -1")


def test_negative_cpu_per_byte(tmp_path: Path) -> None:
    doc = model(steps({"hold": "pool", "steps": [{"cpu": {"demand": "1ms", "per_byte": "-1ns", "bytes": "1KB"}}]}))
    expect(tmp_path, doc, "requests.read.steps[0].steps[0].cpu.per_byte", "must be >= 0, got '-1ns'")


def test_parallel_limit_zero(tmp_path: Path) -> None:
    doc = model(steps({"parallel": {"count": 4, "limit": 0}, "steps": [{"delay": "1ms"}]}))
    expect(tmp_path, doc, "requests.read.steps[0].parallel.limit", "must be >= 1, got 0")


def test_parallel_count_missing(tmp_path: Path) -> None:
    doc = model(steps({"parallel": {"limit": 2}, "steps": [{"delay": "1ms"}]}))
    expect(tmp_path, doc, "requests.read.steps[0].parallel",
           "missing required key 'count' (number of items to fan out)")


def test_interarrival_of_zero_would_never_let_time_pass(tmp_path: Path) -> None:
    doc = model(("workloads.users", {"type": "open", "request": "read", "interarrival": 0}))
    expect(tmp_path, doc, "workloads.users.interarrival",
           "interarrival times must have a mean > 0 (arrivals would pile up at one instant), got 0")


def test_negative_start(tmp_path: Path) -> None:
    expect(tmp_path, model(("workloads.users.start", "-5s")), "workloads.users.start", "must be >= 0, got '-5s'")


def test_open_workload_with_both_rate_and_interarrival(tmp_path: Path) -> None:
    expect(tmp_path, model(("workloads.users.interarrival", "exp(100ms)")), "workloads.users",
           "an open workload needs exactly one of rate or interarrival (got both)")


def test_unknown_workload_type(tmp_path: Path) -> None:
    expect(tmp_path, model(("workloads.users.type", "opn")), "workloads.users.type",
           "unknown workload type 'opn' (did you mean 'open'?); types: open, closed, periodic, protocol, map, trace")


# -- units and distributions --------------------------------------------------------------------
def test_unknown_time_unit_sec(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.srv.service", "5 sec")), "components.srv.service",
           "unknown time unit 'sec' in '5 sec'; known units: ns, us, µs, ms, s, min, h")


def test_unknown_time_unit_parsecs(tmp_path: Path) -> None:
    doc = model(steps({"hold": "pool", "steps": [{"delay": "10 parsecs"}]}))
    expect(tmp_path, doc, "requests.read.steps[0].steps[0].delay",
           "unknown time unit 'parsecs' in '10 parsecs'; known units: ns, us, µs, ms, s, min, h")


def test_unknown_unit_inside_a_distribution(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.srv.service", "exp(2 msec)")), "components.srv.service",
           "exp: mean: unknown time unit 'msec' in '2 msec'; known units: ns, us, µs, ms, s, min, h "
           "(in 'exp(2 msec)')")


def test_bandwidth_without_per_time(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.db.bandwidth", "100MB")), "components.db.bandwidth",
           "expected a bandwidth such as '100MB/s' or '25Gb/s', got '100MB' (a size per time unit: add '/s')")


def test_unknown_size_unit_in_a_call(tmp_path: Path) -> None:
    doc = model(steps({"hold": "pool", "steps": [{"call": "db", "bytes": "12 kg"}]}))
    expect(tmp_path, doc, "requests.read.steps[0].steps[0].bytes",
           "unknown size unit 'kg' in '12 kg'; known units: B, KB, MB, GB, TB, KiB, MiB, GiB, b, Kb, Mb, Gb")


def test_unknown_distribution_lists_the_known_ones(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.srv.service", "weibull(1ms, 2)")), "components.srv.service",
           "unknown distribution 'weibull' in 'weibull(1ms, 2)'; known: const, exp, lognormal, gamma, hyperexp, "
           "pareto, uniform, normal, empirical, indexed, attribute")


def test_distribution_with_too_few_arguments(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.srv.service", "lognormal(1ms)")), "components.srv.service",
           "lognormal needs cv: write lognormal(mean, cv), got 'lognormal(1ms)'")


def test_distribution_missing_its_closing_parenthesis(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.srv.service", "exp(1ms")), "components.srv.service",
           "malformed distribution 'exp(1ms': write name(arguments) such as exp(2ms) or lognormal(5ms, 0.5); "
           "known: const, exp, lognormal, gamma, hyperexp, pareto, uniform, normal, empirical, indexed, attribute")


def test_normal_with_a_mean_below_zero(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.srv.service", "normal(-100ms, 1ms)")), "components.srv.service",
           "normal: mean must be >= 0, got '-100ms' in 'normal(-100ms, 1ms)'")


def test_empirical_file_missing(tmp_path: Path) -> None:
    where = tmp_path.resolve() / "latency.csv"
    expect(tmp_path, model(("components.srv.service", "empirical(latency.csv, ms)")), "components.srv.service",
           f"data file 'latency.csv' not found (looked for {where}; relative paths start at the model "
           "file's folder)")


def test_empirical_column_missing_lists_the_columns(tmp_path: Path) -> None:
    (tmp_path / "latency.csv").write_text("run,seconds\n1,0.002\n2,0.003\n")
    doc = model(steps({"hold": "pool", "steps": [{"delay": "empirical(latency.csv, ms)"}]}))
    expect(tmp_path, doc, "requests.read.steps[0].steps[0].delay",
           "column 'ms' not in 'latency.csv'; columns: run, seconds")


def test_empirical_bad_value_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "latency.csv").write_text("run,seconds\n1,0.002\n2,fast\n")
    expect(tmp_path, model(("components.srv.service", "empirical(latency.csv, seconds)")),
           "components.srv.service",
           "latency.csv line 3, column 'seconds': expected a time such as '5us', '2ms', '1.5s' or '20min', "
           "got 'fast'")


def test_empirical_file_of_a_component_is_read_from_the_model_folder(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "latency.csv").write_text("seconds\n0.002\n0.004\n")
    path = write(tmp_path, model(("components.srv.service", "empirical(latency.csv, seconds)")))
    monkeypatch.chdir(tmp_path.parent)
    spec = simstack.load_model(path)
    assert spec.components["srv"].settings["service"].values == (0.002, 0.004)


def test_data_files_of_call_options_and_memory_steps_are_read_from_the_model_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every field that may hold a distribution is given the model's folder explicitly: a
    component's call option and a lifecycle step's size as well as a component's own field."""
    (tmp_path / "latency.csv").write_text("seconds,bytes\n0.002,1000\n0.004,2000\n")
    doc = model(steps({"call": "srv", "service": "empirical(latency.csv, seconds)"},
                      {"alloc": "empirical(latency.csv, bytes)"}))
    path = write(tmp_path, doc)
    monkeypatch.chdir(tmp_path.parent)
    body = simstack.load_model(path).requests["read"].body
    assert body[0].options["service"].values == (0.002, 0.004)
    assert body[1].bytes.values == (1000.0, 2000.0)


# -- the document's shape -----------------------------------------------------------------------
def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    text = BASE_TEXT.replace("  app: {cores: 2}", "  app: {cores: 2")
    expect(tmp_path, text, None, "YAML syntax error at line 4, column 11: expected ',' or '}', but got ':'")


def test_key_given_twice_is_not_silently_overwritten(tmp_path: Path) -> None:
    text = BASE_TEXT.replace("  srv: {kind: server, service: exp(2ms)}",
                             "  srv: {kind: server, service: exp(2ms)}\n  db: {kind: server, service: 1ms}")
    expect(tmp_path, text, "components.db", "key 'db' is given twice in one mapping (lines 6 and 8); keep one")


def test_anchors_and_merge_keys_are_not_duplicates(tmp_path: Path) -> None:
    text = BASE_TEXT.replace("  srv: {kind: server, service: exp(2ms)}",
                             "  srv: &station {kind: server, service: exp(2ms)}\n  srv2: {<<: *station, servers: 2}")
    spec = simstack.load_model(write(tmp_path, text))
    assert spec.components["srv2"].settings["servers"] == 2


def test_many_aliases_of_one_anchor_load_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 8)}]" for i in range(1, 9)]  # 8**9 leaves if expanded
    text = "\n".join(f"  {line}" for line in lines)
    expect(tmp_path, BASE_TEXT + "settings:\n" + text + "\n", None,
           "YAML aliases (*name) expand this document to 175304864 values, more than the 1000000 a model may "
           "hold; write the repeated parts out or use parameters")


def test_a_node_that_contains_itself(tmp_path: Path) -> None:
    expect(tmp_path, BASE_TEXT + "settings: &loop {horizon: 1s, seed: [*loop]}\n", None,
           "the YAML alias to the node at line 17 is inside that node itself; a model cannot contain itself")


def test_a_document_nested_too_deeply(tmp_path: Path) -> None:
    expect(tmp_path, BASE_TEXT + "description: " + "[" * 5000 + "]" * 5000 + "\n", None,
           "the YAML document is nested too deeply to read")


def test_empty_file(tmp_path: Path) -> None:
    expect(tmp_path, "", None, "a model file must be a mapping of sections (name, description, parameters, flags, "
           "scenarios, hosts, components, requests, workloads, settings, environment), got an empty file")


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.yaml"
    with pytest.raises(ModelError, match=f"^{re.escape(f'model file {str(path)!r} not found')}$"):
        simstack.load_model(path)


def test_unknown_top_level_section(tmp_path: Path) -> None:
    expect(tmp_path, model(("host", {"db": {"cores": 1}})), "host",
           "unknown section 'host' (did you mean 'hosts'?); expected: name, description, parameters, flags, "
           "scenarios, hosts, components, requests, workloads, settings, environment")


def test_unknown_key_in_a_component(tmp_path: Path) -> None:
    expect(tmp_path, model(("components.db.conections", 4)), "components.db.conections",
           "unknown key 'conections' (did you mean 'connections'?); expected one of: "
           + ", ".join(REGISTRY["database"].fields) + ", doc")


def test_requests_section_that_is_a_list(tmp_path: Path) -> None:
    expect(tmp_path, model(("requests", [{"delay": "1ms"}])), "requests",
           "expected a mapping of request class names to steps, got [{'delay': '1ms'}]")


def test_no_workloads(tmp_path: Path) -> None:
    expect(tmp_path, model(drop=("workloads",)), "workloads",
           "expected at least one workload (what drives the requests: open, closed, periodic, protocol, map or trace)")


# -- steps ----------------------------------------------------------------------------------------
def test_step_with_two_actions(tmp_path: Path) -> None:
    expect(tmp_path, model(steps({"delay": "1ms", "call": "db"})), "requests.read.steps[0]",
           "a step takes exactly one action, found 2: delay, call; write each as its own step")


def test_step_with_no_action(tmp_path: Path) -> None:
    expect(tmp_path, model(steps({"name": "lonely"})), "requests.read.steps[0]",
           "a step needs one action, one of cpu, delay, hold, call, send, parallel, steps, choose, switch, repeat, "
           "all, acquire, release, reply, alloc, write_memory, fork, read, checkpoint, restore; found only name")


def test_step_written_as_text(tmp_path: Path) -> None:
    expect(tmp_path, model(steps("delay 5ms")), "requests.read.steps[0]",
           "a step must be a mapping with one of cpu, delay, hold, call, send, parallel, steps, choose, switch, "
           "repeat, all, acquire, release, reply, alloc, write_memory, fork, read, checkpoint, restore, "
           "got 'delay 5ms'")


def test_unknown_key_in_a_step(tmp_path: Path) -> None:
    expect(tmp_path, model(steps({"delay": "1ms", "timeout": "5ms"})), "requests.read.steps[0].timeout",
           "unknown key 'timeout' for a delay step; allowed: deadline, delay, name, on_miss, unless, when")


def test_unknown_flag_in_when(tmp_path: Path) -> None:
    doc = model(("flags", ["cache"]), steps({"delay": "1ms", "when": "cahce"}))
    expect(tmp_path, doc, "requests.read.steps[0].when",
           "unknown flag 'cahce' (did you mean 'cache'?); when: takes one declared flag: cache")


def test_unknown_flag_in_unless(tmp_path: Path) -> None:
    doc = model(("flags", ["cache", "audit"]), steps({"delay": "1ms", "unless": "fast"}))
    expect(tmp_path, doc, "requests.read.steps[0].unless",
           "unknown flag 'fast'; unless: takes one declared flag: cache, audit")


def test_flag_condition_that_is_a_list(tmp_path: Path) -> None:
    doc = model(("flags", ["cache"]), steps({"delay": "1ms", "when": ["cache"]}))
    expect(tmp_path, doc, "requests.read.steps[0].when",
           "unknown flag ['cache']; when: takes one declared flag: cache")


def test_read_mode_on_a_lock_without_readers(tmp_path: Path) -> None:
    doc = model(steps({"hold": "mutex", "mode": "read", "steps": [{"delay": "1ms"}]}))
    expect(tmp_path, doc, "requests.read.steps[0].mode",
           "mode: read needs a lock with readers: true (lock 'mutex' has none)")


def test_per_key_lock_held_without_a_key(tmp_path: Path) -> None:
    doc = model(steps({"hold": "device_lock", "steps": [{"delay": "1ms"}]}))
    expect(tmp_path, doc, "requests.read.steps[0]",
           "lock 'device_lock' is per device; the step needs key: item (the fan-out item) or a fixed key")


def test_key_that_is_not_a_name(tmp_path: Path) -> None:
    doc = model(steps({"parallel": {"count": 2}, "steps": [
        {"hold": "device_lock", "key": ["item"], "steps": [{"delay": "1ms"}]}]}))
    expect(tmp_path, doc, "requests.read.steps[0].steps[0].key",
           "expected key: item or a fixed key such as dev1, got ['item']")


def test_a_lock_held_again_inside_itself(tmp_path: Path) -> None:
    inner = {"hold": "mutex", "steps": [{"delay": "1ms"}]}
    doc = model(steps({"hold": "mutex", "steps": [{"delay": "1ms"}, inner]}))
    expect(tmp_path, doc, "requests.read.steps[0].steps[1].hold",
           "lock 'mutex' is already held by the enclosing step requests.read.steps[0]; holding it again would "
           "wait for itself forever")


def test_a_per_key_lock_held_again_with_the_same_fixed_key(tmp_path: Path) -> None:
    inner = {"hold": "device_lock", "key": "dev1", "steps": [{"delay": "1ms"}]}
    doc = model(steps({"hold": "device_lock", "key": "dev1", "steps": [inner]}))
    expect(tmp_path, doc, "requests.read.steps[0].steps[0].hold",
           "lock 'device_lock' is already held by the enclosing step requests.read.steps[0]; holding it again "
           "would wait for itself forever")


def test_a_per_key_lock_held_inside_itself_with_another_key_is_fine(tmp_path: Path) -> None:
    inner = {"hold": "device_lock", "key": "dev2", "steps": [{"delay": "1ms"}]}
    doc = model(steps({"hold": "device_lock", "key": "dev1", "steps": [inner]}))
    simstack.load_model(write(tmp_path, doc))


def test_hold_without_nested_steps(tmp_path: Path) -> None:
    expect(tmp_path, model(steps({"hold": "pool"})), "requests.read.steps[0]",
           "a hold step needs nested 'steps' to run while holding")


# -- parameters, flags, scenarios, settings --------------------------------------------------------
def test_unknown_parameter_reference(tmp_path: Path) -> None:
    doc = model(("parameters", {"service": "2ms"}), ("components.srv.service", "exp($nope)"))
    expect(tmp_path, doc, "components.srv.service", "unknown parameter $nope in 'exp($nope)'; parameters: service")


def test_unknown_whole_parameter_reference(tmp_path: Path) -> None:
    doc = model(("parameters", {"service": "2ms"}), ("components.srv.service", "$servce"))
    expect(tmp_path, doc, "components.srv.service",
           "unknown parameter $servce (did you mean 'service'?); parameters: service")


def test_override_of_an_unknown_parameter(tmp_path: Path) -> None:
    doc = model(("parameters", {"service": "2ms"}))
    expect(tmp_path, doc, "parameters (override)", "unknown parameter 'nope'; parameters: service",
           parameters={"nope": 1})


def test_override_of_an_unknown_flag(tmp_path: Path) -> None:
    doc = model(("flags", ["cache"]))
    expect(tmp_path, doc, "flags (override)", "unknown flag 'cahce' (did you mean 'cache'?); declared flags: cache",
           flags={"cahce": True})


def test_a_flag_override_given_as_one_name_is_one_flag(tmp_path: Path) -> None:
    doc = model(("flags", ["cache"]), steps({"delay": "1ms", "when": "cache"}))
    spec = simstack.load_model(write(tmp_path, doc), flags="cache")  # type: ignore[arg-type]
    assert spec.flags == {"cache"}


def test_parameter_value_that_is_a_mapping(tmp_path: Path) -> None:
    doc = model(("parameters", {"service": {"value": {"dist": "exp", "mean": "1ms"}}}))
    expect(tmp_path, doc, "parameters.service.value",
           "a parameter value must be a number, text such as 2ms or exp(1ms), true/false or null, "
           "got {'dist': 'exp', 'mean': '1ms'}")


def test_parameters_referring_to_each_other_in_a_cycle(tmp_path: Path) -> None:
    doc = model(("parameters", {"a": "$b", "b": "$a"}))
    expect(tmp_path, doc, "parameters.a", "parameters refer to each other in a cycle: a -> b -> a")


def test_a_parameter_may_name_another_and_overrides_carry_through(tmp_path: Path) -> None:
    doc = model(("parameters", {"fitted": "3ms", "service": "$fitted"}), ("components.srv.service", "exp($service)"))
    path = write(tmp_path, doc)
    assert simstack.load_model(path).components["srv"].settings["service"].mean == pytest.approx(0.003)
    spec = simstack.load_model(path, parameters={"fitted": "5ms"})
    assert spec.components["srv"].settings["service"].mean == pytest.approx(0.005)
    assert spec.parameters["service"].value == "5ms"


def test_unknown_scenario(tmp_path: Path) -> None:
    doc = model(("parameters", {"n": 2}), ("scenarios", {"small": {"parameters": {"n": 1}}}))
    expect(tmp_path, doc, "scenarios", "unknown scenario 'smal' (did you mean 'small'?); scenarios: small",
           scenario="smal")


def test_a_scenario_is_checked_even_when_not_chosen(tmp_path: Path) -> None:
    doc = model(("parameters", {"n": 2}), ("scenarios", {"small": {"parameters": {"m": 1}}}))
    expect(tmp_path, doc, "scenarios.small.parameters", "unknown parameter 'm'; parameters: n")


def test_settings_with_a_bad_horizon(tmp_path: Path) -> None:
    expect(tmp_path, model(("settings", {"horizon": "10 parsecs"})), "settings.horizon",
           "unknown time unit 'parsecs' in '10 parsecs'; known units: ns, us, µs, ms, s, min, h")


def test_settings_that_are_not_a_mapping(tmp_path: Path) -> None:
    expect(tmp_path, model(("settings", "fast")), "settings",
           "expected a mapping with keys horizon, warmup, seed, replications, limits, time_unit, got 'fast'")


# -- a model file can never run code ---------------------------------------------------------------
TARGET_SITES = {
    "top level": ("_target_", "os.system"),
    "host": ("hosts.app._target_", "os.system"),
    "component": ("components.db._target_", "os.system"),
    "request class": ("requests.read._target_", "os.system"),
    "workload": ("workloads.users._target_", "os.system"),
    "settings": ("settings._target_", "os.system"),
    "parameter": ("parameters", {"n": {"value": 1, "_target_": "os.system"}}),
    "scenario": ("scenarios", {"s": {"_target_": "os.system"}}),
}
TARGET_WHERE = {
    "top level": "_target_", "host": "hosts.app._target_", "component": "components.db._target_",
    "request class": "requests.read._target_", "workload": "workloads.users._target_",
    "settings": "settings._target_", "parameter": "parameters.n._target_", "scenario": "scenarios.s._target_",
}


def expect_target_refused(tmp_path: Path, doc: Any, where: str) -> None:
    """``_target_`` is refused by the reader itself (``simstack.io.plaindata``), wherever it is."""
    path = write(tmp_path, doc)
    full = re.escape(f"{path}: {where}: key '_target_' at line ") + r"\d+" + re.escape(
        " is not allowed: a simstack file holds plain data and cannot configure Hydra or read the environment")
    with pytest.raises(ModelError, match=f"^{full}$"):
        simstack.load_model(path)


@pytest.mark.parametrize("site", list(TARGET_SITES))
def test_target_key_is_refused_everywhere(tmp_path: Path, site: str) -> None:
    expect_target_refused(tmp_path, model(TARGET_SITES[site]), TARGET_WHERE[site])


def test_target_key_in_a_step(tmp_path: Path) -> None:
    doc = model(steps({"hold": "pool", "steps": [{"cpu": "1ms", "_target_": "os.system"}]}))
    expect_target_refused(tmp_path, doc, "requests.read.steps[0].steps[0]._target_")


def test_target_key_in_a_distribution_mapping(tmp_path: Path) -> None:
    doc = model(("components.srv.service", {"dist": "exp", "mean": "1ms", "_target_": "os.system"}))
    expect_target_refused(tmp_path, doc, "components.srv.service._target_")


def test_target_key_in_a_call(tmp_path: Path) -> None:
    doc = model(steps({"hold": "pool", "steps": [{"call": "db", "_target_": "os.system"}]}))
    expect_target_refused(tmp_path, doc, "requests.read.steps[0].steps[0]._target_")


@pytest.mark.parametrize("tag", ["!!python/object/apply:os.system", "!!python/object/new:os.system"])
def test_python_tag_is_a_yaml_error_and_runs_nothing(tmp_path: Path, tag: str) -> None:
    marker = tmp_path / "ran"
    text = BASE_TEXT + f'description: {tag} ["touch {marker}"]\n'
    line = text.count("\n")
    expect(tmp_path, text, None,
           f"YAML tag {tag!r} at line {line}, column 14 is not allowed: a model file holds plain data "
           "(mappings, lists, text, numbers, true/false) and cannot create Python objects")
    assert not marker.exists()


def test_python_name_tag_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, BASE_TEXT + "name: !!python/name:os.system ''\n")
    assert "YAML tag '!!python/name:os.system'" in message and "is not allowed" in message


# -- graph-level checks: before time starts, with the file ----------------------------------------
CYCLE = model(("requests.a", [{"call": "b"}]), ("requests.b", [{"delay": "1ms"}, {"call": "a"}]),
              ("workloads.users.request", "a"))


def test_cycle_of_synchronous_calls(tmp_path: Path) -> None:
    expect(tmp_path, CYCLE, "requests.a.steps[0]",
           "cycle of synchronous calls: a -> b -> a (a request would wait for itself)")


def test_cycle_of_synchronous_calls_from_build_graph() -> None:
    spec = build_spec(copy.deepcopy(CYCLE), None)
    with pytest.raises(ModelError, match=re.escape(
            "requests.a.steps[0]: cycle of synchronous calls: a -> b -> a (a request would wait for itself)")):
        simstack.build_graph(spec)


CPU_WITHOUT_HOST = model(steps({"delay": "1ms"}, {"cpu": "2ms", "name": "compute"}))


def test_cpu_step_without_a_host(tmp_path: Path) -> None:
    expect(tmp_path, CPU_WITHOUT_HOST, "requests.read.steps[1]",
           "a cpu step needs a host: hold a thread pool around it, or give the request class a host")


def test_cpu_step_without_a_host_from_build_graph() -> None:
    spec = build_spec(copy.deepcopy(CPU_WITHOUT_HOST), None)
    with pytest.raises(ModelError, match="^" + re.escape(
            "requests.read.steps[1]: a cpu step needs a host: hold a thread pool around it, or give the "
            "request class a host") + "$"):
        simstack.build_graph(spec)


def test_queue_handler_that_is_not_a_request_class(tmp_path: Path) -> None:
    doc = model(("components.audit", {"kind": "queue", "host": "app", "handler": "write_audit"}))
    expect(tmp_path, doc, "components.audit.handler", "unknown request class 'write_audit'; request classes: read")


# -- every error is a ModelError, whatever the wrong value -----------------------------------------
WRONG = [None, True, -1, 0, 2.5, float("nan"), float("inf"), "x", "$nope", [], ["a"], {}, {"_target_": "x"}]


def _sites(node: Any, path: tuple = ()) -> list[tuple]:
    out = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, value in items:
        out.append(path + (key,))
        out.extend(_sites(value, path + (key,)))
    return out


def test_any_wrong_value_anywhere_in_the_pipeline_model_is_a_located_model_error() -> None:
    """Each key of the example model set to each wrong value in turn: reading it either
    succeeds or raises a ModelError with a key path, never another exception."""
    model_file = Path(simstack.__file__).parents[1] / "models" / "pipeline" / "model.yaml"
    source = yaml.safe_load(model_file.read_text())
    failures = []
    for site in _sites(source):
        for wrong in WRONG:
            doc = copy.deepcopy(source)
            node = doc
            for key in site[:-1]:
                node = node[key]
            node[site[-1]] = copy.deepcopy(wrong)
            try:
                simstack.build_graph(build_spec(doc, model_file))
            except ModelError as exc:
                if not exc.path:
                    failures.append((site, wrong, str(exc)))
            except Exception as exc:  # noqa: BLE001 - the point of the test
                failures.append((site, wrong, repr(exc)))
    assert not failures, failures[:5]


def test_a_schedule_too_long_is_refused_before_anything_is_built(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A million-point rate schedule took minutes to refuse: the Python loader built it all
    first. The count is checked on the parser's events, before any node or object is built
    (the builders fail here if called; MAX_VALUES lowered so the test stays small)."""
    from simstack.io import safeyaml

    def built(*_: object, **__: object) -> None:
        raise AssertionError("the document was built before its values were counted")

    monkeypatch.setattr(safeyaml, "MAX_VALUES", 1000)
    monkeypatch.setattr(yaml, "safe_load", built)
    monkeypatch.setattr(yaml, "compose", built)
    points = "".join(f"        - [{i}, 1/s]\n" for i in range(2000))
    path = write(tmp_path, BASE_TEXT + "  more:\n    type: open\n    request: read\n    rate:\n      steps:\n" + points)
    with pytest.raises(ModelError, match=re.escape(f"{path}: the document holds more than the 1000 values a model "
                                                   "may hold (line ") + r"\d+ is past them\); a list that long"):
        simstack.load_model(path)
