"""``simstack import``: both grammars, the model folder it writes, replication, and every
refusal pinned by its message (element name and line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simstack.cli.lqn import main as interop_main
from simstack.errors import ModelError
from simstack.load.loader import build_spec, load_model
from simstack.load.lqn.lqn_results import LqnResults, Result
from simstack.load.lqn.lqn_text import read_lqn_text
from simstack.load.lqn.lqnx import read_lqnx
from simstack.load.lqn.to_simstack import to_simstack
from simstack.studies.evaluate.lqn_compare import compare
from simstack.testing import run

XML = b"""<?xml version="1.0"?>
<lqn-model name="pair" description="two tasks">
  <solver-params comment="a client and a two-phase server" conv_val="1e-05" it_limit="50">
    <pragma param="multiserver" value="conway"/>
  </solver-params>
  <processor name="terminals" scheduling="inf">
    <task name="clients" scheduling="ref" multiplicity="3" think-time="2">
      <entry name="cycle" type="PH1PH2">
        <entry-phase-activities>
          <activity name="cycle_1" phase="1" host-demand-mean="0.1" call-order="DETERMINISTIC">
            <synch-call dest="serve" calls-mean="2"/>
          </activity>
        </entry-phase-activities>
      </entry>
    </task>
  </processor>
  <processor name="cpu" scheduling="fcfs" multiplicity="2">
    <task name="server" scheduling="fcfs" multiplicity="4">
      <entry name="serve" type="PH1PH2">
        <entry-phase-activities>
          <activity name="serve_1" phase="1" host-demand-mean="0.2" host-demand-cvsq="0.25"/>
          <activity name="serve_2" phase="2" host-demand-mean="0.4" host-demand-cvsq="0"/>
        </entry-phase-activities>
      </entry>
    </task>
  </processor>
</lqn-model>
"""

TEXT = """
G "a client and a two-phase server" 1e-05 50 -1
P 2
  p terminals i
  p cpu f m 2
-1
T 2
  t clients r cycle -1 terminals z 2 m 3
  t server n serve -1 cpu m 4
-1
E 2
  s cycle 0.1 -1
  f cycle 1 -1
  y cycle serve 2 -1
  s serve 0.2 0.4 -1
  c serve 0.25 0 -1
-1
"""


def test_both_grammars_give_the_same_model() -> None:
    from_xml = to_simstack(read_lqnx(XML, "pair.lqnx"), "pair").doc
    from_text = to_simstack(read_lqn_text(TEXT, "pair.lqn"), "pair").doc
    assert {k: v for k, v in from_xml.items() if k != "description"} == \
        {k: v for k, v in from_text.items() if k != "description"}
    assert from_xml["hosts"] == {"terminals": {"cores": "inf"}, "cpu": {"cores": 2, "discipline": "fifo"}}
    assert from_xml["components"] == {"server": {"kind": "threads", "host": "cpu", "size": 4}}
    assert from_xml["workloads"] == {"clients": {"type": "closed", "request": "cycle", "clients": 3,
                                                 "think": "exp(2)"}}
    # Deterministic: exactly two calls, a third of the demand before, between and after them.
    assert from_xml["requests"]["cycle"] == {"host": "terminals", "steps": [{"name": "cycle", "steps": [
        {"cpu": "exp(0.0333333333333)"}, {"repeat": 2, "steps": [{"call": "serve"}, {"cpu": "exp(0.0333333333333)"}]}
    ]}]}
    assert from_xml["requests"]["serve"] == {"host": "cpu", "steps": [{"hold": "server", "name": "serve", "steps": [
        {"cpu": "gamma(0.2, 0.5)"}, "reply", {"cpu": "const(0.4)"}]}]}


def test_import_writes_a_folder_that_loads_and_notes_every_element(tmp_path: Path, capsys) -> None:
    src = tmp_path / "pair.lqnx"
    src.write_bytes(XML)
    assert interop_main(["import", str(src), f"out={tmp_path / 'pair'}"]) == 0
    spec = load_model(tmp_path / "pair")
    assert set(spec.requests) == {"cycle", "serve"} and set(spec.workloads) == {"clients"}
    assert (tmp_path / "pair" / "model.yaml").read_text().startswith("# Imported from the LQN model pair.lqnx")
    notes = (tmp_path / "pair" / "NOTES.md").read_text()
    for element in ("processor terminals (inf) | 6", "processor cpu (fcfs) | 17", "reference task clients",
                    "task server (fcfs, multiplicity 4) | 18", "entry serve (2 phase(s)) | 19",
                    "pragma multiserver=conway"):
        assert element in notes, element
    # A second import into the same folder replaces it when told to; a folder holding another model is refused.
    assert interop_main(["import", str(src), f"out={tmp_path / 'pair'}"]) == 2
    assert "give replace=yes" in capsys.readouterr().err
    assert interop_main(["import", str(src), f"out={tmp_path / 'pair'}", "replace=yes"]) == 0
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "model.yaml").write_text("name: mine\n")
    assert interop_main(["import", str(src), f"out={tmp_path / 'mine'}", "replace=yes"]) == 2
    assert "did not write" in capsys.readouterr().err


REPLICATED = b"""<lqn-model name="rep">
  <processor name="client" replication="4">
    <task name="client" scheduling="ref" replication="4">
      <entry name="client" type="PH1PH2"><entry-phase-activities>
        <activity name="c1" phase="1" host-demand-mean="1"><synch-call dest="server" calls-mean="1"/></activity>
      </entry-phase-activities></entry>
    </task>
  </processor>
  <processor name="server" replication="2">
    <task name="server" replication="2">
      <fan-in source="client" value="2"/>
      <entry name="server" type="PH1PH2"><entry-phase-activities>
        <activity name="s1" phase="1" host-demand-mean="1"/>
      </entry-phase-activities></entry>
    </task>
  </processor>
