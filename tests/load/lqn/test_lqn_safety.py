"""``simstack import`` and ``export lqn`` given hostile or careless files (issue 30, items 2-4,
7-9): each refusal is one located line with exit code 2, nothing is written outside ``out=``,
nothing is replaced unless asked, and what is written is what the loader accepted."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from simstack.cli.lqn import main as interop_main
from simstack.errors import ModelError
from simstack.load.loader import build_spec, load_model
from simstack.load.lqn.from_simstack import to_lqnx
from simstack.load.lqn.lqn_text import read_lqn_text
from simstack.load.lqn.lqnx import read_lqnx
from simstack.load.lqn.to_simstack import to_simstack

from .test_lqn_import import TEXT, XML

CLIENT = """<lqn-model name="m"><processor name="p" scheduling="fcfs">
<task name="r" scheduling="ref" think-time="1"><entry name="re" type="PH1PH2"><entry-phase-activities>
<activity name="r1" phase="1" host-demand-mean="{demand}"><synch-call dest="{dest}" calls-mean="1"/></activity>
</entry-phase-activities></entry></task>
{server}</processor></lqn-model>
"""
SERVER = """<task name="t" {attrs}><entry name="e" type="PH1PH2"><entry-phase-activities>
<activity name="e1" phase="1" host-demand-mean="0.1"/></entry-phase-activities></entry></task>"""


def xml(demand: str = "1", dest: str = "e", server: str = SERVER, attrs: str = "") -> bytes:
    return CLIENT.format(demand=demand, dest=dest, server=server.format(attrs=attrs)).encode()


def refused(data: bytes | str, name: str = "bad.lqnx") -> str:
    with pytest.raises(ModelError) as info:
        model = read_lqnx(data, name) if isinstance(data, bytes) else read_lqn_text(data, name)
        to_simstack(model)
    return str(info.value)


def cli(tmp_path: Path, capsys, *args: str) -> tuple[int, str]:
    code = interop_main(list(args))
    err = capsys.readouterr().err
    assert err.count("\n") <= 1 and "Traceback" not in err, err
    return code, err


# -- 30.2: replication that multiplies -----------------------------------------------------------
def replicated(clients: int, servers: int, fan: int, entries: int = 1) -> bytes:
    names = "".join(f'<entry name="s{i}" type="PH1PH2"><entry-phase-activities><activity name="s{i}_1" '
                    f'phase="1" host-demand-mean="0.1"/></entry-phase-activities></entry>' for i in range(entries))
    return f"""<lqn-model name="rep">
