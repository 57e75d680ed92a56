"""``simstack export lqn``: the subset of simstack that maps back to LQN, and the round trip
import -> export -> import, which must give back the same model document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from simstack.cli.lqn import main as interop_main
from simstack.errors import ModelError
from simstack.load.loader import build_spec, load_model
from simstack.load.lqn.from_simstack import from_simstack, to_lqnx
from simstack.load.lqn.lqn_text import read_lqn_text
from simstack.load.lqn.lqnx import read_lqnx
from simstack.load.lqn.to_simstack import to_simstack
from simstack.testing import run

from .test_lqn_exact import CLOSED, FORWARD, GEOMETRIC, MM1, TWO_PHASE, graph_model
from .test_lqn_import import FAIR, REPLICATED, RWLOCK, TEXT

SEMAPHORE = """
G "a semaphore taken by one entry and given back by another; a deterministic client" 1e-5 50 -1
P 2
  p terminals i
  p cpu h m 2
-1
T 4
  t clients r cycle -1 terminals z 0.5 m 3
  t lock S signal wait -1 cpu
  t app n use -1 cpu 2 m 2
  t other n spare -1 cpu 1 i
-1
E 5
  s cycle 0.1 0.2 -1
  f cycle 1 1 -1
  y cycle use 2 -1
  z cycle spare 0 1 -1
  s use 0.05 -1
  y use wait 1 -1
  z use signal 1 -1
  P signal
  V wait
  s signal 0.01 -1
  s wait 0.02 -1
  s spare 0.3 -1
  c spare 0.5 -1
-1
"""

HYPER = MM1.replace("  s serve 1.0 -1", "  s serve 1.0 -1\n  c serve 4 -1")  # cv² 4: hyperexp(1, 2)

MODELS = {
    "M/M/1": MM1, "hyperexponential service": HYPER, "closed": CLOSED, "geometric calls": GEOMETRIC,
    "two phases": TWO_PHASE, "forwarding": FORWARD,
    "grammars": TEXT, "semaphore, priorities, sends": SEMAPHORE,
    "AND-join": graph_model("a -> b & c; b & c -> d; d[serve]"),
    "quorum": graph_model("a -> b & c; b & c (1) -> d; d[serve]"),
    "OR, reply on a branch": graph_model("a -> (0.4) b + (0.6) c; b[serve] + c -> d"),
    "loop": graph_model("a -> 2.5 * b, d; d[serve]"),
}


def doc_without_description(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "description"}


@pytest.mark.parametrize("label", list(MODELS))
def test_import_export_import_is_the_identity(label: str) -> None:
    first = to_simstack(read_lqn_text(MODELS[label], "m.lqn"), "m").doc
    xml = to_lqnx(build_spec(first, None))
    second = to_simstack(read_lqnx(xml.encode(), "m.lqnx"), "m").doc
    assert doc_without_description(second) == doc_without_description(first)


def test_the_hyperexponential_is_exported_with_its_cvsq() -> None:
    first = to_simstack(read_lqn_text(HYPER, "m.lqn"), "m").doc
    assert first["requests"]["serve"]["steps"][0]["steps"] == [{"cpu": "hyperexp(1, 2)"}]
    assert 'host-demand-cvsq="4"' in to_lqnx(build_spec(first, None))


@pytest.mark.parametrize("label", ["read-write lock", "fair-share groups"])
def test_rwlock_and_fair_share_models_round_trip(label: str) -> None:
    model = {"read-write lock": RWLOCK, "fair-share groups": FAIR}[label]
    first = to_simstack(read_lqnx(model.encode(), "m.lqnx"), "m").doc
    xml = to_lqnx(build_spec(first, None))
    marker = 'rwlock="r-lock"' if label == "read-write lock" else '<group name="g2" share="0.3" cap="true">'
    assert marker in xml
    second = to_simstack(read_lqnx(xml.encode(), "m.lqnx"), "m").doc
    assert doc_without_description(second) == doc_without_description(first)


BURST = """<lqn-model name="m">
  <processor name="p" scheduling="inf">
    <task name="b" scheduling="burst" multiplicity="2"><entry name="b" type="PH1PH2"><entry-phase-activities>
      <activity name="b1" phase="1" host-demand-mean="3" host-demand-cvsq="0.25"><synch-call dest="e" calls-mean="1"/>
      </activity></entry-phase-activities></entry></task>
    <task name="t" scheduling="fcfs"><entry name="e" type="PH1PH2"><entry-phase-activities>
      <activity name="e1" phase="1" host-demand-mean="2" host-demand-cvsq="4"/>
    </entry-phase-activities></entry></task>
  </processor>
