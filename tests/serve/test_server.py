"""The server's safety and its one background run, without a browser: the token when bound to
another interface, a model that does not load, the command's arguments, cancellation."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("dash")

from simstack.cli.serve import is_loopback, main, parse  # noqa: E402
from simstack.engine.parallel import machine_cores  # noqa: E402
from simstack.errors import ConfigError  # noqa: E402
from simstack.load.loader import load_model  # noqa: E402
from simstack.serve.app import build  # noqa: E402
from simstack.serve.runner import Runner  # noqa: E402

MODELS = Path(__file__).resolve().parents[2] / "models"


def test_another_interface_needs_the_printed_token() -> None:
    app, _ = build(load_model("pipeline"), token="s3cret")
    client = app.server.test_client()
    assert client.get("/").status_code == 403
    assert client.get("/_dash-layout").status_code == 403
    assert client.get("/?token=wrong").status_code == 403
    assert client.get("/?token=s3cret").status_code == 200
    assert client.get("/_dash-layout").status_code == 200  # the cookie the first answer set


def test_loopback_needs_no_token() -> None:
    app, _ = build(load_model("pipeline"))
    assert app.server.test_client().get("/_dash-layout").status_code == 200
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4")


def test_a_model_that_does_not_load_is_a_readable_page() -> None:
    app, _ = build(None, "models/x/model.yaml: hosts.app.cores: expected a number, got 'two'")
    layout = app.server.test_client().get("/_dash-layout").get_data(as_text=True)
    assert "expected a number, got 'two'" in layout and "Traceback" not in layout


def test_the_command_refuses_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse(["model=pipeline", "port=8050"]) == {"model": "pipeline", "port": "8050"}
    for bad in (["port=80"], ["model=pipeline", "port=http"], ["model=pipeline", "colour=red"]):
        with pytest.raises(ConfigError):
            parse(bad)
    assert main(["model=pipeline", "port=99999"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("simstack: error: simstack serve: port=") and err.count("\n") == 1


def test_one_run_at_a_time_and_a_changed_setting_cancels_it() -> None:
    runner = Runner()
    model = MODELS / "pipeline" / "model.yaml"
    try:
        runner.start("?consoles=24", model, {"consoles": 24}, {}, 50, 3600.0)  # long: still running below
        first = runner.process
        runner.start("?consoles=30", model, {"consoles": 30}, {}, 50, 3600.0)  # replaces it, never a pile
        assert first is not None and not first.is_alive()
        assert runner.state().status == "running"
        assert runner.state().detail == "50 replications of the model and the setting on common random numbers, " \
                                        "horizon 3600 s"
        runner.cancel(unless="?consoles=30")  # the same setting: kept
        assert runner.state().status == "running"
        process = runner.process
        runner.cancel(unless="?consoles=31")
        assert runner.state().status == "cancelled" and process is not None and not process.is_alive()
    finally:
        runner.close()


def test_a_failed_run_is_a_line_not_the_servers_end() -> None:
    runner = Runner()
    runner.start("", MODELS / "pipeline" / "model.yaml", {"consoles": "many"}, {}, 2, 1.0)
    deadline = time.monotonic() + 30
    while runner.state().status == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    state = runner.state()
    assert state.status == "failed" and "got 'many'" in state.message


def _children(pid: int) -> set[int]:
    """The processes ``pid`` started (Linux /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found |= {int(c) for c in task.read_text().split()}
    return found


def _running(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "zombie" not in status.read_text()
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_jobs_runs_the_replications_in_that_many_processes_ended_with_the_run() -> None:
    runner = Runner(jobs=2)
    try:
        runner.start("?consoles=30", MODELS / "pipeline" / "model.yaml", {"consoles": 30}, {}, 50, 3600.0)
        assert runner.state().detail.endswith(", 2 at once")
        worker, pool, deadline = runner.process, set(), time.monotonic() + 60
        assert worker is not None and worker.pid is not None
        while len(pool) < 2 and time.monotonic() < deadline:
            pool = _children(worker.pid)
            time.sleep(0.1)
        assert len(pool) == 2  # the two worker processes of jobs=2, replications running side by side
        runner.cancel()
        deadline = time.monotonic() + 10
        while any(_running(p) for p in pool) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not any(_running(p) for p in pool)  # ended with the run
    finally:
        runner.close()


def test_jobs_is_at_most_the_machines_cores() -> None:
    cores = machine_cores()
    assert parse(["model=pipeline", f"jobs={cores}"])["jobs"] == str(cores)
    for bad in ("0", "two", str(cores + 1), "-1"):
        with pytest.raises(ConfigError, match=f"jobs= expects a whole number from 1 to {cores}"):
            parse(["model=pipeline", f"jobs={bad}"])
    with pytest.raises(ConfigError, match="jobs= goes with backend=processes"):
        parse(["model=pipeline", "jobs=1", "backend=ray", "ray_address=h:1"])


def test_a_fault_of_the_solver_is_a_line_on_the_page_not_a_stale_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    from simstack.serve import answers
    from simstack.serve.controls import derive

    spec = load_model("pipeline")
    controls = derive(spec)
    app, _ = build(spec)

    def fault(_: object) -> None:
        raise RuntimeError("solver exploded")

    monkeypatch.setattr(answers, "instant", fault)
    body = {"output": "instant.children", "outputs": {"id": "instant", "property": "children"},
            "inputs": [[{"id": {"type": "param", "name": c.name}, "property": "value", "value": c.value}
                        for c in controls.numbers],
                       [{"id": {"type": "flag", "name": f}, "property": "value", "value": []} for f in controls.flags],
                       {"id": "scenario", "property": "value", "value": None}],
            "changedPropIds": ["scenario.value"], "state": []}
    answer = app.server.test_client().post("/_dash-update-component", json=body)
    assert answer.status_code == 200  # not a 500 that leaves the last answer on the page
    text = answer.get_data(as_text=True)
    assert "the solver failed on this setting (RuntimeError: solver exploded)" in text and "Traceback" not in text
