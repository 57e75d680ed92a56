"""The model as the native loop's arrays (``eventloop.c``): a flat instruction array per
request class, on the resources, meters and streams of ``nativetables``. ``Compiler`` mirrors
``Replication``'s compilation step for step (the same streams, the same CPU-step fusion, the same
call-site chains), so the loop draws and schedules what the SimPy runners would;
``simstack.engine.native`` decides whether a model is in the subset and runs it."""

from __future__ import annotations

import math
from typing import Any

from simstack.engine.callsites import shared_classes, site_of
from simstack.engine.control import unrollable
from simstack.engine.nativecalls import Calls
from simstack.engine.nativefiles import UNIFORM
from simstack.engine.nativetables import (
    BEND,
    CHOOSE,
    CPU,
    DEADLINE,
    DELAY,
    END,
    FAILED,
    FCPU,
    FORK,
    GRANT,
    HOLDL,
    HOLDP,
    JUMP,
    NONE,
    PAR,
    QPUT,
    RELL,
    RELP,
    ROW_HOLD,
    ROW_JOB,
    ROW_SPAN,
    SPAWN,
    Scope,
)
from simstack.lang.spec import (
    Alloc,
    Call,
    Choose,
    Cpu,
    Delay,
    FileOp,
    ForkProcess,
    Hold,
    ModelSpec,
    Parallel,
    Repeat,
    Restore,
    Send,
    Sequence,
    Step,
    WriteMemory,
)
from simstack.load import replicas


def _flatten(body: tuple[Step, ...]) -> list[Step]:
    """As ``Replication.compile_body`` when it fuses: unnamed ``steps:`` blocks spliced in, short
    fixed repeats written out (``control.unrollable``)."""
    out: list[Step] = []
    for step in body:
        if isinstance(step, Sequence) and step.guard.name == "steps" and step.guard.deadline is None:
            out += _flatten(step.body)
        elif unrollable(step):
            out += _flatten(step.body) * int(step.count.value)  # type: ignore[union-attr]
        else:
            out.append(step)
    return out