</lqn-model>"""


def test_a_bursty_reference_task_round_trips() -> None:
    """Pareto slices in a class started by a closed workload: a burst task with their cv²."""
    first = to_simstack(read_lqnx(BURST.encode(), "m.lqnx"), "m").doc
    xml = to_lqnx(build_spec(first, None))
    assert 'scheduling="burst"' in xml and 'host-demand-cvsq="0.25"' in xml
    second = to_simstack(read_lqnx(xml.encode(), "m.lqnx"), "m").doc
    assert doc_without_description(second) == doc_without_description(first)
    first["requests"]["e"]["steps"][0]["steps"][0]["cpu"] = "pareto(2, 2)"  # a served entry cannot be bursty
    with pytest.raises(ModelError, match=r"requests.e: pareto CPU demand maps to LQN only as every slice"):
        to_lqnx(build_spec(first, None))


def test_a_lock_without_a_reader_limit_is_refused_by_name() -> None:
    doc = to_simstack(read_lqnx(RWLOCK.encode(), "m.lqnx"), "m").doc
    del doc["components"]["lock"]["max_readers"]
    with pytest.raises(ModelError, match=r"components.lock.max_readers: an LQN rwlock task has a number of readers"):
        to_lqnx(build_spec(doc, None))


def test_replicated_model_round_trips_written_out() -> None:
    first = to_simstack(read_lqnx(REPLICATED, "rep.lqnx"), "rep").doc
    second = to_simstack(read_lqnx(to_lqnx(build_spec(first, None)).encode(), "rep.lqnx"), "rep").doc
    assert doc_without_description(second) == doc_without_description(first)


HAND_WRITTEN = """
name: hand
hosts:
  app: {cores: 2, discipline: ps}
  users: {cores: inf}
components:
  workers: {kind: threads, host: app, size: 4}
requests:
  browse:
    host: users
    steps:
      - {cpu: exp(10ms)}
      - {call: page}
      - {delay: exp(20ms)}
  page:
    - hold: workers
      steps:
        - {cpu: 2ms}
        - choose:
            - {p: 0.3, steps: [{cpu: exp(5ms)}]}
            - {p: 0.7, steps: []}
        - reply
        - {cpu: "gamma(1ms, 0.5)"}
workloads:
  people: {type: closed, request: browse, clients: 10, think: exp(1s)}
"""


def test_a_hand_written_model_exports_what_it_means() -> None:
    spec = build_spec(yaml.safe_load(HAND_WRITTEN), None)
    lqn = from_simstack(spec)
    assert [(p.name, p.scheduling, p.multiplicity) for p in lqn.processors] == [("app", "ps", 2),
                                                                                ("users", "inf", float("inf"))]
    people = lqn.task("people")
    assert (people.scheduling, people.multiplicity, people.think, people.entries) == ("ref", 10, 1.0, ("browse",))
    assert lqn.entry("browse").phases[0].demand == 0.01  # the delay after the call is a second activity
    page = lqn.entry("page")
    assert page.start is not None and not page.phases  # a choose: an activity graph
    workers = lqn.task("workers")
    assert ("page_a" in workers.activities[0].name and
            {p.post_kind for p in workers.precedences} >= {"or", "single"})
    again = to_simstack(read_lqnx(to_lqnx(spec).encode(), "hand.lqnx"), "hand").doc
    page_steps = again["requests"]["page"]["steps"][0]["steps"]
    assert page_steps[0] == {"cpu": "const(0.002)"} and "choose" in page_steps[1] and "reply" in page_steps
    assert page_steps[-1] == {"cpu": "gamma(0.001, 0.5)"}


def test_what_has_no_lqn_counterpart_is_refused_by_name(tmp_path: Path, capsys) -> None:
    doc = yaml.safe_load(HAND_WRITTEN)
    doc["requests"]["page"][0]["steps"].insert(0, {"alloc": "1MB"})
    with pytest.raises(ModelError, match=r"requests.page.steps\[0\].steps\[0\]: a alloc step has no LQN"):
        from_simstack(build_spec(doc, None))
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.yaml").write_text(yaml.safe_dump(doc))
    assert interop_main(["export", "lqn", f"model={folder}", f"out={tmp_path / 'p.lqnx'}"]) == 2
    assert "simstack: error: " in capsys.readouterr().err and not (tmp_path / "p.lqnx").exists()


def test_export_command_writes_a_file_that_imports(tmp_path: Path) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.yaml").write_text(HAND_WRITTEN)
    out = tmp_path / "hand.lqnx"
    assert interop_main(["export", "lqn", f"model={folder}", f"out={out}"]) == 0
    assert interop_main(["import", str(out), f"out={tmp_path / 'back'}"]) == 0
    assert set(load_model(tmp_path / "back").requests) == {"browse", "page"}
    assert interop_main(["export", "lqn", f"model={folder}", f"out={tmp_path / 'hand.xml'}"]) == 2


IOC = """
name: ioc
hosts:
  ioc: {cores: 2, discipline: fifo}
  ops: {cores: inf}