</lqn-model>
"""


def test_replication_is_written_out_with_lqsims_routing() -> None:
    doc = to_simstack(read_lqnx(REPLICATED, "rep.lqnx")).doc
    assert sorted(doc["hosts"]) == ["client_1", "client_2", "client_3", "client_4", "server_1", "server_2"]
    called = {name: req["steps"][0]["steps"][1]["steps"][0]["call"]
              for name, req in doc["requests"].items() if name.startswith("client")}
    # fan-out 4 x fan-in ... = 2 x 2: client replica s calls server ((s - 1) mod 2) + 1
    assert called == {"client_1": "server_1", "client_2": "server_2", "client_3": "server_1", "client_4": "server_2"}
    assert doc["components"]["server_2_task"] == {"kind": "threads", "host": "server_2", "size": 1}


# A replicated entry 'srv' beside an entry 'srv_0' of its own (a name that looks like a replica's).
REPLICA_NAMES = REPLICATED.replace(b'<fan-in source="client" value="2"/>',
                                   b'<fan-in source="client" value="2"/>').replace(
    b'</lqn-model>', b"""  <processor name="solo"><task name="solo"><entry name="server_0" type="PH1PH2">
    <entry-phase-activities><activity name="z1" phase="1" host-demand-mean="1"/></entry-phase-activities>
  </entry></task></processor>
</lqn-model>""")


def test_replicas_are_matched_to_their_lqn_entry_not_by_their_name() -> None:
    """Each written-out replica is compared with the entry it copies (lqsim reports a replicated
    entry once, per replica); an entry whose own name ends in _0 is never taken for a replica."""
    imported = to_simstack(read_lqnx(REPLICA_NAMES, "rep.lqnx"))
    assert imported.entries == {"client_1": "client", "client_2": "client", "client_3": "client",
                                "client_4": "client", "server_1": "server", "server_2": "server",
                                "server_0": "server_0"}
    lqsim = LqnResults("lqsim", {"client": Result(0.4, 0.01), "server": Result(0.8, 0.01)}, {}, {})
    simulated = {name: Result(0.8 if name.startswith("server") else 0.4, 0.01) for name in imported.entries}
    rows = compare(imported, lqsim, simulated)
    assert sorted(r.entry for r in rows) == ["client_1", "client_2", "client_3", "client_4", "server_1", "server_2"]
    assert all(r.ok for r in rows)


def refusal(body: str, *, text: bool = False) -> str:
    with pytest.raises(ModelError) as info:
        if text:
            to_simstack(read_lqn_text(body, "bad.lqn"))
        else:
            to_simstack(read_lqnx(body.encode(), "bad.lqnx"))
    return str(info.value)


def one_task(task_attrs: str = "", proc_attrs: str = "", activity: str = 'host-demand-mean="1"',
             extra: str = "") -> str:
    return f"""<lqn-model name="m">
  <processor name="p" {proc_attrs}>
    <task name="c" scheduling="ref"><entry name="c" type="PH1PH2"><entry-phase-activities>
      <activity name="c1" phase="1" host-demand-mean="1"><synch-call dest="e" calls-mean="1"/></activity>
    </entry-phase-activities></entry></task>
    <task name="t" {task_attrs}>
      <entry name="e" type="PH1PH2"><entry-phase-activities>
        <activity name="e1" phase="1" {activity}/>
      </entry-phase-activities></entry>{extra}
    </task>
  </processor>