<processor name="c"><task name="c" scheduling="ref" replication="{clients}">
<fan-out dest="s" value="{fan}"/><entry name="c" type="PH1PH2"><entry-phase-activities>
<activity name="c1" phase="1" host-demand-mean="1"><synch-call dest="s0" calls-mean="1"/></activity>
</entry-phase-activities></entry></task></processor>
<processor name="s"><task name="s" replication="{servers}">{names}</task></processor>
</lqn-model>""".encode()


@pytest.mark.parametrize(("clients", "servers", "fan", "entries"), [(5_000, 5_000, 5_000, 1),
                                                                    (1, 50_000, 1, 2_000)])
def test_replication_that_multiplies_is_refused_when_read(clients: int, servers: int, fan: int, entries: int) -> None:
    started = time.perf_counter()
    message = refused(replicated(clients, servers, fan, entries))
    assert message.startswith("bad.lqnx: line 1: replication writes out ")
    assert "above the limit of 20,000 (simstack.load.limits.LQN_WRITTEN_OUT)" in message
    assert "limit=N on the command line" in message
    assert time.perf_counter() - started < 5  # refused before anything is built (was MemoryError after 9-66 s)


def test_the_command_line_raises_the_replication_limit(tmp_path: Path, capsys) -> None:
    src = tmp_path / "rep.lqnx"
    src.write_bytes(replicated(4, 4, 1))
    code, err = cli(tmp_path, capsys, "import", str(src), f"out={tmp_path / 'a'}", "limit=10")
    assert code == 2 and "above the limit of 10 " in err and not (tmp_path / "a").exists()
    assert cli(tmp_path, capsys, "import", str(src), f"out={tmp_path / 'a'}", "limit=1000")[0] == 0
    assert cli(tmp_path, capsys, "import", str(src), f"out={tmp_path / 'b'}", "limit=1e9")[0] == 2


# -- 30.3: what is written is what was validated -------------------------------------------------
def test_a_file_name_cannot_inject_yaml_and_notes_escape_what_came_from_the_file(tmp_path: Path, capsys) -> None:
    src = tmp_path / "x\nparameters: {evil: 1}\nname: other\n.lqnx"
    src.write_bytes(XML.replace(b'<pragma param="multiserver" value="conway"/>',
                                b'<pragma param="&lt;script&gt;alert(1)&lt;/script&gt;" value="[a](javascript:x)"/>'
                                b'<pragma param="term" value="&#x9b;2J&#x85;"/>'))  # C1 controls: valid XML
    assert cli(tmp_path, capsys, "import", str(src), f"out={tmp_path / 'out'}")[0] == 0
    text = (tmp_path / "out" / "model.yaml").read_text()
    doc = yaml.safe_load(text)
    assert "parameters" not in doc and doc["name"] == src.stem
    shown = r"x\x0aparameters: {evil: 1}\x0aname: other\x0a.lqnx"
    assert text.splitlines()[0] == f"# Imported from the LQN model {shown} by `simstack import`."
    notes = (tmp_path / "out" / "NOTES.md").read_text()
    assert "<script>" not in notes and "&lt;script&gt;" in notes
    assert "[a](javascript:x)" not in notes and r"\[a\](javascript:x)" in notes
    assert "\x9b" not in notes and "\x85" not in notes and r"\\x9b2J\\x85" in notes  # a backslash, escaped


# -- 30.4: out= is claimed, never overwritten unless asked ----------------------------------------
def test_an_existing_notes_file_or_the_input_itself_is_not_replaced(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "NOTES.md").write_text("my notes\n")
    src = tmp_path / "pair.lqnx"
    src.write_bytes(XML)
    code, err = cli(tmp_path, capsys, "import", str(src), f"out={out}")
    assert code == 2 and "holds a NOTES.md already; give replace=yes" in err
    code, err = cli(tmp_path, capsys, "import", str(src), f"out={out}", "replace=yes")
    assert code == 2 and "did not write" in err
    assert (out / "NOTES.md").read_text() == "my notes\n" and not (out / "model.yaml").exists()
    (out / "NOTES.md").unlink()
    (out / "NOTES.md").write_bytes(XML)  # the input is the file the import would write
    code, err = cli(tmp_path, capsys, "import", str(out / "NOTES.md"), f"out={out}", "replace=yes")
    assert code == 2 and "NOTES.md there is the file being imported" in err
    assert (out / "NOTES.md").read_bytes() == XML


def test_an_empty_out_is_refused(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pair.lqnx").write_bytes(XML)
    code, err = cli(tmp_path, capsys, "import", "pair.lqnx", "out=")
    assert code == 2 and "out= is empty" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pair.lqnx"]


# -- 30.7: tracebacks inside the documented limits ----------------------------------------------
def chain(n: int) -> bytes:
    bound = ' bound-to-entry="e"'
    acts = "".join(f'<activity name="a{i}" host-demand-mean="0.001"{bound if i == 0 else ""}/>' for i in range(n))
    prec = "".join(f'<precedence><pre><activity name="a{i}"/></pre><post><activity name="a{i + 1}"/></post>'
                   f'</precedence>' for i in range(n - 1))
    return xml(server=f'<task name="t"><entry name="e" type="NONE"/><task-activities>{acts}{prec}'
                      f'</task-activities></task>')


def nested_forks(n: int) -> str:
    acts = [f"s f{i} 0.001\n s x{i} 0.001\n s j{i} 0.001" for i in range(n)] + [f"s j{n} 0.001"]
    prec = [f"f{i} -> (0.5) {'f' if i < n - 1 else 'j'}{i + 1} + (0.5) x{i}" for i in range(n)]
    prec += [f"j{i + 1} + x{i} -> j{i}" for i in range(n)]
    return ('G "x" 1e-5 50 -1\nP 1\n p cpu i\n-1\nT 2\n t c r ce -1 cpu z 1\n t s n se -1 cpu\n-1\nE 2\n'
            ' s ce 1 -1\n y ce se 1 -1\n A se f0\n-1\nA s\n ' + "\n ".join(acts) + "\n:\n " + ";\n ".join(prec)
            + "\n-1\n")


def test_a_long_chain_imports_and_deep_forks_are_refused_by_line() -> None:
    doc = to_simstack(read_lqnx(chain(600), "chain.lqnx")).doc
    assert len(doc["requests"]["e"]["steps"][0]["steps"]) == 600
    build_spec(doc, None)
    build_spec(to_simstack(read_lqn_text(nested_forks(40), "deep.lqn")).doc, None)
    assert refused(nested_forks(300), "deep.lqn").startswith(
        "deep.lqn: line 168: task 's': forks and loops nested more than 50 deep at activity 'f51'")


def test_huge_values_and_odd_counts_are_refused_or_imported_not_a_traceback() -> None:
    assert refused(xml(demand="1e308")) == \
        "bad.lqnx: line 3: host-demand-mean must be at most 1e+12, got '1e308'"
    assert refused(xml(demand="1_000")) == "bad.lqnx: line 3: host-demand-mean must be a number, got '1_000'"
    rwlock = ('<task name="t" scheduling="rwlock" multiplicity="inf">' + "".join(
        f'<entry name="{n}" rwlock="{r}" type="PH1PH2"><entry-phase-activities><activity name="{n}1" phase="1" '
        f'host-demand-mean="0.1"/></entry-phase-activities></entry>'
        for n, r in (("e", "r-lock"), ("ru", "r-unlock"), ("wl", "w-lock"), ("wu", "w-unlock"))) + "</task>")
    doc = to_simstack(read_lqnx(xml(server=rwlock), "rw.lqnx")).doc
    assert doc["components"]["t"] == {"kind": "lock", "readers": True, "order": "writers"}
    no_graph = TEXT.replace("s serve 0.2 0.4 -1", "A serve a\n  s serve 0.2 0.4 -1")
    assert "entry 'serve' has both phases" in refused(no_graph, "pair.lqn") or \
        "defines no activities" in refused(no_graph, "pair.lqn")
    assert refused(TEXT.replace("  s serve 0.2 0.4 -1\n  c serve 0.25 0 -1\n", "  A serve a\n"), "pair.lqn") == \
        "pair.lqn: line 9: entry 'serve' starts at activity 'a', but task 'server' defines no activities"


def test_odd_out_folders_and_files_are_one_line(tmp_path: Path, capsys) -> None:
    src = tmp_path / "pair.lqnx"
    src.write_bytes(XML)
    code, err = cli(tmp_path, capsys, "import", str(src), f"out={src / 'sub'}")
    assert code == 2 and "cannot make the folder" in err
    code, err = cli(tmp_path, capsys, "import", str(src), f"out={src}")
    assert code == 2 and "exists and is not a folder" in err
    folder = tmp_path / "m"
    assert cli(tmp_path, capsys, "import", str(src), f"out={folder}")[0] == 0
    (tmp_path / "d.lqnx").mkdir()
    code, err = cli(tmp_path, capsys, "export", "lqn", f"model={folder}", f"out={tmp_path / 'd.lqnx'}")
    assert code == 2 and "is a folder" in err
    code, err = cli(tmp_path, capsys, "export", "lqn", f"model={folder}", f"out={tmp_path / 'no' / 'x.lqnx'}")
    assert code == 2 and "its folder does not exist" in err


def test_a_priority_of_five_thousand_digits_is_refused_by_line() -> None:
    """Found by the fuzzer (case 3294 of its first long run): int() of 5,000 digits raised ValueError."""
    text = TEXT.replace("t server n serve -1 cpu m 4", "t server n serve -1 cpu " + "1" * 5000 + " m 4")
    assert refused(text, "pair.lqn") == ("pair.lqn: line 9: priority must be a finite number >= 0, got "
                                         "'111111111111111111111111111111...(5000 characters)'")


def test_byte_order_marks_and_a_path_with_an_equals_sign(tmp_path: Path, capsys) -> None:
    for name, data in (("bom.lqnx", b"\xef\xbb\xbf" + XML), ("u16.lqnx", XML.decode().encode("utf-16")),
                       ("u16.lqn", TEXT.encode("utf-16")), ("a=b.lqn", TEXT.encode())):
        (tmp_path / name).write_bytes(data)
        code, err = cli(tmp_path, capsys, "import", str(tmp_path / name), f"out={tmp_path / ('o' + name)}")
        assert code == 0, (name, err)
        assert set(load_model(tmp_path / ("o" + name)).requests) == {"cycle", "serve"}


# -- 30.8: no work dropped in silence; the loader's check, located in the LQN file ---------------
def test_an_activity_bound_to_a_misspelled_entry_is_refused() -> None:
    server = ('<task name="t"><entry name="e" type="NONE"/><task-activities>'
              '<activity name="a" bound-to-entry="ee" host-demand-mean="0.1"/></task-activities></task>')
    assert refused(xml(server=server)) == \
        "bad.lqnx: line 5: activity 'a' is bound to entry 'ee', which task 't' does not have; its entries: e"


def test_activities_no_entry_starts_are_refused() -> None:
    text = ('G "x" 1e-5 50 -1\nP 1\n p cpu f\n-1\nT 2\n t c r ce -1 cpu z 1\n t s n se -1 cpu\n-1\nE 2\n'
            ' s ce 1 -1\n y ce se 1 -1\n-1\nA s\n' + "".join(f" s a{i} 0.1\n" for i in range(3000)) + ":\n"
            + ";\n".join(f" a{i} -> a{i + 1}" for i in range(2999)) + "\n-1\n")
    assert refused(text, "lost.lqn").startswith("lost.lqn: line 14: task 's': no entry starts its 3000 activities "
                                                "(a0, a1, a2, ...)")


@pytest.mark.parametrize(("server", "message"), [
    (SERVER.replace('<activity name="e1" phase="1" host-demand-mean="0.1"/>',
                    '<activity name="e1" phase="1" host-demand-mean="0.1"><synch-call dest="e" calls-mean="1"/>'
                    '</activity>'), "bad.lqnx: line 6: entry 'e' calls 'e': a cycle of calls (e -> e)"),
    (SERVER.replace("</entry-phase-activities>", '</entry-phase-activities><forwarding dest="e" prob="1"/>'),
     "bad.lqnx: line 6: entry 'e' forwards 'e': a cycle of calls (e -> e)"),
])
def test_an_entry_that_calls_or_forwards_to_itself_is_refused(server: str, message: str) -> None:
    assert refused(xml(server=server)).startswith(message)


def test_a_refusal_of_the_loader_names_the_lqn_element_and_line(tmp_path: Path, capsys) -> None:
    src = tmp_path / "fast.lqnx"
    src.write_bytes(XML.replace(b'<entry name="serve" type="PH1PH2">',
                                b'<entry name="serve" type="PH1PH2" open-arrival-rate="1e9">'))
    code, err = cli(tmp_path, capsys, "import", str(src), f"out={tmp_path / 'out'}")
    assert code == 2 and not (tmp_path / "out").exists()
    assert err.startswith("simstack: error: fast.lqnx: line 19: open arrivals at entry serve: an arrival rate of ")
    assert "(the imported model's workloads.serve)" in err


# -- 30.9: names an LQN file cannot hold ------------------------------------------------------
HAND = {"name": "hand", "hosts": {"cpu": {"cores": 1}},
        "components": {"pool": {"kind": "threads", "host": "cpu", "size": 2}},
        "requests": {"work": [{"hold": "pool", "steps": [{"cpu": "exp(1ms)"}]}]},
        "workloads": {"users": {"type": "closed", "request": "work", "clients": 2, "think": "exp(10ms)"}}}


@pytest.mark.parametrize("bad", ["a\x1bb", "a\x00b", "a\x0bb", "a\ufffeb", "a b", "a..b", "a@b", "café", "x" * 5000])
def test_a_name_lqn_cannot_hold_is_refused_with_its_place(bad: str) -> None:
    import copy

    doc = copy.deepcopy(HAND)
    doc["components"] = {bad: doc["components"]["pool"]}
    doc["requests"]["work"][0]["hold"] = bad
    try:
        spec = build_spec(doc, None)
    except ModelError:
        pytest.skip("the loader refuses this name itself")
    with pytest.raises(ModelError) as info:
        to_lqnx(spec)
    assert str(info.value).startswith("components.") and "cannot be an LQN name" in str(info.value)
    assert "\x1b" not in str(info.value) and "\x00" not in str(info.value)


def test_a_description_with_control_characters_exports_as_xml_that_reads_back() -> None:
    spec = build_spec({**HAND, "description": "line\x1b[31m red\x0b\ufffe end"}, None)
    model = read_lqnx(to_lqnx(spec).encode(), "hand.lqnx")
    assert model.comment == r"line\x1b[31m red\x0b\ufffe end"
