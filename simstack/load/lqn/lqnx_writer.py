"""Writing an ``LqnModel`` in the XML grammar of LQNS (``.lqnx``), for LQNS, lqsim or LINE.

Numbers are written exactly (``repr``), names and texts escaped; the element order is the
schema's (``processor > task > entry``, then the task's ``task-activities``).
"""

from __future__ import annotations

import math
from xml.sax.saxutils import quoteattr

from simstack.io.terminal import printable
from simstack.load.lqn.lqn_model import Activity, LqnModel, Precedence, Task


def _n(x: float) -> str:
    return str(int(x)) if math.isfinite(x) and x == int(x) and abs(x) < 1e15 else repr(float(x))


def _attrs(**values: object) -> str:
    return "".join(f" {k.replace('_', '-')}={quoteattr(str(v))}" for k, v in values.items() if v is not None)


def _text(text: str) -> str:
    """Free text (a description) as XML 1.0 can hold it: control characters, which no
    parser reads back even as character references, written as ``\\xNN``."""
    return printable(text, lines=True).replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")


def _comment(text: str) -> str:
    return _text(text).replace("--", "- -")


def write_lqnx(model: LqnModel) -> str:
    out = ['<?xml version="1.0"?>',
           f"<lqn-model{_attrs(name=_text(model.name), description='written by simstack export lqn')}>"]
    out += [f"  <!-- {_comment(r)} -->" for r in model.remarks]
    out.append(f'  <solver-params{_attrs(comment=_text(model.comment))} conv_val="1e-05" it_limit="50" '
               f'underrelax_coeff="0.9" print_int="10"/>')
    entries = {e.name: e for e in model.entries}
    for p in model.processors:
        infinite = math.isinf(p.multiplicity)
        out.append(f"  <processor{_attrs(name=p.name, scheduling='inf' if infinite else p.scheduling)}"
                   f"{_attrs(multiplicity=None if infinite or p.multiplicity == 1 else _n(p.multiplicity))}"
                   f"{_attrs(speed_factor=None if p.speed == 1 else _n(p.speed))}>")
        for t in (t for t in model.tasks if t.processor == p.name and t.group is None):
            out += _task(t, entries)
        for g in (g for g in model.groups if g.processor == p.name):
            out.append(f"    <group{_attrs(name=g.name, share=_n(g.share), cap='true' if g.cap else None)}>")
            out += ["  " + line for t in model.tasks if t.processor == p.name and t.group == g.name
                    for line in _task(t, entries)]
            out.append("    </group>")
        out.append("  </processor>")
    out.append("</lqn-model>")
    return "\n".join(out) + "\n"


def _task(t: Task, entries: dict) -> list[str]:
    mult = None if math.isinf(t.multiplicity) or t.multiplicity == 1 else _n(t.multiplicity)
    out = [f"    <task{_attrs(name=t.name, scheduling=t.scheduling, multiplicity=mult)}"
           f"{_attrs(priority=t.priority or None, think_time=_n(t.think) if t.think else None)}"
           f"{_attrs(initially=t.initially, queue_length=t.queue_length or None)}>"]
    for name in t.entries:
        e = entries[name]
        rate = _n(e.open_rate) if e.open_rate else None
        out.append(f"      <entry{_attrs(name=e.name, type='PH1PH2' if e.phases else 'NONE')}"
                   f"{_attrs(open_arrival_rate=rate, semaphore=e.semaphore, rwlock=e.rwlock)}>")
        out += [f"        <forwarding{_attrs(dest=f.dest, prob=_n(f.mean))}/>" for f in e.forwards]
        if e.phases:
            out.append("        <entry-phase-activities>")
            out += _activity(e.phases, "          ")
            out.append("        </entry-phase-activities>")
        out.append("      </entry>")
    if t.activities:
        starts = {e.start: e.name for e in (entries[n] for n in t.entries) if e.start}
        out.append("      <task-activities>")
        out += _activity(t.activities, "        ", starts)
        out += [line for p in t.precedences for line in _precedence(p)]
        by_entry: dict[str, list[str]] = {}
        for act, entry in t.replies:
            by_entry.setdefault(entry, []).append(act)
        for entry, acts in by_entry.items():
            out.append(f"        <reply-entry{_attrs(name=entry)}>")
            out += [f"          <reply-activity{_attrs(name=a)}/>" for a in acts]
            out.append("        </reply-entry>")
        out.append("      </task-activities>")
    out.append("    </task>")
    return out


def _activity(acts: tuple[Activity, ...], pad: str, starts: dict[str, str] | None = None) -> list[str]:
    out = []
    for a in acts:
        head = (f"{pad}<activity{_attrs(name=a.name, phase=a.phase or None)}"
                f"{_attrs(bound_to_entry=(starts or {}).get(a.name))}"
                f"{_attrs(host_demand_mean=_n(a.demand), host_demand_cvsq=None if a.cvsq == 1 else _n(a.cvsq))}"
                f"{_attrs(think_time=_n(a.think) if a.think else None)}"
                f"{_attrs(call_order='DETERMINISTIC' if a.deterministic else None)}")
        if not a.calls:
            out.append(head + "/>")
            continue
        out.append(head + ">")
        out += [f"{pad}  <{'synch-call' if c.kind == 'sync' else 'asynch-call'}"
                f"{_attrs(dest=c.dest, calls_mean=_n(c.mean))}/>" for c in a.calls]
        out.append(f"{pad}</activity>")
    return out


def _precedence(p: Precedence) -> list[str]:
    pre_tag = {"single": "pre", "and": "pre-AND", "or": "pre-OR"}[p.pre_kind]
    out = ["        <precedence>", f"          <{pre_tag}{_attrs(quorum=p.quorum or None)}>"]
    out += [f"            <activity{_attrs(name=a)}/>" for a in p.pre]
    out.append(f"          </{pre_tag}>")
    if p.post_kind != "none":
        post_tag = {"single": "post", "and": "post-AND", "or": "post-OR", "loop": "post-LOOP"}[p.post_kind]
        out.append(f"          <{post_tag}{_attrs(end=p.end)}>")
        for k, a in enumerate(p.post):
            extra = ""
            if p.post_kind == "or":
                extra = _attrs(prob=repr(p.values[k]))
            elif p.post_kind == "loop":
                extra = _attrs(count=repr(p.values[k]))
            out.append(f"            <activity{_attrs(name=a)}{extra}/>")
        out.append(f"          </{post_tag}>")
    out.append("        </precedence>")
    return out