</lqn-model>"""


MISSING = [
    (one_task('scheduling="rwlock"'), "bad.lqnx: line 6: rwlock task 't' needs one r-lock, r-unlock, w-lock and "
                                      "w-unlock entry, got None"),
    (one_task('scheduling="burst"'), "bad.lqnx: line 4: a call to entry 'e' of the reference task 't'; reference "
                                     "tasks only call"),
    (one_task(proc_attrs='scheduling="rand"'), "bad.lqnx: line 2: processor 'p' scheduling 'rand': random-order "
                                               "scheduling, which simstack has no discipline for"),
    (one_task('scheduling="hol"'), "bad.lqnx: line 6: task 't' scheduling 'hol': head-of-line priority between "
                                   "a task's entries, which simstack has no task kind for"),
]


@pytest.mark.parametrize(("model", "message"), MISSING)
def test_missing_constructs_are_refused_by_name_and_line(model: str, message: str) -> None:
    assert refusal(model) == message


def test_hyperexponential_and_pareto_slices_map_to_their_distributions() -> None:
    """cv² > 1: lqsim's balanced hyperexponential, hyperexp(mean, cv); a bursty reference task:
    Pareto slices with the activity's cv² (1 when not given), pareto(mean, cv)."""
    model = """<lqn-model name="m">
  <processor name="p" scheduling="inf">
    <task name="b" scheduling="burst" multiplicity="2"><entry name="b" type="PH1PH2"><entry-phase-activities>
      <activity name="b1" phase="1" host-demand-mean="3"><synch-call dest="e" calls-mean="1"/></activity>
    </entry-phase-activities></entry></task>
    <task name="t" scheduling="fcfs"><entry name="e" type="PH1PH2"><entry-phase-activities>
      <activity name="e1" phase="1" host-demand-mean="2" host-demand-cvsq="4"/>
    </entry-phase-activities></entry></task>
  </processor>
</lqn-model>"""
    imported = to_simstack(read_lqnx(model.encode(), "m.lqnx"))
    doc = imported.doc
    assert doc["requests"]["e"]["steps"][0]["steps"] == [{"cpu": "hyperexp(2, 2)"}]
    assert doc["requests"]["b"]["steps"][0]["steps"] == [
        {"cpu": "pareto(1.5, 1)"}, {"repeat": "geometric(1)", "steps": [{"call": "e"}, {"cpu": "pareto(1.5, 1)"}]}]
    assert doc["workloads"]["b"] == {"type": "closed", "request": "b", "clients": 2}
    assert any("burst" in element and "Pareto" in target for element, _line, target in imported.mapping)
    build_spec(doc, None)


