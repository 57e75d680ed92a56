"""A plain lock in LQN terms, before a model is exported.

LQN has no mutex, but it has its exact equivalent: a task of one thread. A request that
``hold``s a global lock around some steps waits for the lock's one thread, the steps run on
it, and the next holder waits until they end: that is a synchronous call to an entry of a
one-thread (fcfs, multiplicity 1) task whose phase is the held steps, on the processor they
ran on. So each ``hold`` of a plain lock that is not already a class's whole body is lifted
into a request class of its own (``<class>.<lock>`` and a number when a class holds it more
than once), and the hold becomes a ``call`` to it. A lock taken and given back by separate
steps (``acquire`` / ``release``) is a semaphore task with one token instead.

A plain lock is a global ``lock`` without readers; a per-key lock (one lock per device) has
no LQN counterpart with the same keys and is refused by the exporter. Each lock written this
way is said in ``remarks``, which the writer puts in the file's comment.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from simstack.errors import ModelError
from simstack.lang.spec import (
    Acquire,
    Call,
    Choose,
    Fork,
    Guard,
    Hold,
    ModelSpec,
    Release,
    Repeat,
    RequestSpec,
    Sequence,
    Step,
)


def plain(spec: ModelSpec, name: str) -> bool:
    """A global lock without readers: one holder at a time, whoever asks."""
    comp = spec.components.get(name)
    return comp is not None and comp.kind == "lock" and not comp.settings.get("per") \
        and not comp.settings.get("readers")


class LockLifter:
    """The model with every hold of a plain lock a call to a class of its own."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.requests: dict[str, RequestSpec] = {}
        self.hosts: dict[str, dict[str, str]] = {}  # lock -> {host: where it is first held}
        self.tokens: set[str] = set()  # locks taken by acquire / release: semaphore tasks
        self.remarks: list[str] = []

    def lift(self) -> tuple[ModelSpec, list[str]]:
        for name, req in self.spec.requests.items():
            body = req.body
            if len(body) == 1 and isinstance(body[0], Hold) and plain(self.spec, body[0].target):
                self.held(body[0].target, req.host, f"requests.{name}")
                self.requests[name] = replace(req, body=(replace(body[0], body=self.steps(body[0].body, name,
                                                                                            req.host)),))
            else:
                self.requests[name] = replace(req, body=self.steps(req.body, name, req.host))
        for lock, hosts in self.hosts.items():
            if lock in self.tokens:
                raise ModelError(f"lock {lock!r} is both held around steps and taken by acquire/release; LQN "
                                 f"writes the one as a one-thread task, the other as a semaphore task",
                                 path=f"components.{lock}")
            if len(hosts) > 1:
                (h1, w1), (h2, w2) = list(hosts.items())[:2]
                raise ModelError(f"lock {lock!r} is held on host {h1!r} ({w1}) and on host {h2!r} ({w2}); its "
                                 f"LQN equivalent, a task of one thread, runs on one processor",
                                 path=f"components.{lock}")
            self.remarks.append(f"lock {lock}: a plain (global, one holder) lock, written as the task {lock} of one "
                                f"thread (fcfs, multiplicity 1) on processor {next(iter(hosts))}; each hold of it "
                                f"is a synchronous call to one of its entries, whose phase is the held steps")
        for lock in sorted(self.tokens):
            self.remarks.append(f"lock {lock}: a plain lock taken and given back by separate steps, written as a "
                                f"semaphore task of one token (its wait and signal entries)")
        return replace(self.spec, requests=self.requests), self.remarks

    def held(self, lock: str, host: str | None, where: str) -> None:
        if host is None:
            raise ModelError(f"a hold of lock {lock!r} outside any host: its LQN equivalent, a task of one thread, "
                             f"needs the processor the held steps run on (give the class host:)", path=where)
        self.hosts.setdefault(lock, {}).setdefault(host, where)

    def steps(self, body: tuple[Step, ...], owner: str, host: str | None) -> tuple[Step, ...]:
        return tuple(self.step(s, owner, host) for s in body)

    def step(self, s: Step, owner: str, host: str | None) -> Step:
        if isinstance(s, Acquire | Release) and plain(self.spec, s.target):
            self.tokens.add(s.target)
            return s
        if isinstance(s, Hold):
            comp = self.spec.components.get(s.target)
            inner_host = comp.host if comp is not None and comp.kind == "threads" and comp.host else host
            if plain(self.spec, s.target):
                return self.lifted(s, owner, inner_host)
            return replace(s, body=self.steps(s.body, owner, inner_host))
        if isinstance(s, Sequence | Repeat):
            return replace(s, body=self.steps(s.body, owner, host))
        if isinstance(s, Choose):
            return replace(s, branches=tuple(replace(b, body=self.steps(b.body, owner, host)) for b in s.branches))
        if isinstance(s, Fork):
            return replace(s, branches=tuple(self.steps(b, owner, host) for b in s.branches))
        return s

    def lifted(self, s: Hold, owner: str, host: str | None) -> Step:
        where = s.guard.path or f"requests.{owner}"
        self.held(s.target, host, where)
        name = f"{owner}.{s.target}"
        n = 1
        while name in self.requests or name in self.spec.requests or name in self.spec.components:
            n += 1
            name = f"{owner}.{s.target}{n}"
        inner = replace(s, body=self.steps(s.body, name, host))
        self.requests[name] = RequestSpec(name, (inner,), host=host)
        guard: Any = Guard(s.guard.name, s.guard.path, s.guard.deadline, s.guard.on_miss)
        return Call(guard, name)