class Compiler(Calls):
    """The model as the C loop's arrays: code and constants, on the resources and streams of
    ``Tables`` (the file and memory steps' rules in ``Files``, the components' calls in ``Calls``)."""

    def __init__(self, r: Any):
        super().__init__(r)
        self.shared = shared_classes(r.spec)
        self.threads = 0  # thread-pool holds open around the step being compiled (HOLDP's depth)
        self.failing = _failing(r.spec)  # a request may fail and end its steps early: bodies check
        self.keys: dict[str, int] = {}  # a lock's fixed keys, numbered
        self.holds: dict[int, tuple[str, str]] = {}  # a hold's pc: (step, component), for r.waits
        self.entries: dict[tuple[str, str, Scope], int] = {}
        self.pending: list[tuple[int, str, str, Scope]] = []  # spawn operands to fill: (at, class, site, scope)

    def entry(self, request: str, site: str, scope: Scope) -> int:
        """Where the compiled body of ``request`` starts (``Replication.root``)."""
        req = self.spec.requests[request]
        if request not in self.shared:
            site = ""
        if req.host:
            scope = self.host(req.host, req.priority)
        key = (request, site, scope)
        if key not in self.entries:
            self.entries[key] = len(self.code)
            outer, self.site = self.site, site
            depth, self.depth = self.depth, 0  # a request of its own: its recorded steps from level 0
            threads, self.threads = self.threads, 0
            residue, self.residue = self.residue, None  # a request of its own: any item
            self.body(req.body, scope)
            self.code.append(END)
            self.site, self.depth, self.threads, self.residue = outer, depth, threads, residue
        return self.entries[key]

    def body(self, steps: tuple[Step, ...], scope: Scope) -> None:
        """``Replication.compile_body``: on a host whose scheduler fuses exactly (``ps``),
        consecutive CPU steps without bytes are one demand, their draws summed in order."""
        fusing = self.fusing[scope[:2]]
        runners: list[list[Step]] = []  # the body's runners: a step, or CPU steps fused into one
        for step in (_flatten(steps) if fusing else steps):
            if fusing and _fusible(step) and runners and _fusible(runners[-1][0]):
                runners[-1].append(step)
            else:
                runners.append([step])
        ends = []  # a sequence of runners (runners.Cursor) ends early for a failed request
        for run in runners:
            if self.failing and len(runners) > 1:
                self.code += [FAILED, 0]
                ends.append(len(self.code) - 1)
            if fusing and _fusible(run[0]):
                draws = [self.stream(f"{s.guard.path}:{s.guard.name}", s.demand) for s in run]  # type: ignore[union-attr]
                self.code += [FCPU, *self.cpu(scope), len(draws), scope[2], *draws]
            else:
                self.step(run[0], scope)
                self.deadline(run[0])
        for at in ends:
            self.code[at] = len(self.code)

    def step(self, step: Step, scope: Scope) -> None:
        code, g = self.code, step.guard
        stream = f"{g.path}:{g.name}"
        members = replicas.group(step.target, self.spec.replicas) if isinstance(step, Hold | Call | Send) else None
        if members is not None:
            self.by_item(step, members, scope)  # type: ignore[arg-type]
        elif isinstance(step, FileOp):
            self.read(step, stream)
        elif isinstance(step, ForkProcess):  # lifecycle.ForkRunner: children compiled after the bodies
            self.r.memory_state()
            self.consts.append(float(step.respawn))
            code += [FORK, 0, self.cls(step.request), step.count, len(self.consts) - 1, int(step.wait),
                     self.picker(step, scope)]
            self.pending.append((len(code) - 6, step.request, site_of(self.site, g.path), scope))
        elif isinstance(step, Restore | Alloc | WriteMemory):
            self.memory(step, scope, stream)
        elif isinstance(step, Cpu):
            assert scope[0] != NONE, f"{g.path}: CPU work outside any host"  # load_model refuses it
            level = self.mark() if self.recording else -1
            demand = self.stream(stream, step.demand)
            if step.bytes is None:
                code += [CPU, *self.cpu(scope), demand, -1, 0, scope[2]]
            else:
                nbytes = self.stream(stream + ".bytes", step.bytes)
                self.consts.append(float(step.per_byte))
                code += [CPU, *self.cpu(scope), demand, nbytes, len(self.consts) - 1, scope[2]]
            if self.recording:
                self.row(ROW_JOB, level, g.name, "cpu")
        elif isinstance(step, Delay):
            code += [DELAY, self.stream(stream, step.duration)]
        elif isinstance(step, Hold):
            self.hold(step, scope)
        elif isinstance(step, Call) and step.target in self.spec.requests:
            level = self.mark() if self.recording else -1  # Replication.span
            self.entry_inline(step.target, site_of(self.site, g.path), scope)
            if self.recording:
                self.row(ROW_SPAN, level, g.name, step.target)
        elif isinstance(step, Call):
            self.call(step, stream)
        elif isinstance(step, Send) and step.target not in self.spec.requests:
            code += [QPUT, self.queue(step.target)]
        elif isinstance(step, Send):
            code += [SPAWN, 0, self.cls(step.target)]
            self.pending.append((len(code) - 2, step.target, site_of(self.site, g.path), scope))
        elif isinstance(step, Sequence) and self.recording and g.name != "steps":  # a named stage
            level = self.mark()
            self.body(step.body, scope)
            self.row(ROW_SPAN, level, g.name, "stage")
        elif isinstance(step, Sequence):
            self.body(step.body, scope)
        elif isinstance(step, Repeat):  # control.RepeatRunner, a fixed count (native.why_not): written out
            named = self.recording and g.name != "repeat"  # a named repeat is a stage
            level = self.mark() if named else -1
            ends = []
            for _ in range(int(step.count.value)):  # type: ignore[attr-defined]
                if self.failing:  # its Cursor checks before each pass
                    code += [FAILED, 0]
                    ends.append(len(code) - 1)
                self.body(step.body, scope)
            for at in ends:
                code[at] = len(code)
            if named:
                self.row(ROW_SPAN, level, g.name, "stage")
        elif isinstance(step, Parallel):  # runners.ParallelRunner: the branches' body out of line
            self.consts.append(float(step.limit))
            at = len(code)
            code += [PAR, step.count, len(self.consts) - 1, at + 6, JUMP, 0]
            residue, self.residue = self.residue, None  # each branch has an item of its own
            self.body(step.body, scope)
            self.residue = residue
            code.append(BEND)
            code[at + 5] = len(code)
        else:
            assert isinstance(step, Choose)
            named = self.recording and g.name != "choose"  # control.compile_flow: a named choice is a stage
            level = self.mark() if named else -1
            self.choose(step, stream, scope)
            if named:
                self.row(ROW_SPAN, level, g.name, "stage")

    def deadline(self, step: Step) -> None:
        """``runners.DeadlineRunner``: once the step has ended, a miss is recorded (and fails the
        request with ``on_miss: fail``)."""
        g = step.guard
        if g.deadline is None:
            return
        reason = -1
        if g.on_miss == "fail":
            if f"deadline missed: {g.name}" not in self.reasons:
                self.reasons.append(f"deadline missed: {g.name}")
            reason = self.reasons.index(f"deadline missed: {g.name}")
        self.consts.append(float(g.deadline))
        self.code += [DEADLINE, len(self.consts) - 1, self.name(g.name), reason]

    def entry_inline(self, request: str, site: str, scope: Scope) -> None:
        """``SubRequestRunner``: the called class's body, in the caller's request."""
        req = self.spec.requests[request]
        if request not in self.shared:
            site = ""
        outer, self.site = self.site, site
        self.body(req.body, self.host(req.host, req.priority) if req.host else scope)
        self.site = outer

    def hold(self, step: Hold, scope: Scope) -> None:
        comp = self.spec.components[step.target]
        runtime = self.r.runtimes[step.target]
        level = self.mark() if self.recording else -1  # RecordedHoldRunner
        at = len(self.code)
        self.holds[at] = (step.guard.name, step.target)
        if comp.kind == "threads":
            pool = self.pool(runtime.slots, runtime.meter, f"{step.target} full")
            self.code += [HOLDP, pool, 0, self.threads] + ([GRANT, level] if self.recording else [])
            self.threads += 1
            self.body(step.body, self.host(_host(comp), comp.settings["priority"]))
            self.threads -= 1
            self.code += [RELP, pool, self.threads]
            if self.recording:
                self.row(ROW_HOLD, level, step.guard.name, step.target)
            self.code[at + 2] = len(self.code)  # a request turned away goes on here, failed
            return
        lock = self.resource("lock", runtime, lambda: (self.meter(runtime.meter),))
        per = comp.settings["per"]  # kinds.locks.LockKind.bind_hold: a global lock ignores the key
        key = -1 if per and step.key == "item" else -2 if per and step.key == "request" else \
            self.keys.setdefault(repr(step.key if per else None), len(self.keys))  # Ctx.item, Ctx.req.item
        rank = -scope[2] if comp.settings["order"] == "priority" else 0  # LockRuntime.acquire: (rank, seq)
        self.code += [HOLDL, lock, key, rank] + ([GRANT, level] if self.recording else [])
        self.body(step.body, scope)
        self.code += [RELL, lock, key]
        if self.recording:
            self.row(ROW_HOLD, level, step.guard.name, step.target)

    def choose(self, step: Choose, stream: str, scope: Scope) -> None:
        """``control.ChooseRunner``: branch i where bisect_right(bounds, u) = i."""
        code = self.code
        cum, total = [], 0.0
        for branch in step.branches:
            total += branch.p
            cum.append(total)
        cum[-1] = math.inf
        n = len(step.branches)
        at = len(code)
        code += [CHOOSE, self.stream(stream + ".choice", UNIFORM), n, len(self.consts)] + [0] * n
        self.consts += cum
        jumps = []
        for i, branch in enumerate(step.branches):
            code[at + 4 + i] = len(code)
            self.body(branch.body, scope)
            jumps.append(len(code))
            code += [JUMP, 0]
        for j in jumps:
            code[j + 1] = len(code)

    def spawns(self) -> None:
        """The classes sends and queues start, compiled after the bodies that send them."""
        done = 0
        while self.pending or done < len(self.queues):
            if self.pending:
                at, request, site, scope = self.pending.pop()
                self.code[at] = self.entry(request, site, scope)
                continue
            name = self.queue_names[done]
            comp = self.spec.components[name]
            self.queues[done][4] = self.entry(comp.settings["handler"], f"components.{name}>",
                                              self.host(_host(comp), comp.settings["priority"]))
            done += 1


def _steps(body: tuple[Step, ...]) -> Any:
    """Every step of ``body``, nested ones too."""
    for step in body:
        yield step
        if isinstance(step, Choose):
            for branch in step.branches:
                yield from _steps(branch.body)
        elif hasattr(step, "body"):
            yield from _steps(step.body)  # type: ignore[union-attr]


def _failing(spec: ModelSpec) -> bool:
    """Whether a request can fail while it runs: a pool's full line turns it away, or it misses
    a deadline that fails it."""
    return any(c.kind == "threads" and c.settings["when_full"] == "drop" for c in spec.components.values()) or \
        any(s.guard.deadline is not None and s.guard.on_miss == "fail"
            for req in spec.requests.values() for s in _steps(req.body))


def _fusible(step: Step) -> bool:
    """``replication._fusible``: a CPU step without bytes or a deadline."""
    return isinstance(step, Cpu) and step.bytes is None and step.guard.deadline is None


def _host(comp: Any) -> str:
    """The host of a kind that needs one (a pool's, a queue's consumers'): checked at load."""
    assert comp.host is not None, f"components.{comp.name}: no host"
    return str(comp.host)