RWLOCK = """<lqn-model name="rw">
  <processor name="c" scheduling="inf">
    <task name="r" scheduling="ref" multiplicity="3"><entry name="r" type="PH1PH2"><entry-phase-activities>
      <activity name="r1" phase="1" host-demand-mean="0.5" call-order="DETERMINISTIC">
        <synch-call dest="rl" calls-mean="1"/><synch-call dest="ru" calls-mean="1"/></activity>
    </entry-phase-activities></entry></task>
    <task name="w" scheduling="ref"><entry name="w" type="PH1PH2"><entry-phase-activities>
      <activity name="w1" phase="1" host-demand-mean="0.5" call-order="DETERMINISTIC">
        <synch-call dest="wl" calls-mean="1"/><synch-call dest="wu" calls-mean="1"/></activity>
    </entry-phase-activities></entry></task>
  </processor>
  <processor name="s" scheduling="fcfs">
    <task name="lock" scheduling="rwlock" multiplicity="2">
      <entry name="ru" type="PH1PH2" rwlock="r-unlock"><entry-phase-activities>
        <activity name="ru1" phase="1" host-demand-mean="0.1"/></entry-phase-activities></entry>
      <entry name="rl" type="PH1PH2" rwlock="r-lock"><entry-phase-activities>
        <activity name="rl1" phase="1" host-demand-mean="0.2"/></entry-phase-activities></entry>
      <entry name="wu" type="PH1PH2" rwlock="w-unlock"><entry-phase-activities>
        <activity name="wu1" phase="1" host-demand-mean="0.1"/></entry-phase-activities></entry>
      <entry name="wl" type="PH1PH2" rwlock="w-lock"><entry-phase-activities>
        <activity name="wl1" phase="1" host-demand-mean="0.2"/></entry-phase-activities></entry>
    </task>
  </processor>
</lqn-model>"""


def test_an_rwlock_task_is_a_writers_first_lock() -> None:
    """The lock entries acquire in their mode and then run their phase; the unlock entries run
    theirs and release; multiplicity is the most readers at once. The model runs."""
    doc = to_simstack(read_lqnx(RWLOCK.encode(), "rw.lqnx")).doc
    assert doc["components"]["lock"] == {"kind": "lock", "readers": True, "order": "writers", "max_readers": 2}
    body = {e: doc["requests"][e]["steps"] for e in ("rl", "ru", "wl", "wu")}
    assert body["rl"] == [{"acquire": "lock", "mode": "read"}, {"steps": [{"cpu": "exp(0.2)"}], "name": "rl"}]
    assert body["ru"] == [{"steps": [{"cpu": "exp(0.1)"}], "name": "ru"}, {"release": "lock", "mode": "read"}]
    assert body["wl"][0] == {"acquire": "lock", "mode": "write"}
    assert body["wu"][-1] == {"release": "lock", "mode": "write"}
    res = run(doc, seed=1, replications=1, horizon=200.0)
    assert {"r", "w"} <= set(res.requests["request"]) and res.blocked.empty


FAIR = """<lqn-model name="fair">
  <processor name="c" scheduling="inf">
    <task name="c0" scheduling="ref" multiplicity="4"><entry name="c0" type="PH1PH2"><entry-phase-activities>
      <activity name="c01" phase="1" host-demand-mean="0.1"><synch-call dest="s0" calls-mean="1"/></activity>
    </entry-phase-activities></entry></task>
    <task name="c1" scheduling="ref" multiplicity="4"><entry name="c1" type="PH1PH2"><entry-phase-activities>
      <activity name="c11" phase="1" host-demand-mean="0.1"><synch-call dest="s1" calls-mean="1"/></activity>
    </entry-phase-activities></entry></task>
  </processor>
  <processor name="server" scheduling="cfs" quantum="0.1">
    <group name="g1" share="0.7">
      <task name="s0" scheduling="fcfs"><entry name="s0" type="PH1PH2"><entry-phase-activities>
        <activity name="s01" phase="1" host-demand-mean="1"/></entry-phase-activities></entry></task>
    </group>
    <group name="g2" share="0.3" cap="true">
      <task name="s1" scheduling="fcfs"><entry name="s1" type="PH1PH2"><entry-phase-activities>
        <activity name="s11" phase="1" host-demand-mean="1"/></entry-phase-activities></entry></task>
    </group>
  </processor>
</lqn-model>"""


