"""The hot path, in three modules; this one names what the rest of the library uses.

``simstack.replication`` binds a validated model to a ``simpy.Environment`` and compiles
request classes into the runners of ``simstack.runners`` (one ``run(ctx, k)`` per step:
do the work, then call the continuation); ``simstack.workloads`` starts the requests, one
registered type per ``type:``. Runners schedule raw SimPy events with callbacks instead of
spawning a process per request, which is what makes this several times faster than
process-per-customer SimPy while staying on SimPy's event queue.
"""

from simstack.replication import BlockSampler, Replication, Request
from simstack.runners import ByItemRunner, FusedCpuRunner, Scope, SpanRunner
from simstack.workloads import is_finite, start_workloads

__all__ = ["BlockSampler", "ByItemRunner", "FusedCpuRunner", "Replication", "Request", "Scope", "SpanRunner",
           "is_finite", "start_workloads"]