components:
  scan: {kind: threads, host: ioc, size: 1}
  ca: {kind: threads, host: ioc, size: 4}
  dblock: {kind: lock}
requests:
  process:
    steps:
      - hold: scan
        steps:
          - {cpu: exp(1ms)}
          - hold: dblock
            steps: [{cpu: exp(0.5ms)}]
  get:
    steps:
      - hold: ca
        steps:
          - hold: dblock
            steps: [{cpu: exp(0.2ms)}]
          - {cpu: exp(0.3ms)}
  client:
    host: ops
    steps: [{call: get}, {call: process}]
workloads:
  users: {type: closed, request: client, clients: 5, think: exp(10ms)}
"""


def test_a_plain_lock_exports_as_a_one_thread_task_and_says_so(tmp_path: Path) -> None:
    """An EPICS-style global lock (issue 29, item 12): each hold becomes a call to an entry of a
    one-thread task on the holder's processor; the file's comment says so; the model imports
    back, loads and runs, and the lock's task serialises exactly as the lock did."""
    folder = tmp_path / "ioc"
    folder.mkdir()
    (folder / "model.yaml").write_text(IOC)
    out = tmp_path / "ioc.lqnx"
    assert interop_main(["export", "lqn", f"model={folder}", f"out={out}"]) == 0
    text = out.read_text()
    assert "<!-- lock dblock: a plain (global, one holder) lock, written as the task dblock of one thread" in text
    model = read_lqnx(text.encode(), "ioc.lqnx")
    lock = next(t for t in model.tasks if t.name == "dblock")
    assert (lock.scheduling, lock.multiplicity, lock.processor) == ("fcfs", 1, "ioc")
    assert set(lock.entries) == {"process.dblock", "get.dblock"}
    assert interop_main(["import", str(out), f"out={tmp_path / 'back'}"]) == 0
    doc = yaml.safe_load((tmp_path / "back" / "model.yaml").read_text())
    assert doc["components"]["dblock"] == {"kind": "threads", "host": "ioc", "size": 1}
    # the held steps run before the caller goes on (no reply before the call: phase 2 is not the lock)
    assert doc["requests"]["process"]["steps"][0]["steps"] == [{"cpu": "exp(0.001)"}, {"call": "process.dblock"}]
    result = run(doc, seed=3, replications=1, horizon=2.0)
    assert (result.requests["request"] == "client").sum() > 50


def test_a_plain_lock_taken_and_given_back_is_a_semaphore_task_and_a_per_key_lock_a_task_per_key() -> None:
    doc = yaml.safe_load(IOC)
    doc["requests"] = {"take": {"host": "ioc", "steps": [{"acquire": "dblock"}, {"cpu": "exp(1ms)"}]},
                       "give": {"host": "ioc", "steps": [{"cpu": "exp(1ms)"}, {"release": "dblock"}]},
                       "client": {"host": "ops", "steps": [{"call": "take"}, {"call": "give"}]}}
    del doc["components"]["scan"], doc["components"]["ca"]
    model = from_simstack(build_spec(doc, None))
    lock = next(t for t in model.tasks if t.name == "dblock")
    assert (lock.scheduling, lock.multiplicity) == ("semaphore", 1)
    assert "semaphore task of one token" in model.remarks[0]
    keyed = yaml.safe_load(IOC)
    keyed["components"]["dblock"]["per"] = "device"
    keyed["requests"]["process"]["steps"][0]["steps"][1]["key"] = "a"
    keyed["requests"]["get"]["steps"][0]["steps"][0]["key"] = "b"
    per_key = from_simstack(build_spec(keyed, None))  # one one-thread task per key (from_kinds)
    assert {t.name for t in per_key.tasks if t.multiplicity == 1 and t.scheduling == "fcfs"} >= {"dblock_a", "dblock_b"}