def test_cfs_groups_become_a_fair_host() -> None:
    imported = to_simstack(read_lqnx(FAIR.encode(), "fair.lqnx"))
    doc = imported.doc
    assert doc["hosts"]["server"] == {"cores": 1, "discipline": "fair",
                                      "groups": {"g1": {"share": 0.7}, "g2": {"share": 0.3, "cap": True}}}
    assert doc["components"]["s0_task"] == {"kind": "threads", "host": "server", "size": 1, "group": "g1"}
    assert doc["components"]["s1_task"]["group"] == "g2"
    assert ("group g2 (share 0.3, cap)", 15, "hosts.server.groups.g2") in imported.mapping
    res = run(doc, seed=1, replications=1, horizon=500.0)
    counts = res.requests["request"].value_counts()
    # s1's group is capped at 30 % of the core: c1 cycles about 0.3 / 1.1 per second at most
    assert counts["c0"] > 2 * counts["c1"]


def test_a_group_on_a_processor_without_cfs_is_refused() -> None:
    model = FAIR.replace('scheduling="cfs" quantum="0.1"', 'scheduling="fcfs"')
    assert refusal(model) == ("bad.lqnx: line 11: group 'g1' is on processor 'server', which does not schedule "
                              "cfs (groups only share a completely fair scheduling processor)")


GRAPH = """G "" 1e-5 50 -1
P 1
  p p f
-1
T 3
  t c1 r e1 -1 p
  t c2 r e2 -1 p
  t s n s1 s2 -1 p
-1
E 4
  y e1 s1 1 -1
  y e2 s2 1 -1
  A s1 a1
  A s2 a2
-1
A s
  s a1 0.1
  s a2 0.1
  s a3 0.1
:
{graph}
-1
"""


def test_unstructured_graphs_are_refused_with_the_precedence_line() -> None:
    sync = refusal(GRAPH.replace("t s n s1 s2 -1 p", "t s n s1 s2 -1 p m 2").format(
        graph="a1 & a2 -> a3; a3[s1, s2]"), text=True)
    assert sync == ("bad.lqn: line 21: task 's': the join across entries 'a1 & a2' (an LQN synchronisation "
                    "server) is imported only in a task of one thread (fcfs, multiplicity 1), as lqsim runs it")
    either = refusal(GRAPH.format(graph="a1 + a2 -> a3; a3[s1, s2]"), text=True)
    assert either == ("bad.lqn: line 21: task 's': the join across entries 'a1 + a2' is not an AND-join of all "
                      "its activities (an OR or quorum join across entries has no counterpart)")
    one_thread = to_simstack(read_lqn_text(GRAPH.format(graph="a1 & a2 -> a3; a3[s1, s2]"), "sync.lqn")).doc
    assert one_thread["requests"]["s2"]["steps"][2:] == [
        {"release": "s_sync_arrive_s2"}, {"acquire": "s_sync_met_s2"}, {"release": "s_sync_gate_s2"},
        {"acquire": "s_sync_done_s2"}]
    loop = refusal(GRAPH.format(graph="a1 -> 2 * a3, a2; a3[s1]"), text=True)
    assert loop == ("bad.lqn: line 21: loop branch 'a3' replies: a loop runs a random number of times, so it "
                    "cannot reply (LQN forbids it too)")
    fork = refusal(GRAPH.replace("t s n s1 s2 -1 p", "t s n s1 s2 -1 p m 2").format(
        graph="a1 -> a2 & a3; a2 & b -> a3"), text=True)
    assert fork.startswith("bad.lqn: line 21: precedence of task 's' names the activity 'b'")
    two_threads = GRAPH.replace("t s n s1 s2 -1 p", "t s n s1 s2 -1 p m 2")
    fork = refusal(two_threads.replace("  s a3 0.1\n", "  s a3 0.1\n  s a4 0.1\n").format(
        graph="a1 -> a3 & a4; a4 & a2 -> a3"), text=True)
    assert fork.endswith("only graphs whose forks meet their own joins are imported (or any graph in a task with "
                         "one thread)"), fork
    cycle = refusal(GRAPH.format(graph="a1 -> a3; a3 -> a1"), text=True)
    assert cycle == ("bad.lqn: line 17: activity 'a1' of task 's' is reached again: a cycle (write loops with '*')")


