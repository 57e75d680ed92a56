"""Reading the synchronisation steps: ``acquire:`` / ``release:`` and ``reply``.

``acquire: NAME`` and ``release: NAME`` take and give back a unit of a semaphore, or a lock
(``mode: read | write`` on a read-write lock, ``key:`` on a per-key lock, as ``hold:``
takes them), in separate steps that may be in different request classes. ``reply`` (or
``{reply: true}``) marks where a called request class answers its caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from simstack.errors import ModelError
from simstack.lang.spec import Acquire, Guard, Parallel, Release, Reply, Step

if TYPE_CHECKING:
    from simstack.load.steps.requests import StepReader

SEPARATE_KINDS = ("semaphore", "lock")  # kinds whose units may be taken and given back apart


def read_acquire(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str,
                 action: str) -> Acquire | Release:
    """An ``acquire:`` or ``release:`` step (``action`` says which)."""
    reader._allowed(raw, action, path, ("mode", "key"))
    target = raw[action]
    if not isinstance(target, str) or target not in reader.components \
            or reader.components[target].kind not in SEPARATE_KINDS:
        usable = sorted(n for n, c in reader.components.items() if c.kind in SEPARATE_KINDS)
        raise ModelError(f"{action}: takes a semaphore or lock, got {target!r}; semaphores and locks: "
                         f"{', '.join(usable) or '(none)'}", path=f"{path}.{action}")
    comp = reader.components[target]
    key, mode = raw.get("key"), raw.get("mode", "write")
    if comp.kind == "semaphore":
        for extra in ("key", "mode"):
            if extra in raw:
                raise ModelError(f"a semaphore has no {extra}; {extra}: is for locks", path=f"{path}.{extra}")
        return (Acquire if action == "acquire" else Release)(guard, target)
    if mode not in ("read", "write"):
        raise ModelError(f"expected one of read, write, got {mode!r}", path=f"{path}.mode")
    if mode == "read" and not comp.settings.get("readers", False):
        raise ModelError(f"mode: read needs a lock with readers: true (lock {target!r} has none)",
                         path=f"{path}.mode")
    per = comp.settings.get("per")
    if per and key is None:
        raise ModelError(f"lock {target!r} is per {per}; the step needs key: item (the fan-out item), "
                         "key: request or a fixed key", path=path)
    if key is not None and (isinstance(key, bool) or not isinstance(key, str | int | float)):
        raise ModelError(f"expected key: item or a fixed key such as dev1, got {key!r}", path=f"{path}.key")
    return (Acquire if action == "acquire" else Release)(guard, target, None if key is None else str(key), mode)


def read_reply(reader: StepReader, raw: Mapping[str, Any], guard: Guard, path: str) -> Reply:
    reader._allowed(raw, "reply", path, ())
    if raw["reply"] is not True:
        raise ModelError(f"write reply: true (or just reply), got {raw['reply']!r}", path=f"{path}.reply")
    first = raw.get("first", "caller")
    if first not in REPLY_ORDERS:
        raise ModelError(f"expected one of {', '.join(REPLY_ORDERS)}, got {first!r}", path=f"{path}.first")
    return Reply(guard, first)


REPLY_ORDERS = ("caller", "second_phase", "either")  # who goes on first at a reply (either: each half the time)


def check_replies(body: tuple[Step, ...]) -> tuple[Step, ...]:
    """Refuse a reply inside a ``parallel`` fan-out: which item would answer the caller?"""
    for step in body:
        if isinstance(step, Parallel):
            inner = first_reply(step.body)
            if inner is not None:
                raise ModelError("reply inside a parallel fan-out: every item would answer the caller; put the "
                                 "reply after the parallel step", path=inner.guard.path)
        for child in _children(step):
            check_replies(child)
    return body


def has_reply(body: tuple[Step, ...]) -> bool:
    return first_reply(body) is not None


def first_reply(body: tuple[Step, ...]) -> Reply | None:
    """The first ``reply`` in ``body``, nested steps included (None if there is none)."""
    for step in body:
        if isinstance(step, Reply):
            return step
        for child in _children(step):
            found = first_reply(child)
            if found is not None:
                return found
    return None


def _children(step: Step) -> list[tuple[Step, ...]]:
    """Nested step lists of any container step: a ``body``, or lists of branches, found by
    shape so that containers defined elsewhere are walked too."""
    out: list[tuple[Step, ...]] = []
    for value in vars(step).values():
        if isinstance(value, tuple) and value:
            if all(hasattr(v, "guard") for v in value):
                out.append(value)
            else:
                out.extend(_nested(value))
        elif hasattr(value, "guard") and hasattr(value, "body"):
            out.append(value.body)
    return out


def _nested(values: tuple[Any, ...]) -> list[tuple[Step, ...]]:
    out: list[tuple[Step, ...]] = []
    for v in values:
        if isinstance(v, tuple) and v and all(hasattr(s, "guard") for s in v):
            out.append(v)
        elif hasattr(v, "body") and isinstance(v.body, tuple):
            out.append(v.body)
        elif hasattr(v, "steps") and isinstance(v.steps, tuple):
            out.append(v.steps)
    return out
