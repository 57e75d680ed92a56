"""``backend=ray``: a study's items as Ray tasks, on a running cluster or on a Ray started here.

Why plain tasks (``ray.remote`` functions, ``ray.wait``) rather than Ray's multiprocessing
``Pool`` or an ``ActorPool``: an item is a pure function of its arguments, which is exactly
what a task is, and Ray reruns a task whose worker process or node was lost (``max_retries``,
"Task Fault Tolerance" in Ray's documentation) without our help. An actor holds state and
dies with its node; an actor pool would need its own restarts and resubmissions for the same
guarantee. ``jobs`` bounds the tasks in flight (the rest wait here, not in the cluster's
queue), so a study submits the longest items first, as with processes.

What travels: the function and the item, pickled with the model folders they name
(``simstack.engine.shipping``: a node needs only the installed package, no checkout and no
shared file system; Ray's ``runtime_env`` ``working_dir`` would ship this checkout instead,
and a study may live anywhere). An error raised by the function comes back as the error
itself (a model error stays a one-line model error). A worker node lost while the study
runs is said once on standard error, and again when the step completed without it.

An address is looked at before Ray is given it (``check_address``): Ray retries a refused
port or an unknown host for minutes, printing only its retry lines, so a port that is not a
number in 1..65535, a host that does not resolve or a head that does not answer a TCP
connection within seconds is refused in one line first.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from simstack.engine import shipping
from simstack.engine.parallel import (
    Items,
    Notice,
    Pool,
    split_shared,
    stderr_notice,
    unpacked,
    using,
    with_shared,
)
from simstack.errors import ConfigError, SimstackError

POLL_S = 2.0  # how often the cluster's nodes are looked at while tasks run
CONNECT_S = 3.0  # how long a Ray head's address is given to resolve, and then to answer a TCP connection
NESTED = 4  # the most workers an item's own maps get
_STARTED: list[bool] = []  # whether this process connected to Ray itself (and so disconnects)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("backend=ray needs Ray: pip install 'simstack[ray]' (or pip install ray)") from None
    return ray


def _secure_default(record: logging.LogRecord) -> bool:
    return "Token authentication is enabled" not in record.getMessage()


def hush_token_notice() -> None:
    """Ray's notice that the local Ray it starts uses token authentication (its secure
    default, nothing for the user to do) is noise beside simstack's one line; any other
    authentication warning, such as the cluster running without it, still shows."""
    logging.getLogger("ray._private.authentication.authentication_token_setup").addFilter(_secure_default)


def check_address(address: str, key: str = "ray.address") -> None:
    """Refuse, in one line, an address Ray would retry for minutes: ``HOST:PORT`` (or
    ``ray://HOST:PORT``) whose port is not in 1..65535, whose host does not resolve, or where
    nothing answers a TCP connection within ``CONNECT_S``. ``auto`` and ``local`` are Ray's
    own words and pass as they are."""
    if address in ("auto", "local"):
        return
    expected = "expected the Ray head's HOST:PORT, ray://HOST:PORT, or auto"
    scheme, sep, rest = address.partition("://")
    if sep and scheme != "ray":
        raise ConfigError(f"{key}={address}: unknown scheme {scheme + '://'!r}; {expected}")
    host, colon, port = (rest if sep else address).rpartition(":")
    host = host.strip("[]")  # [::1]:6379
    if not colon or not host:
        raise ConfigError(f"{key}={address}: no port; {expected}")
    if not port.isascii() or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ConfigError(f"{key}={address}: the port {port!r} is not a number from 1 to 65535; {expected}")
    try:
        found = _within(CONNECT_S, lambda: socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM))
    except OSError as exc:
        raise ConfigError(f"{key}={address}: the host {host!r} is not known ({exc.strerror or exc}); "
                          f"{expected}") from None
    if found is None:
        raise ConfigError(f"{key}={address}: the host {host!r} did not resolve within {CONNECT_S:g} s")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_S).close()
    except OSError as exc:
        reason = f"no answer within {CONNECT_S:g} s" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise ConfigError(f"{key}={address}: no Ray head answers there ({reason}); is the cluster started "
                          "(ray start --head)?") from None


def _within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()`` in a daemon thread, or None if it has not returned within ``seconds`` (a
    resolver that waits on an unreachable DNS server); its error raised here."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append((True, call()))
        except BaseException as exc:  # handed to the caller's thread
            box.append((False, exc))

    thread = threading.Thread(target=run, name="simstack-ray-address", daemon=True)
    thread.start()
    thread.join(seconds)
    if not box:
        return None
    ok, value = box[0]
    if not ok:
        raise value
    return value


@dataclass(frozen=True)
class RayCluster:
    """Ray tasks: on the cluster at ``address`` (``host:port`` of its head, ``auto``, or
    ``ray://host:10001``), else on a Ray started in this process and stopped with it."""

    address: str | None = None
    max_retries: int = 3
    notice: Notice = field(default=stderr_notice, compare=False)
    name: str = "ray"

    def __post_init__(self) -> None:
        if self.address:  # refused when chosen, even by a task that would not have connected
            check_address(self.address)

    def open(self, jobs: int) -> Pool:
        return _RayPool(self, jobs)

    def connect(self) -> Any:
        """Ray, connected (once per process; inside a Ray task, the task's own cluster)."""
        ray = _ray()
        if ray.is_initialized():
            return ray
        hush_token_notice()
        try:
            ray.init(address=self.address, include_dashboard=False, logging_level=logging.WARNING,
                     configure_logging=True, log_to_driver=True)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = f"the Ray cluster at ray.address={self.address}" if self.address else "a local Ray"
            raise ConfigError(f"backend=ray: could not start or join {where}: {' '.join(str(exc).split())[:300]}"
                              ) from None
        _STARTED.append(True)
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        cpus = int(ray.cluster_resources().get("CPU", 0))
        self.notice(f"Ray: {'joined the cluster at ' + self.address if self.address else 'started a local Ray'} "
                    f"({len(nodes)} node(s), {cpus} CPUs)")
        return ray

    def cpus(self) -> int:
        """The cluster's CPUs (what ``jobs`` defaults to with this backend)."""
        return max(1, int(self.connect().cluster_resources().get("CPU", 1)))

    def nested(self, jobs: int, items: int) -> int:
        """The cluster's spare share per item, at most ``NESTED`` (a capacity proof's c and c + 1,
        and a neighbour or two): an item's own maps become Ray tasks too."""
        return max(1, min(NESTED, jobs // max(1, items)))

    def release(self) -> None:
        """Disconnect, when this process connected (a task inside a Ray job leaves its Ray be)."""
        if _STARTED:
            _ray().shutdown()
            _STARTED.clear()


def _attempt() -> int | None:
    """Which run of the current task this is: 0 the first, 1 once Ray ran it again after its
    worker process or node was lost (Ray's own count, kept with the task; None where this Ray
    does not say)."""
    import ray

    worker: Any = ray._private.worker.global_worker
    try:
        return int(worker.core_worker.get_current_task_attempt_number())
    except AttributeError:
        return None


def _run_shipped(backend: RayCluster, folders: list[tuple[str, str, str, list[Any]]], shared: tuple[str, list[Any]],
                 positions: tuple[int, ...], payload: bytes) -> tuple[bool, bytes, int | None]:
    """One item on a node: the folders it names copied here (once per node), the map's shared
    part fetched and unpickled (once per worker process), then ``fn(*item)`` on ``backend``
    (its own maps are Ray tasks too); its result, or its error, packed with those paths as the
    submitting machine's, and which run of the task this was."""
    import ray

    attempt = _attempt()
    tokens = []
    for token, name, origin, ref in folders:
        shipping.receive(token, name, origin, partial(ray.get, ref[0]))
        tokens.append(token)
    key, ref = shared
    common = unpacked(key, b"", lambda _: shipping.unpack(ray.get(ref[0])))
    rest = shipping.unpack(payload)
    back = shipping.Returning(tokens)
    try:
        with using(backend):
            result = with_shared(common, positions, rest)
    except Exception as exc:  # the error itself goes back, as from a worker process
        return False, shipping.pack(shipping.as_sent(exc, tokens), back), attempt
    return True, shipping.pack(result, back), attempt


def rerun_notice(items: int, attempts: list[int | None], lost: int) -> str | None:
    """What a completed step says of its reruns: ``attempts`` is each item's completed run (0
    the first; None where Ray did not say), ``lost`` the worker nodes lost meanwhile. Nothing
    when nothing ran again and no node was lost; an unknown count only beside a lost node."""
    again = None if None in attempts else sum(1 for n in attempts if n)
    if not lost and not again:
        return None
    count = f"{again} of them" if again is not None else "an unknown number of them (this Ray does not say)"
    nodes = f", {lost} worker node(s) lost" if lost else ""
    return (f"Ray: all {items} items of this step completed; {count} ran again after their worker was lost{nodes}; "
            "the results do not depend on where they ran")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


# Why a step's tasks are never cancelled: Ray's cancel races with a task that is finishing, and
# the driver then aborts on a failed internal check ("Tried to complete task that was not
# pending", ray-project/ray issue 54846): `simstack` died with a C++ stack trace where an item's
# error should have been one line. A task left running finishes and its result is dropped; when
# the command ends, Ray ends its job's tasks with the driver.


class _RayPool:
    def __init__(self, backend: RayCluster, jobs: int):
        self.backend = backend
        self.jobs = jobs
        self.ray = backend.connect()
        self.task = self.ray.remote(num_cpus=1, max_retries=backend.max_retries)(_run_shipped)

    def close(self, cancel: bool = False) -> None:
        """Nothing to do, even when asked to cancel: a step's tasks are left to finish (the note
        above) and end with this driver at the latest."""

    def _nodes(self) -> dict[str, str]:
        """The live nodes: id -> address."""
        return {n["NodeID"]: n.get("NodeManagerAddress", "?") for n in self.ray.nodes() if n.get("Alive")}

    def completed(self, fn: Callable[..., Any], items: Items) -> Iterator[tuple[int, Any]]:
        ray = self.ray
        outgoing = shipping.Outgoing()
        common, positions, rests = split_shared(fn, items)
        shared = (uuid.uuid4().hex, [ray.put(shipping.pack(common, outgoing))])  # once per map
        payloads = [shipping.pack(rest, outgoing) for rest in rests]
        folders = [(f.token, f.name, f.origin, [ray.put(f)]) for f in outgoing.folders.values()]
        alive, lost = self._nodes(), dict[str, str]()
        waiting = list(range(len(items)))[::-1]
        running: dict[Any, int] = {}
        looked = time.monotonic()
        attempts: list[int | None] = []  # each item's run that completed: 0 the first

        def submit() -> None:
            while waiting and len(running) < self.jobs:
                index = waiting.pop()
                running[self.task.remote(self.backend, folders, shared, positions, payloads[index])] = index

        # an item that fails, or a caller that stops reading, leaves the others running (the note above)
        submit()
        while running:
            ready, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
            if time.monotonic() - looked >= POLL_S or not ready:
                lost |= self._look(alive, lost)
                looked = time.monotonic()
            for ref in ready:
                index = running.pop(ref)
                ok, data, attempt = self._get(ref)
                attempts.append(attempt)
                value = shipping.unpack(data)
                if not ok:
                    raise value
                submit()
                yield index, value
        lost |= self._look(alive, lost)
        said = rerun_notice(len(items), attempts, len(lost))
        if said:
            self.backend.notice(said)

    def _look(self, alive: dict[str, str], lost: dict[str, str]) -> dict[str, str]:
        """Nodes that were alive when the step began and are gone now (said once each)."""
        now = self._nodes()
        gone = {node: address for node, address in alive.items() if node not in now and node not in lost}
        for node, address in gone.items():
            self.backend.notice(f"Ray: lost worker node {address} (node {node[:8]}) during this step; Ray runs "
                                f"its tasks again on the other nodes (up to {self.backend.max_retries} times each)")
        return gone

    def _get(self, ref: Any) -> tuple[bool, bytes, int | None]:
        try:
            ok, data, attempt = self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:  # the task's own code failed on its node
            raise SimstackError(f"Ray: an item failed on its node: {_one_line(exc.cause or exc)}") from None
        except self.ray.exceptions.RayError as exc:  # its worker or node lost more often than retried
            raise SimstackError(f"Ray: an item of this study was lost {self.backend.max_retries + 1} times, "
                                f"more than max_retries={self.backend.max_retries} allows "
                                f"({type(exc).__name__}: {_one_line(exc)})") from None
        return bool(ok), data, attempt
