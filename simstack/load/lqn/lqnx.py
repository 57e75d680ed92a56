"""Reading an LQN model in the XML grammar of LQNS (``.lqnx``, schema ``lqn.xsd``).

The file is parsed safely (``xmltree``); this module walks the elements of the schema
(``processor > task > entry > entry-phase-activities > activity > synch-call`` and
``task-activities`` with ``precedence``) into ``lqn_model``'s dataclasses. Results that
a solver wrote into the file (``result-*`` elements) are skipped; solver settings
(``pragma``, ``solver-params``) are kept as notes; an element or attribute the schema does
not have is refused by name and line, and so is an LQX program or a SPEX variable.
"""

from __future__ import annotations

from simstack.load.lqn.lqn_model import (
    MAX_ELEMENTS,
    Activity,
    Call,
    Entry,
    Group,
    LqnModel,
    Precedence,
    Processor,
    Task,
    Unsupported,
)
from simstack.load.lqn.lqn_values import calls, count, located, name, number
from simstack.load.lqn.xmltree import Node, parse_xml

# Attributes each element may carry (besides results); anything else is refused by name.
_ATTRS = {
    "lqn-model": {"name", "description", "xmlns:xsi", "xsi:noNamespaceSchemaLocation", "lqn-schema-version",
                  "lqncore-schema-version", "xml-debug"},
    "processor": {"name", "scheduling", "multiplicity", "replication", "speed-factor", "quantum"},
    "group": {"name", "share", "cap"},
    "task": {"name", "scheduling", "multiplicity", "replication", "think-time", "priority", "queue-length",
             "initially", "activity-graph"},
    "entry": {"name", "type", "open-arrival-rate", "priority", "semaphore", "rwlock"},
    "activity": {"name", "host-demand-mean", "host-demand-cvsq", "think-time", "max-service-time", "call-order",
                 "phase", "bound-to-entry"},
}
# Elements read as notes only: what a solver should report, not what the system does.
_NOTED = {"service-time-distribution", "result-general", "service", "run-control", "plot-control"}


def read_lqnx(data: bytes, source: str) -> LqnModel:
    """An ``LqnModel`` from the bytes of an ``.lqnx`` file (``source`` names it in errors)."""
    root = parse_xml(data, source, max_elements=MAX_ELEMENTS)
    if root.tag != "lqn-model":
        raise located(source, root.line, f"the root element is <{root.tag}>, expected <lqn-model>")
    return _Reader(source).model(root)


