"""Reading request classes: YAML step lists into ``spec`` step trees.

Each step is a mapping with exactly one action (``cpu``, ``delay``, ``hold``, ``call``,
``send``, ``parallel``, ``steps``; ``choose``, ``repeat``, ``all`` are read by ``steps.control``)
plus optional modifiers (``name``, ``when``/``unless``
a flag, ``deadline``, ``on_miss``). Flags are resolved here: a step whose condition is
false is left out of the spec entirely, so it costs nothing at run time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simstack.errors import ModelError
from simstack.kinds import lookup
from simstack.lang.distributions import parse_distribution
from simstack.lang.schema import Field, integer, located, name_ref, one_of, read_fields, suggest, text
from simstack.lang.spec import (
    Call,
    ComponentSpec,
    Cpu,
    Delay,
    Guard,
    Hold,
    Parallel,
    RequestSpec,
    Send,
    Sequence,
    Step,
)
from simstack.lang.units import non_negative, parse_count, parse_size, parse_time, positive
from simstack.load.steps.control import read_all, read_calls, read_choose, read_repeat, read_switch
from simstack.load.steps.lifecycle import READERS as LIFECYCLE
from simstack.load.steps.lifecycle import members
from simstack.load.steps.senders import mark_senders
from simstack.load.steps.sync import check_replies, read_acquire, read_reply

ACTIONS = ("cpu", "delay", "hold", "call", "send", "parallel", "steps", "choose", "switch", "repeat", "all",
           "acquire", "release", "reply", "alloc", "write_memory", "fork", "read", "checkpoint", "restore")
MODIFIERS = ("name", "when", "unless", "deadline", "on_miss")
# the keys each action takes besides itself and the modifiers (``simstack kinds`` lists them)
EXTRA_KEYS = {"hold": ("key", "mode", "steps"), "parallel": ("count", "limit", "steps"), "repeat": ("steps",),
          "all": ("join", "order"),
              "reply": ("first",)}


class StepReader:
    """Parses step lists against the model's components, request names and flags."""

    def __init__(self, hosts: tuple[str, ...], components: Mapping[str, ComponentSpec],
                 request_names: set[str], flags: Mapping[str, bool], base_dir: Path | None):
        self._hosts = hosts
        self.components = components
        self.request_names = request_names
        self.flags = flags
        self.base_dir = base_dir
        self._held: list[tuple[str, str | None, str]] = []  # (lock, key, step path) around the step being read
        self.reading = ""  # the request class being read
        self._replicas: dict[str, list[str]] = {}  # name[item] -> its replicas, found once per reader

    def replicas_of(self, name: str) -> list[str]:
        """The components ``name[item]`` may reach (``lifecycle.members``), found once: a farm's
        file steps each looked through its 5,988 component names three times."""
        if name not in self._replicas:
            self._replicas[name] = members(name, self.components)
        return self._replicas[name]

    def request(self, name: str, raw: object) -> RequestSpec:
        path = f"requests.{name}"
        if isinstance(raw, list):
            raw = {"steps": raw}
        values = read_fields(raw, {
            "steps": Field(lambda v: v, help="list of steps"),
            "host": Field(name_ref, None),
            "priority": Field(integer, 0),
            "doc": Field(text, ""),
        }, path)
        host = values["host"]
        if host is not None and host not in self._hosts:
            raise ModelError(f"unknown host {host!r}{suggest(host, self._hosts)}; hosts: "
                             f"{', '.join(self._hosts) or '(none)'}", path=f"{path}.host")
        self._held = []
        self.reading = name
        body = check_replies(self.steps(values["steps"], f"{path}.steps"))
        return RequestSpec(name, body, host, values["priority"])

    def steps(self, raw: object, path: str) -> tuple[Step, ...]:
        if not isinstance(raw, list) or not raw:
            raise ModelError(f"expected a non-empty list of steps, got {raw!r}", path=path)
        out = []
        for index, item in enumerate(raw):
            step = self.step(item, f"{path}[{index}]")
            if step is not None:
                out.append(step)
        return mark_senders(tuple(out), self.components)

    def step(self, raw: object, path: str) -> Step | None:
        raw = {"reply": True} if raw == "reply" else raw  # the reply marker may stand alone
        if not isinstance(raw, Mapping):
            raise ModelError(f"a step must be a mapping with one of {', '.join(ACTIONS)}, got {raw!r}",
                             path=path)
        actions = [a for a in ACTIONS if a in raw]
        if "hold" in actions or "parallel" in actions or "repeat" in actions:
            actions = [a for a in actions if a != "steps"]
        if not actions:
            keys = ", ".join(map(str, raw)) or "nothing"
            raise ModelError(f"a step needs one action, one of {', '.join(ACTIONS)}; found only {keys}", path=path)
        if len(actions) > 1:
            raise ModelError(f"a step takes exactly one action, found {len(actions)}: {', '.join(actions)}; "
                             "write each as its own step", path=path)
        action = actions[0]
        if not self._active(raw, path):
            return None
        guard = self._guard(raw, action, path)
        if action == "call" and "calls" in raw:
            return read_calls(self, raw, guard, path)
        if action in LIFECYCLE:  # process lifecycle and file steps: simstack.load.steps.lifecycle
            return LIFECYCLE[action](self, raw, guard, path)
        reader = getattr(self, f"_{action}")
        step: Step = reader(raw, guard, path)
        return step

    def _active(self, raw: Mapping[str, Any], path: str) -> bool:
        active = True
        for key, want in (("when", True), ("unless", False)):
            if key in raw:
                flag = raw[key]
                if not isinstance(flag, str) or flag not in self.flags:
                    known = ", ".join(self.flags) or "(none declared)"
                    raise ModelError(f"unknown flag {flag!r}{suggest(flag, self.flags)}; {key}: takes one "
                                     f"declared flag: {known}", path=f"{path}.{key}")
                active = active and self.flags[flag] == want
        return active

    def _guard(self, raw: Mapping[str, Any], action: str, path: str) -> Guard:
        target = raw[action] if action in ("hold", "call", "send", "acquire", "release") else None
        default = f"{action}:{target}" if isinstance(target, str) else action
        name = raw.get("name", default)
        if not isinstance(name, str):
            raise ModelError(f"expected text, got {name!r}", path=f"{path}.name")
        deadline = None
        if "deadline" in raw:
            deadline = located(lambda v: positive(parse_time(v), v), raw["deadline"], f"{path}.deadline")
        on_miss = located(one_of("record", "fail"), raw.get("on_miss", "record"), f"{path}.on_miss")
        return Guard(name, path, deadline, on_miss)

    def _allowed(self, raw: Mapping[str, Any], action: str, path: str, extra: tuple[str, ...]) -> None:
        allowed = set(MODIFIERS) | {action} | set(extra) | set(EXTRA_KEYS.get(action, ()))
        for key in raw:
            if key not in allowed:
                raise ModelError(f"unknown key {key!r} for a {action} step; allowed: "
                                 f"{', '.join(sorted(allowed))}", path=f"{path}.{key}")

    def _cpu(self, raw: Mapping[str, Any], guard: Guard, path: str) -> Cpu:
        self._allowed(raw, "cpu", path, ())
        spec = raw["cpu"]
        if isinstance(spec, Mapping):
            values = read_fields(spec, {
                "demand": Field(self._time_dist, None),
                "per_byte": Field(lambda v: non_negative(parse_time(v), v), 0.0),
                "bytes": Field(self._size_dist, None),
            }, f"{path}.cpu")
            if values["per_byte"] and values["bytes"] is None:
                raise ModelError("per_byte needs bytes", path=f"{path}.cpu")
            demand = values["demand"] or parse_distribution(0, parse_time)
            return Cpu(guard, demand, values["per_byte"], values["bytes"])
        return Cpu(guard, located(self._time_dist, spec, f"{path}.cpu"))

    def _delay(self, raw: Mapping[str, Any], guard: Guard, path: str) -> Delay:
        self._allowed(raw, "delay", path, ())
        return Delay(guard, located(self._time_dist, raw["delay"], f"{path}.delay"))

    def _hold(self, raw: Mapping[str, Any], guard: Guard, path: str) -> Hold:
        self._allowed(raw, "hold", path, ())
        target = self._component(raw["hold"], "hold", f"{path}.hold")
        if "steps" not in raw:
            raise ModelError("a hold step needs nested 'steps' to run while holding", path=path)
        comp = self.components[target]
        per = comp.settings.get("per") if comp.kind == "lock" else None
        key = raw.get("key")
        if per and key is None:
            raise ModelError(f"lock {target!r} is per {per}; the step needs key: item (the fan-out item) "
                             "or a fixed key", path=path)
        if key is not None and (isinstance(key, bool) or not isinstance(key, str | int | float)):
            raise ModelError(f"expected key: item or a fixed key such as dev1, got {key!r}", path=f"{path}.key")
        mode = located(one_of("read", "write"), raw.get("mode", "write"), f"{path}.mode")
        if mode == "read" and not comp.settings.get("readers", False):
            raise ModelError(f"mode: read needs a lock with readers: true ({comp.kind} {target!r} has none)",
                             path=f"{path}.mode")
        held = (target, None if key is None else str(key), path)
        for other, other_key, where in self._held:
            # a global lock ignores keys; a per-key lock deadlocks on the same fixed key
            same = not per or (other_key == held[1] and other_key not in ("item", "request"))
            if comp.kind == "lock" and other == target and same:
                raise ModelError(f"lock {target!r} is already held by the enclosing step {where}; holding it "
                                 "again would wait for itself forever", path=f"{path}.hold")
        self._held.append(held)
        try:
            body = self.steps(raw["steps"], f"{path}.steps")
        finally:
            self._held.pop()
        return Hold(guard, target, body, held[1], mode)

    def _call(self, raw: Mapping[str, Any], guard: Guard, path: str) -> Call:
        target = raw["call"]
        if isinstance(target, str) and target in self.request_names:
            self._allowed(raw, "call", path, ())
            return Call(guard, target, {})
        target = self._component(target, "call", f"{path}.call")
        kind = lookup(self.components[target].kind)
        options_raw = {k: v for k, v in raw.items() if k not in MODIFIERS and k != "call"}
        for key in options_raw:
            if key not in kind.call_options:
                allowed = ", ".join(kind.call_options) or "none"
                raise ModelError(f"unknown option {key!r} for a call to {kind.kind} {target!r}; "
                                 f"options: {allowed}", path=f"{path}.{key}")
        options = read_fields(options_raw, kind.call_options, path, folder=self.base_dir)
        return Call(guard, target, {k: v for k, v in options.items() if v is not None})

    def _send(self, raw: Mapping[str, Any], guard: Guard, path: str) -> Send:
        self._allowed(raw, "send", path, ())
        target = raw["send"]
        if not isinstance(target, str) or target not in self.request_names:
            target = self._component(target, "send", f"{path}.send")
        return Send(guard, target)

    def _parallel(self, raw: Mapping[str, Any], guard: Guard, path: str) -> Parallel:
        self._allowed(raw, "parallel", path, ())
        spec = raw["parallel"]
        if not isinstance(spec, Mapping):
            raise ModelError(f"expected {{count: N, limit: K}}, got {spec!r}", path=f"{path}.parallel")
        values = read_fields(spec, {
            "count": Field(lambda v: parse_count(v), help="number of items to fan out"),
            "limit": Field(lambda v: parse_count(v, allow_inf=True), math.inf),
        }, f"{path}.parallel")
        if "steps" not in raw:
            raise ModelError("a parallel step needs nested 'steps' run for each item", path=path)
        return Parallel(guard, int(values["count"]), values["limit"], self.steps(raw["steps"], f"{path}.steps"))

    def _steps(self, raw: Mapping[str, Any], guard: Guard, path: str) -> Sequence:
        self._allowed(raw, "steps", path, ())
        return Sequence(guard, self.steps(raw["steps"], f"{path}.steps"))

    def _acquire(self, raw: Mapping[str, Any], guard: Guard, path: str) -> Step:
        return read_acquire(self, raw, guard, path, "acquire")

    def _release(self, raw: Mapping[str, Any], guard: Guard, path: str) -> Step:
        return read_acquire(self, raw, guard, path, "release")

    def _reply(self, raw: Mapping[str, Any], guard: Guard, path: str) -> Step:
        return read_reply(self, raw, guard, path)

    _choose = read_choose
    _switch = read_switch
    _repeat = read_repeat
    _all = read_all

    def _usable(self, role: str) -> str:
        """What ``role:`` may name: components of kinds that play the role, and for call and
        send, request classes."""
        comps = sorted(n for n, c in self.components.items() if role in lookup(c.kind).roles)
        text = f"components usable with {role}: {', '.join(comps) or '(none)'}"
        if role != "hold":
            text += f"; request classes: {', '.join(sorted(self.request_names)) or '(none)'}"
        return text

    def _component(self, name: object, role: str, path: str) -> str:
        if not isinstance(name, str) or name not in self.components:
            what = "component" if role == "hold" else "component or request class"
            near = suggest(name, list(self.components) + (list(self.request_names) if role != "hold" else []))
            raise ModelError(f"unknown {what} {name!r}{near}; {self._usable(role)}", path=path)
        kind = lookup(self.components[name].kind)
        if role not in kind.roles:
            used = ", ".join(f"{r}:" for r in sorted(kind.roles))
            raise ModelError(f"{name!r} is a {kind.kind} component; {kind.kind} components are used with {used} "
                             f"not {role}:; {self._usable(role)}", path=path)
        return name

    def _time_dist(self, raw: object) -> Any:
        return parse_distribution(raw, parse_time, self.base_dir)

    def _size_dist(self, raw: object) -> Any:
        return parse_distribution(raw, parse_size, self.base_dir)

    def fields(self, raw: object, fields: Mapping[str, Field], path: str) -> dict[str, Any]:
        """``read_fields`` with data files read from the model's folder."""
        return read_fields(raw, fields, path, folder=self.base_dir)
