"""Structural self-check of models/tango/model.yaml against the draft format (until the engine's
loader exists): every $parameter is declared, every when/unless flag is declared, every hold
names a threads or lock component, every call names a component or a request class, no
request calls itself through a cycle, every workload names a request.

    .venv/bin/python models/tango/scripts/check_model_yaml.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

MODEL = Path(__file__).resolve().parents[1] / "model.yaml"


def walk_steps(steps, found):
    for st in steps or []:
        found["steps"].append(st)
        walk_steps(st.get("steps"), found)


def main() -> int:
    m = yaml.safe_load(MODEL.read_text())
    errors = []
    params = set(m["parameters"])
    flags = set(m.get("flags", []))
    comps = m["components"]
    reqs = m["requests"]
    text = MODEL.read_text()
    for ref in sorted(set(re.findall(r"\$([A-Za-z_][A-Za-z0-9_]*)", text))):
        if ref not in params:
            errors.append(f"undeclared parameter ${ref}")
    for name, c in comps.items():
        host = c.get("host")
        if host is not None and host not in m["hosts"]:
            errors.append(f"component {name}: unknown host {host}")
    calls: dict[str, set[str]] = {}
    for rname, r in reqs.items():
        found = {"steps": []}
        walk_steps(r["steps"], found)
        calls[rname] = set()
        for st in found["steps"]:
            for key in ("when", "unless"):
                if key in st and st[key] not in flags:
                    errors.append(f"request {rname}: undeclared flag {st[key]}")
            if "hold" in st:
                kind = comps.get(st["hold"], {}).get("kind")
                if kind not in ("threads", "lock"):
                    errors.append(f"request {rname}: hold {st['hold']} is not threads/lock")
            if "call" in st:
                target = st["call"]
                if target in reqs:
                    calls[rname].add(target)
                elif target not in comps:
                    errors.append(f"request {rname}: call to unknown {target}")
    # cycles of synchronous sub-requests
    state: dict[str, int] = {}

    def visit(n: str, path: list[str]) -> None:
        state[n] = 1
        for t in calls[n]:
            if state.get(t) == 1:
                errors.append("cycle: " + " -> ".join([*path, n, t]))
            elif t not in state:
                visit(t, [*path, n])
        state[n] = 2

    for r in reqs:
        if r not in state:
            visit(r, [])
    for wname, w in m["workloads"].items():
        if w["request"] not in reqs:
            errors.append(f"workload {wname}: unknown request {w['request']}")
    for e in errors:
        print(f"{MODEL.name}: {e}", file=sys.stderr)
    print(f"{MODEL.name}: {len(params)} parameters, {len(flags)} flags, {len(comps)} components, "
          f"{len(reqs)} request classes, {len(m['workloads'])} workloads; "
          f"{'ok' if not errors else str(len(errors)) + ' problem(s)'}")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