class _Reader:
    def __init__(self, source: str):
        self.source = source
        self.processors: list[Processor] = []
        self.groups: list[Group] = []
        self.tasks: list[Task] = []
        self.entries: list[Entry] = []
        self.unsupported: list[Unsupported] = []
        self.ignored: list[Unsupported] = []

    def fail(self, node: Node, message: str) -> Exception:
        return located(self.source, node.line, message)

    def attrs(self, node: Node) -> dict[str, str]:
        allowed = _ATTRS.get(node.tag, set())
        for key in node.attrs:
            if key not in allowed:
                raise self.fail(node, f"<{node.tag}> has the attribute {key!r}, which the LQN schema does not "
                                      f"give it; known: {', '.join(sorted(allowed)) or 'none'}")
        return node.attrs

    def children(self, node: Node, known: set[str]) -> list[Node]:
        """The children read here; results skipped, notes kept, anything else refused."""
        out = []
        for child in node.children:
            if child.tag.startswith("result-") or child.tag == "result-conf-95":
                continue
            if child.tag in _NOTED:
                self.ignored.append(Unsupported(f"<{child.tag}> in <{node.tag}>", child.line))
            elif child.tag in known:
                out.append(child)
            else:
                raise self.fail(child, f"<{child.tag}> is not an element of <{node.tag}> that simstack reads; "
                                       f"expected one of: {', '.join(sorted(known))}")
        return out

    def model(self, root: Node) -> LqnModel:
        attrs = self.attrs(root)
        comment = ""
        for child in self.children(root, {"solver-params", "processor", "lqx", "slot", "parameters",
                                          "results-collection", "convergence-collection"}):
            if child.tag == "solver-params":
                comment = child.attrs.get("comment", "")
                for pragma in child.all("pragma"):
                    self.ignored.append(Unsupported(
                        f"pragma {pragma.attrs.get('param', '?')}={pragma.attrs.get('value', '?')}", pragma.line))
            elif child.tag == "processor":
                self.processor(child)
            elif child.tag == "lqx":
                self.unsupported.append(Unsupported("<lqx> (an LQX program that sets parameters and runs the "
                                                    "solver: an experiment, not a model)", child.line))
            elif child.tag == "parameters":
                self.unsupported.append(Unsupported("<parameters> (SPEX variables)", child.line))
            elif child.tag == "convergence-collection":
                self.unsupported.append(Unsupported("<convergence-collection> (SPEX convergence tests)", child.line))
            elif child.tag == "slot":
                self.unsupported.append(Unsupported("<slot> (a component-assembly slot)", child.line))
            else:
                self.ignored.append(Unsupported(f"<{child.tag}>", child.line))
        if not self.processors:
            raise located(self.source, root.line, "the model has no <processor>")
        return LqnModel(name=attrs.get("name", ""), source=self.source, processors=tuple(self.processors),
                        tasks=tuple(self.tasks), entries=tuple(self.entries), comment=comment,
                        groups=tuple(self.groups), unsupported=tuple(self.unsupported), ignored=tuple(self.ignored))

    def processor(self, node: Node) -> None:
        a = self.attrs(node)
        pname = self.need_name(node, "processor")
        self.processors.append(Processor(
            name=pname, scheduling=a.get("scheduling", "fcfs"), line=node.line,
            multiplicity=self.copies(node, "multiplicity", infinite=True),
            replication=int(self.copies(node, "replication")),
            speed=number(a.get("speed-factor", "1"), "speed-factor", self.source, node.line),
            quantum=number(a.get("quantum", "0"), "quantum", self.source, node.line)))
        for child in self.children(node, {"task", "group"}):
            if child.tag == "task":
                self.task(child, pname, None)
                continue
            g = self.attrs(child)
            gname = self.need_name(child, "group")
            self.groups.append(Group(gname, pname, number(g.get("share", "0"), "share", self.source, child.line),
                                     child.line, g.get("cap", "false").lower() in ("true", "yes", "1")))
            for task in self.children(child, {"task"}):
                self.task(task, pname, gname)

    def task(self, node: Node, processor: str, group: str | None) -> None:
        a = self.attrs(node)
        tname = self.need_name(node, "task")
        entries: list[str] = []
        activities: list[Activity] = []
        precedences: list[Precedence] = []
        replies: list[tuple[str, str]] = []
        fan_in: list[tuple[str, int]] = []
        fan_out: list[tuple[str, int]] = []
        for child in self.children(node, {"entry", "task-activities", "fan-in", "fan-out"}):
            if child.tag == "entry":
                entries.append(self.entry(child, tname))
            elif child.tag == "task-activities":
                self.graph(child, activities, precedences, replies)
            else:
                other = child.attrs.get("source" if child.tag == "fan-in" else "dest", "")
                value = int(count(child.attrs.get("value", ""), child.tag, self.source, child.line))
                (fan_in if child.tag == "fan-in" else fan_out).append((other, value))
        if not entries:
            raise self.fail(node, f"task {tname!r} has no <entry>")
        initially = a.get("initially")
        self.tasks.append(Task(
            name=tname, processor=processor, scheduling=a.get("scheduling", "fcfs"), line=node.line,
            entries=tuple(entries), multiplicity=self.copies(node, "multiplicity", infinite=True),
            replication=int(self.copies(node, "replication")),
            priority=int(count(a.get("priority", "0"), "priority", self.source, node.line, least=0)),
            think=number(a.get("think-time", "0"), "think-time", self.source, node.line),
            queue_length=int(count(a.get("queue-length", "0"), "queue-length", self.source, node.line, least=0)),
            initially=None if initially is None else int(count(initially, "initially", self.source, node.line,
                                                               least=0)),
            group=group, activities=tuple(activities), precedences=tuple(precedences), replies=tuple(replies),
            fan_in=tuple(fan_in), fan_out=tuple(fan_out)))

    def entry(self, node: Node, task: str) -> str:
        a = self.attrs(node)
        ename = self.need_name(node, "entry")
        phases: list[Activity] = []
        forwards: list[Call] = []
        for child in self.children(node, {"entry-phase-activities", "forwarding", "entry-activity-graph"}):
            if child.tag == "entry-phase-activities":
                for act in self.children(child, {"activity"}):
                    phases.append(self.activity(act, phased=True))
            elif child.tag == "forwarding":
                forwards.append(Call(self.attr(child, "dest"), number(
                    self.attr(child, "prob"), "forwarding prob", self.source, child.line, upper=1.0),
                    "forward", child.line))
            else:
                self.unsupported.append(Unsupported(f"<entry-activity-graph> of entry {ename!r} (a graph inside "
                                                    f"an entry, which the LQN solvers do not read either)",
                                                    child.line))
        phases.sort(key=lambda p: p.phase)
        if len({p.phase for p in phases}) != len(phases):
            raise self.fail(node, f"entry {ename!r} defines a phase twice")
        priority = a.get("priority")
        self.entries.append(Entry(
            name=ename, task=task, line=node.line, phases=tuple(phases),
            open_rate=number(a.get("open-arrival-rate", "0"), "open-arrival-rate", self.source, node.line),
            forwards=tuple(forwards),
            priority=0 if priority is None else int(count(priority, "priority", self.source, node.line, least=0)),
            semaphore=a.get("semaphore"), rwlock=a.get("rwlock")))
        return ename

    def activity(self, node: Node, *, phased: bool) -> Activity:
        a = self.attrs(node)
        aname = self.need_name(node, "activity")
        order = a.get("call-order", "STOCHASTIC").upper()
        if order not in ("STOCHASTIC", "DETERMINISTIC"):
            raise self.fail(node, f"activity {aname!r} has call-order {order!r}; expected STOCHASTIC or "
                                  f"DETERMINISTIC (a LIST of calls is not read)")
        phase = 0
        if phased:
            phase = int(count(self.attr(node, "phase"), "phase", self.source, node.line))
            if phase > 3:
                raise self.fail(node, f"phase must be 1, 2 or 3, got {phase}")
        found: list[Call] = []
        for call in self.children(node, {"synch-call", "asynch-call"}):
            found.append(Call(self.attr(call, "dest"), calls(self.attr(call, "calls-mean"), "calls-mean",
                                                             self.source, call.line),
                              "sync" if call.tag == "synch-call" else "async", call.line))
        if "max-service-time" in a:
            self.ignored.append(Unsupported(f"max-service-time of {aname!r} (a report threshold)", node.line))
        return Activity(
            name=aname, demand=number(self.attr(node, "host-demand-mean"), "host-demand-mean", self.source,
                                      node.line),
            line=node.line, cvsq=number(a.get("host-demand-cvsq", "1"), "host-demand-cvsq", self.source, node.line),
            think=number(a.get("think-time", "0"), "think-time", self.source, node.line),
            deterministic=order == "DETERMINISTIC", calls=tuple(found), phase=phase,
            bound_to=a.get("bound-to-entry"))

    def graph(self, node: Node, activities: list[Activity], precedences: list[Precedence],
              replies: list[tuple[str, str]]) -> None:
        for child in self.children(node, {"activity", "precedence", "reply-entry"}):
            if child.tag == "activity":
                activities.append(self.activity(child, phased=False))
            elif child.tag == "precedence":
                precedences.append(self.precedence(child))
            else:
                entry = self.attr(child, "name")
                replies.extend((self.attr(r, "name"), entry) for r in self.children(child, {"reply-activity"}))

    def precedence(self, node: Node) -> Precedence:
        pre = post = None
        for child in self.children(node, {"pre", "pre-OR", "pre-AND", "post", "post-OR", "post-AND",
                                          "post-LOOP"}):
            if child.tag.startswith("pre"):
                if pre is not None:
                    raise self.fail(child, "a <precedence> has one join list (pre), found a second")
                pre = child
            elif post is not None:
                raise self.fail(child, "a <precedence> has one fork list (post), found a second")
            else:
                post = child
        if pre is None:
            raise self.fail(node, "a <precedence> needs a join list (<pre>, <pre-OR> or <pre-AND>)")
        pre_kind = {"pre": "single", "pre-OR": "or", "pre-AND": "and"}[pre.tag]
        pre_names = tuple(self.attr(a, "name") for a in self.children(pre, {"activity"}))
        quorum = int(count(pre.attrs.get("quorum", "0"), "quorum", self.source, pre.line, least=0))
        if post is None:
            return Precedence(pre_names, pre_kind, (), "none", node.line, quorum=quorum)
        post_kind = {"post": "single", "post-OR": "or", "post-AND": "and", "post-LOOP": "loop"}[post.tag]
        acts = self.children(post, {"activity"})
        values: tuple[float, ...] = ()
        if post_kind == "or":
            values = tuple(number(a.attrs.get("prob", "1"), "prob", self.source, a.line, upper=1.0) for a in acts)
        elif post_kind == "loop":
            values = tuple(calls(self.attr(a, "count"), "count", self.source, a.line) for a in acts)
        return Precedence(pre_names, pre_kind, tuple(self.attr(a, "name") for a in acts), post_kind, node.line,
                          quorum=quorum, values=values, end=post.attrs.get("end") if post_kind == "loop" else None)

    # -- small helpers -------------------------------------------------------------------
    def attr(self, node: Node, key: str) -> str:
        if key not in node.attrs:
            raise self.fail(node, f"<{node.tag}> needs the attribute {key!r}")
        return node.attrs[key]

    def need_name(self, node: Node, what: str) -> str:
        return name(self.attr(node, "name"), what, self.source, node.line)

    def copies(self, node: Node, key: str, *, infinite: bool = False) -> float:
        return count(node.attrs.get(key, "1"), key, self.source, node.line, infinite=infinite)
