"""A Ray cluster on this machine, started as a real one is: a head and worker nodes joined by
address on 127.0.0.1, each its own ``ray start`` process (its own process group, working
directory and temporary directory), so that one node can be killed alone, as a lost machine.

A node may run another Python (a fresh virtual environment holding only the installed
wheel) and may be kept from seeing folders of this machine (the checkout, the submitting
study's folder): where the kernel lets this process make a private mount namespace
(``unshare -m``, as root), each such folder is covered there with an empty one, so a task
that read the checkout instead of what travelled with it fails. ``hidden`` says whether that
was possible here. Used by the cluster tests and ``benchmarks/cluster.py``.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

STARTED = "Ray runtime started"
ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}  # a throwaway cluster of one's own


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def can_hide() -> bool:
    """Whether this process may cover folders for a node (a private mount namespace)."""
    if shutil.which("unshare") is None or sys.platform != "linux":
        return False
    try:
        done = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@dataclass
class Node:
    name: str
    folder: Path  # its working and temporary directory
    process: subprocess.Popen[bytes]
    log: Path
    ray_dir: Path  # Ray's own session files (short: a socket's path must stay under 108 bytes)

    def alive(self) -> bool:
        return self.process.poll() is None

    def _processes(self) -> list[tuple[int, str]]:
        """The node's processes (pid, command line): its ``ray start`` and every descendant
        (Ray gives each worker process a process group of its own)."""
        out = subprocess.run(["ps", "-e", "-o", "pid=,ppid=,args="], capture_output=True, text=True).stdout
        rows = [line.split(None, 2) for line in out.splitlines() if line.strip()]
        children: dict[int, list[tuple[int, str]]] = {}
        for row in rows:
            children.setdefault(int(row[1]), []).append((int(row[0]), row[2] if len(row) > 2 else ""))
        found, todo = [], [self.process.pid]
        while todo:
            for pid, args in children.get(todo.pop(), []):
                found.append((pid, args))
                todo.append(pid)
        return found

    def task_pids(self, task: str = "") -> list[int]:
        """The node's worker processes running a task now (Ray names them after the task's
        function: ``task`` picks one), actors and Ray's own agents left out."""
        return [pid for pid, args in self._processes() if args.startswith(f"ray::{task}")
                and not any(word in args for word in ("IDLE", "Agent"))]

    def freeze_task(self, task: str) -> int | None:
        """A worker process running ``task`` stopped (SIGSTOP) mid-task: its pid, or None when
        none runs it now. Ray names a worker after its task only while the function runs, and
        sends the result after the name goes back, so a process frozen under the task's name
        has not sent its result: killing the node now always loses that task, however short."""
        for pid in self.task_pids(task):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
                title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
                if title.startswith(f"ray::{task}"):
                    return pid
                os.kill(pid, signal.SIGCONT)  # it finished between the two looks
        return None

    def kill(self) -> None:
        """The whole node at once, as a machine lost: its raylet, agents and worker processes."""
        for pid, _ in self._processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        workers = self._processes()
        if self.alive():
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        for pid, _ in workers:  # what outlived its node (worker processes have groups of their own)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.alive():
            self.process.wait(timeout=30)
        shutil.rmtree(self.ray_dir, ignore_errors=True)


@dataclass
class LocalCluster:
    """``start_head`` then ``add_node`` (each waits until its node runs); ``stop`` ends them all."""

    base: Path
    port: int = field(default_factory=free_port)
    nodes: list[Node] = field(default_factory=list)
    hidden: bool = False

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The environment of every process of the cluster, the driver's included."""
        return {**os.environ, **ENV}

    def _start(self, name: str, args: list[str], python: str, hide: list[Path], timeout: float) -> Node:
        folder = self.base / name
        (folder / "tmp").mkdir(parents=True, exist_ok=True)
        log = folder / "ray-start.log"
        ray_dir = Path(tempfile.mkdtemp(prefix="ray-"))
        command = [python, "-c", "from ray.scripts.scripts import main; main()", "start", "--block",
                   "--node-ip-address", "127.0.0.1", "--temp-dir", str(ray_dir),
                   "--disable-usage-stats", *args]
        covered = [str(p) for p in hide if p.is_dir()]
        if covered and self.hidden:
            mounts = " && ".join(f"mount -t tmpfs -o size=1m none {shlex.quote(p)}" for p in covered)
            command = ["unshare", "-m", "--propagation", "private", "sh", "-c", f'{mounts} && exec "$@"', "sh",
                       *command]
        env = {**self.env(), "TMPDIR": str(folder / "tmp")}
        env.pop("PYTHONPATH", None)
        with log.open("wb") as out:
            process = subprocess.Popen(command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        node = Node(name, folder, process, log, ray_dir)
        self.nodes.append(node)
        deadline = time.monotonic() + timeout
        while STARTED not in log.read_text(errors="replace"):
            if not node.alive() or time.monotonic() > deadline:
                text = log.read_text(errors="replace")[-3000:]
                self.stop()
                raise RuntimeError(f"ray start of {name} failed or timed out:\n{text}")
            time.sleep(0.3)
        return node

    def start_head(self, cpus: int = 0, python: str = sys.executable, timeout: float = 120) -> Node:
        """The head: by default it runs no task (0 CPUs), so every task runs on a worker node."""
        return self._start("head", ["--head", "--port", str(self.port), "--num-cpus", str(cpus),
                                    "--include-dashboard", "false"], python, [], timeout)

    def add_node(self, name: str, cpus: int = 1, python: str = sys.executable, hide: list[Path] | None = None,
                 timeout: float = 120) -> Node:
        return self._start(name, ["--address", self.address, "--num-cpus", str(cpus)], python, hide or [], timeout)

    def stop(self) -> None:
        for node in reversed(self.nodes):
            node.stop()

    def __enter__(self) -> LocalCluster:
        self.hidden = can_hide()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()


def wheel_python(base: Path, checkout: Path) -> Path:
    """The Python of a fresh virtual environment under ``base`` that holds only this checkout's
    wheel (pure Python, built here); its third-party packages (Ray, NumPy...) are this
    environment's, seen through a ``.pth`` line, which adds their folder but does not run that
    folder's own ``.pth`` files: the checkout's editable install stays invisible there."""
    import sysconfig
    import venv

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PYTHONNOUSERSITE="1", SIMSTACK_HOTPATH="pure")
    base.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> str:
        done = subprocess.run(list(args), capture_output=True, text=True, cwd=base, env=env, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
        return done.stdout

    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(base / "dist"),
        str(checkout))
    wheel = next((base / "dist").glob("simstack-*.whl"))
    venv.create(base / "venv", with_pip=False)
    python = base / "venv" / "bin" / "python"
    purelib = run(str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    (Path(purelib) / "_dev_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run(sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel))
    return python