HOSTILE = [
    (b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY a "aaaa">]><lqn-model name="&a;"/>',
     "bad.lqnx: refused: DTDForbidden"),
    (b'<lqn-model name="m"><processor name="p"><task name="t" multiplicity="1000000000">'
     b'<entry name="e" type="PH1PH2"/></task></processor></lqn-model>',
     "bad.lqnx: line 1: multiplicity must be at most 100000, got '1000000000' (refused as too large)"),
    (b'<lqn-model name="m"><processor name="p" colour="red"/></lqn-model>',
     "bad.lqnx: line 1: <processor> has the attribute 'colour', which the LQN schema does not give it"),
    (b'<lqn-model name="m"><lqx>x = 1;</lqx><processor name="p"/></lqn-model>', None),
    (b'<lqn-model name="m"><processor name="p"><task name="t"><entry name="e" type="PH1PH2">'
     b'<entry-phase-activities><activity name="a" phase="1" host-demand-mean="$s"/></entry-phase-activities>'
     b'</entry></task></processor></lqn-model>',
     "bad.lqnx: line 1: host-demand-mean is the variable '$s': SPEX/LQX variables are not read"),
    (b'<lqn-model name="m"><processor name="p"', "bad.lqnx: line 1: not well-formed XML"),
]


@pytest.mark.parametrize(("data", "message"), HOSTILE)
def test_hostile_or_foreign_files_are_refused(data: bytes, message: str | None) -> None:
    with pytest.raises(ModelError) as info:
        to_simstack(read_lqnx(data, "bad.lqnx"))
    assert str(info.value).startswith(message or "bad.lqnx: line 1: <lqx> (an LQX program")


def test_cli_refusal_is_one_line_with_exit_code_2(tmp_path: Path, capsys) -> None:
    src = tmp_path / "bad.lqnx"
    src.write_text(one_task('scheduling="hol"'))
    assert interop_main(["import", str(src), f"out={tmp_path / 'out'}"]) == 2
    err = capsys.readouterr().err
    assert err == ("simstack: error: bad.lqnx: line 6: task 't' scheduling 'hol': head-of-line priority between "
                   "a task's entries, which simstack has no task kind for\n")
    assert not (tmp_path / "out").exists()
    assert interop_main(["import", str(src)]) == 2
    assert "usage: simstack import" in capsys.readouterr().err


def test_cli_refusal_reaches_the_terminal_escaped(tmp_path: Path, capsys) -> None:
    """A refused file's name (and the names in it) are the sender's: an escape sequence in
    them must not set the terminal's title or clear its screen."""
    src = tmp_path / "bad\x1b]0;pwned\x07.lqnx"
    src.write_text(one_task('scheduling="hol"'))
    assert interop_main(["import", str(src), f"out={tmp_path / 'out'}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("simstack: error: bad\\x1b]0;pwned\\x07.lqnx: line 6: ") and "\x1b" not in err
    assert err.count("\n") == 1


def test_the_simstack_command_dispatches_import_before_hydra(tmp_path: Path) -> None:
    import subprocess
    import sys

    src = tmp_path / "pair.lqn"
    src.write_text(TEXT.replace("s serve 0.2 0.4 -1", "s serve 0.2 0.4 -1\n  y serve nowhere 1 -1"))
    simstack = Path(sys.executable).with_name("simstack")
    done = subprocess.run([str(simstack), "import", str(src), f"out={tmp_path / 'out'}"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == "simstack: error: pair.lqn: line 16: entry 'nowhere' is not listed by any task\n"
    src.write_text(TEXT)
    done = subprocess.run([str(simstack), "import", str(src), f"out={tmp_path / 'out'}"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and (tmp_path / "out" / "model.yaml").is_file(), done.stderr


def test_an_imported_model_is_shown_in_model_time_units() -> None:
    """LQN times carry no unit (issue 29, item 11): an import says so, and its run prints model
    time units, not milliseconds."""
    from simstack.tables.console import summary_text

    doc = to_simstack(read_lqnx(XML, "pair.lqnx"), "pair").doc
    assert doc["settings"]["time_unit"] == "none"
    text = summary_text(run(doc, seed=1, replications=2, horizon=200.0))
    assert "mean_tu" in text and "model time units" in text and "mean_ms" not in text
