"""The native peer's side of ``native_peer.py``: the same four models in LINE, run by LDES.

Run only by ``native_peer.py``, in the separate environment ``make bench-native`` makes
(``line-solver`` is never a dependency of simstack): ``python ldes_models.py MODEL EVENTS SEED``
prints one JSON line with the wall time of LDES's solve (its own native process included, the
model's construction and LINE's import not), the CPU time of the native process LDES runs in
(``cpu_s``, from this process's children: a fair figure on a busy machine), LDES's count of
simulated events and the mean response time it reports, so the caller can check it against the
closed form.

LDES stops after ``EVENTS`` service-completion events (its ``samples``, its own definition of an
event); the caller counts every one of them as a service completion, which can only favour LDES.
One replication on one thread, as simstack's run is.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

# The same parameters as floor.cpp and native_peer.py.
MM1 = {"lam": 0.8, "mu": 1.0, "servers": 1}
MM4 = {"lam": 3.2, "mu": 1.0, "servers": 4}
TANDEM_LAM, TANDEM_MU = 1.0, (1.25, 1.5, 2.0, 1.5, 1.25)
CLIENTS, THINK, CPU, DISK1, DISK2, DISK1_P = 10, 1.0, 0.1, 0.15, 0.2, 0.6


def build(model: str) -> tuple[Any, list[str]]:
    """The LINE network and the names of the stations whose response times add up to a request's."""
    from line_solver import ClosedClass, Delay, Exp, Network, OpenClass, Queue, SchedStrategy, Sink, Source

    net = Network(model)
    if model in ("mm1", "mm4"):
        p = MM1 if model == "mm1" else MM4
        source, queue, sink = Source(net, "Source"), Queue(net, "Queue", SchedStrategy.FCFS), Sink(net, "Sink")
        queue.set_number_of_servers(p["servers"])
        job = OpenClass(net, "C")
        source.set_arrival(job, Exp(p["lam"]))
        queue.set_service(job, Exp(p["mu"]))
        net.link(Network.serial_routing(source, queue, sink))
        return net, ["Queue"]
    if model == "tandem":
        source, sink = Source(net, "Source"), Sink(net, "Sink")
        stations = [Queue(net, f"S{i}", SchedStrategy.FCFS) for i in range(len(TANDEM_MU))]
        job = OpenClass(net, "C")
        source.set_arrival(job, Exp(TANDEM_LAM))
        for station, mu in zip(stations, TANDEM_MU, strict=True):
            station.set_service(job, Exp(mu))
        net.link(Network.serial_routing(source, *stations, sink))
        return net, [f"S{i}" for i in range(len(TANDEM_MU))]
    if model == "central":
        think = Delay(net, "Think")
        cpu, disk1, disk2 = (Queue(net, name, SchedStrategy.FCFS) for name in ("CPU", "Disk1", "Disk2"))
        job = ClosedClass(net, "C", CLIENTS, think)
        think.set_service(job, Exp(1.0 / THINK))
        cpu.set_service(job, Exp(1.0 / CPU))
        disk1.set_service(job, Exp(1.0 / DISK1))
        disk2.set_service(job, Exp(1.0 / DISK2))
        routes = net.init_routing_matrix()
        routes.set(job, job, think, cpu, 1.0)
        routes.set(job, job, cpu, disk1, DISK1_P)
        routes.set(job, job, cpu, disk2, 1.0 - DISK1_P)
        routes.set(job, job, disk1, think, 1.0)
        routes.set(job, job, disk2, think, 1.0)
        net.link(routes)
        return net, ["CPU", "Disk1", "Disk2"]
    raise ValueError(f"unknown model {model!r}")


def main(argv: list[str]) -> int:
    model, events, seed = argv[0], int(float(argv[1])), int(argv[2])
    from line_solver import LDES, GlobalConstants, VerboseLevel

    GlobalConstants.set_verbose(VerboseLevel.SILENT)
    net, stations = build(model)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    solver = LDES(net, seed=seed, samples=events, replications=1, numthreads=1)
    table = solver.avg_table()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    rows = table.set_index("Station")
    # a request's response: the sum over the stations it visits of visits x time per visit
    # (ResidT is LINE's response time per visit weighted by the visit ratio)
    response = float(sum(rows.loc[name, "ResidT"] for name in stations))
    print(json.dumps({"engine": "ldes", "model": model, "status": "ok", "wall_s": wall, "cpu_s": cpu,
                      "events": events, "mean": response}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
