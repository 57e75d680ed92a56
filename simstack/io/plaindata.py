"""User files are data, never configuration that acts.

simstack runs on Hydra and OmegaConf, where a ``_target_`` key builds any Python object,
a ``hydra:`` section installs callbacks and log handlers, a ``# @package`` line moves a
file's content anywhere in the config, and ``${oc.env:NAME}`` reads the environment.
None of that may come from a file a user received (a model, a what-if, a study, a
measurement CSV): every reader calls the checks below before it uses the content, so
such a file is refused, with its line, before anything runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import yaml

from simstack.errors import DataError, ModelError

RESERVED_KEYS = ("_target_", "hydra")
_PACKAGE = re.compile(r"^\s*#\s*@package\b", re.MULTILINE)
_WHY = "a simstack file holds plain data and cannot configure Hydra or read the environment"


def refuse_directives(source: str) -> None:
    """A ``# @package`` line, which would let Hydra place the file's keys anywhere."""
    match = _PACKAGE.search(source)
    if match:
        line = source.count("\n", 0, match.start()) + 1
        raise ModelError(f"'# @package' directive at line {line} is not allowed: {_WHY}")


def walk_nodes(root: yaml.Node | None, path: str = "") -> Iterator[tuple[yaml.Node, str]]:
    """Every node of a composed (not constructed) document with its key path, depth first. A
    node reached again through an alias is walked once, so anchors cannot blow the walk up."""
    visited: set[int] = set()
    todo: list[tuple[yaml.Node | None, str]] = [(root, path)]
    while todo:
        node, where = todo.pop()
        if node is None or id(node) in visited:
            continue
        visited.add(id(node))
        yield node, where
        if isinstance(node, yaml.MappingNode):
            todo.extend((value_node, key_path(where, key_node)) for key_node, value_node in node.value)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend((item, f"{where}[{index}]") for index, item in enumerate(node.value))


def key_path(where: str, key_node: yaml.Node) -> str:
    """The path of a mapping's value under ``where``: ``a.b``, ``?`` for a key that is no scalar."""
    key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
    return f"{where}.{key}" if where else str(key)


def refuse_config_nodes(root: yaml.Node | None) -> None:
    """Walk a composed YAML document: no reserved key, no ``${...}`` interpolation anywhere."""
    for node, where in walk_nodes(root):
        if isinstance(node, yaml.MappingNode):
            for key_node, _ in node.value:
                inner = key_path(where, key_node)
                if isinstance(key_node, yaml.ScalarNode) and key_node.value in RESERVED_KEYS:
                    raise ModelError(f"key {key_node.value!r} at line {key_node.start_mark.line + 1} is not "
                                     f"allowed: {_WHY}", path=inner)
                _refuse_interpolation(key_node, inner)
        elif isinstance(node, yaml.ScalarNode):
            _refuse_interpolation(node, where)


def _refuse_interpolation(node: yaml.Node, where: str) -> None:
    if isinstance(node, yaml.ScalarNode) and "${" in str(node.value):
        line = node.start_mark.line + 1
        raise ModelError(f"interpolation '${{...}}' at line {line} is not allowed ({str(node.value)[:60]!r}): "
                         f"{_WHY}; parameters are referenced as $name", path=where or None)


def check_csv_text(source: str, file: str) -> None:
    """A CSV is plain data too: refuse the same constructs, naming the line."""
    for number, line in enumerate(source.splitlines(), start=1):
        for token, what in (("${", "interpolation '${...}'"), ("_target_", "key '_target_'")):
            if token in line:
                raise DataError(f"{file} line {number}: {what} is not allowed: {_WHY}")
        if _PACKAGE.match(line):
            raise DataError(f"{file} line {number}: '# @package' directive is not allowed: {_WHY}")


__all__ = ["refuse_directives", "refuse_config_nodes", "walk_nodes", "key_path", "check_csv_text", "RESERVED_KEYS"]
