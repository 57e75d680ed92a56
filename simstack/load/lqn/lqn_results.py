"""The results a solver wrote into an LQN output file (``.lqxo``): what simstack is compared with.

lqsim writes, for every entry, ``<result-entry throughput="...">`` and, when it ran blocks,
``<result-conf-95 throughput="...">``: the half-width of the 95 % confidence interval. Tasks
and processors carry ``utilization`` the same way. The file is read with the same safe
parser as a model.
"""

from __future__ import annotations

from dataclasses import dataclass

from simstack.load.lqn.lqn_model import MAX_ELEMENTS
from simstack.load.lqn.xmltree import Node, parse_xml


@dataclass(frozen=True)
class Result:
    """A value and the half-width of its 95 % interval (0 when the solver gave none)."""

    value: float
    half_width: float = 0.0


@dataclass(frozen=True)
class LqnResults:
    solver: str
    entry_throughput: dict[str, Result]
    task_utilisation: dict[str, Result]
    processor_utilisation: dict[str, Result]


def read_results(data: bytes, source: str) -> LqnResults:
    root = parse_xml(data, source, max_elements=MAX_ELEMENTS * 20)  # results repeat every element
    solver = ""
    entries: dict[str, Result] = {}
    tasks: dict[str, Result] = {}
    procs: dict[str, Result] = {}
    for node in _walk(root):
        if node.tag == "result-general":
            solver = node.attrs.get("solver-info", "")
        elif node.tag == "processor":
            _take(node, "result-processor", "utilization", procs)
        elif node.tag == "task":
            _take(node, "result-task", "utilization", tasks)
        elif node.tag == "entry":
            _take(node, "result-entry", "throughput", entries)
    return LqnResults(solver, entries, tasks, procs)


def _walk(node: Node) -> list[Node]:
    out = [node]
    for child in node.children:
        out.extend(_walk(child))
    return out


def _take(node: Node, tag: str, key: str, into: dict[str, Result]) -> None:
    result = node.first(tag)
    name = node.attrs.get("name")
    if result is None or name is None or key not in result.attrs:
        return
    conf = result.first("result-conf-95")
    half = float(conf.attrs.get(key, "0")) if conf is not None else 0.0
    into[name] = Result(float(result.attrs[key]), half)
