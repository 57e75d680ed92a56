"""Reading a YAML file a user received as plain data, never as code or configuration.

A model, what-if, study or calibration file may come from anyone, so it is read the way a
customs officer opens a parcel: ``yaml.safe_load`` only (no tag can build an object), every
key once per mapping, a bounded size after aliases (no "billion laughs"), and none of
Hydra's directives (``simstack.io.plaindata``). Every problem names the file and the line.

A file's text is composed by libyaml once: the document is built from the nodes the checks
walk (its events are counted once before, to stop an oversized document early). A document
that passed is kept, keyed by its text, so that a study which reads the same model
file for each of its runs parses and checks it once: the GSI check read its model 35 times, at
about 20 ms each. Every caller gets a copy of its own (rebuilt from the kept pickle), so no
caller can change what the next one reads, and any change to the file's text is a new key (the
file is read every time).
"""

from __future__ import annotations

import hashlib
import pickle
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any

import yaml

from simstack.errors import ModelError
from simstack.io.plaindata import key_path, refuse_config_nodes, refuse_directives, walk_nodes


def read_yaml(path: Path) -> Any:
    """Plain data from a YAML file: ``yaml.safe_load`` only, so no tag can build an object
    or run code; a key written twice in one mapping is an error, not a silent overwrite;
    Hydra's ``_target_``, ``hydra:``, ``# @package`` and ``${...}`` are refused (``plaindata``).
    A file that is a link to a file in another folder is not read: a received model folder's
    ``model.yaml``, ``checks.yaml``, what-if or calibrated file must be the folder's own."""
    if path.is_symlink() and path.resolve().parent != path.parent.resolve():
        raise ModelError("is a link to a file in another folder; a model's files are read only from its own folder",
                         file=str(path))
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"cannot read: {exc.strerror}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        raise ModelError(f"cannot read: not UTF-8 text (byte {exc.start})", file=str(path)) from None
    key = (hashlib.sha256(source.encode("utf-8")).digest(), MAX_VALUES)  # what the checked document depends on
    if key in _PARSED:
        _PARSED.move_to_end(key)
        return pickle.loads(_PARSED[key])  # the caller's own copy, rebuilt from bytes no caller can change
    try:
        _check_count(source)  # before anything is built: a million-point list took minutes to refuse
        doc = _load(source)
    except yaml.YAMLError as exc:
        raise ModelError(_yaml_problem(exc), file=str(path)) from None
    except RecursionError:
        raise ModelError("the YAML document is nested too deeply to read", file=str(path)) from None
    except ModelError as exc:
        raise exc.at(file=str(path)) from None
    except ValueError as exc:  # Python reads no whole number of more than 4,300 digits (sys.int_info)
        if "integer string conversion" not in str(exc):
            raise
        raise ModelError("a whole number of more than 4,300 digits cannot be read (no model means one)",
                         file=str(path)) from None
    # Kept as the pickle of the checked plain data this function just built (never bytes from
    # outside): rebuilding from it is half a deep copy's time, and aliases stay shared.
    _PARSED[key] = pickle.dumps(doc, protocol=pickle.HIGHEST_PROTOCOL)
    while len(_PARSED) > KEEP_PARSED:
        _PARSED.popitem(last=False)
    return doc


KEEP_PARSED = 32  # documents kept (a model, its checks, calibrated and what-if files: a few kB each)
_PARSED: OrderedDict[tuple[bytes, int], bytes] = OrderedDict()  # (sha256 of the text, MAX_VALUES) -> pickle


def _load(source: str) -> Any:
    """The checked document from one composition: libyaml composes the YAML nodes, which the
    size, key and directive checks walk (``_checked``), and the safe constructor builds the
    document from those same nodes, as ``yaml.safe_load`` does (the same objects; its
    pure-Python scanner took a third of a GSI check re-reading its model files). The text was
    composed twice before, once for the document and once for the checks. A document libyaml
    refuses is read again by the pure loader, whose messages and line marks are the ones
    simstack reports."""
    loader_class = getattr(yaml, "CSafeLoader", None)
    try:
        return _checked(source, loader_class or yaml.SafeLoader)
    except yaml.YAMLError:
        if loader_class is None:
            raise
        return _checked(source, yaml.SafeLoader)


def _checked(source: str, loader_class: Any) -> Any:
    """``source`` composed once, its nodes checked, then built by the safe constructor. A
    problem the checks find is raised after the construction, so a document the constructor
    refuses (a tag, a 5,000-digit number) is refused for that, as when it was built first;
    the checks walk the nodes before the constructor merges ``<<:`` keys into them."""
    loader = loader_class(source)
    try:
        root = loader.get_single_node()
        problem: Exception | None = None
        try:
            _check_size(root)
            _check_duplicate_keys(root, "")
            refuse_directives(source)  # Hydra's directives, keys and interpolations: data only
            refuse_config_nodes(root)
        except (ModelError, RecursionError) as exc:
            problem = exc
        doc = None if root is None else loader.construct_document(root)
        if problem is not None:
            raise problem
        return doc
    finally:
        loader.dispose()


def _yaml_problem(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
    problem = getattr(exc, "problem", None) or str(exc)
    tag = re.search(r"for the tag '([^']*)'", problem)
    if tag:
        shown = tag.group(1).replace("tag:yaml.org,2002:", "!!")
        return (f"YAML tag {shown!r} at {where} is not allowed: a model file holds plain data "
                "(mappings, lists, text, numbers, true/false) and cannot create Python objects")
    return f"YAML syntax error at {where}: {problem}"


MAX_VALUES = 1_000_000  # a model is hundreds of values; aliases of aliases can mean billions


def _check_count(source: str) -> None:
    """Refuse a document that writes out more than ``MAX_VALUES`` values, counted on libyaml's
    event stream as it is read: it stops at the first value past the limit, before any node or
    object is built (the later walks cost seconds per million values, the Python loader minutes)."""
    count = 0
    try:
        for event in yaml.parse(source, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(event, yaml.ScalarEvent | yaml.AliasEvent | yaml.CollectionStartEvent):
                count += 1
                if count > MAX_VALUES:
                    line = event.start_mark.line + 1 if event.start_mark is not None else "?"
                    raise ModelError(f"the document holds more than the {MAX_VALUES} values a model may hold (line "
                                     f"{line} is past them); a list that long belongs in a data file (a trace)")
    except yaml.YAMLError as exc:
        if "nesting depth" in str(getattr(exc, "problem", "")):  # libyaml's limit; the Python parser's RecursionError
            raise ModelError("the YAML document is nested too deeply to read") from None
        return  # a syntax error: the loader below names it in its own words, as it always has


def _check_size(root: yaml.Node | None) -> None:
    """Refuse a document that aliases expand beyond ``MAX_VALUES`` values (the "billion
    laughs"): every later walk of it would take forever."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        if id(node) in open_nodes:
            line = node.start_mark.line + 1
            raise ModelError(f"the YAML alias to the node at line {line} is inside that node itself; a model "
                             "cannot contain itself")
        if id(node) not in sizes:
            open_nodes.add(id(node))
            children: list[yaml.Node] = []
            if isinstance(node, yaml.MappingNode):
                children = [n for pair in node.value for n in pair]
            elif isinstance(node, yaml.SequenceNode):
                children = list(node.value)
            sizes[id(node)] = 1 + sum(size(child) for child in children)
            open_nodes.discard(id(node))
        return sizes[id(node)]

    total = size(root) if root is not None else 0
    if total > MAX_VALUES:
        raise ModelError(f"YAML aliases (*name) expand this document to {total} values, more than the "
                         f"{MAX_VALUES} a model may hold; write the repeated parts out or use parameters")


def _check_duplicate_keys(root: yaml.Node | None, path: str) -> None:
    """Walk the composed (not constructed) document; report a key given twice."""
    for node, where in walk_nodes(root, path):
        if not isinstance(node, yaml.MappingNode):
            continue
        seen: dict[tuple[str, str], int] = {}
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key, line = key_node.value, key_node.start_mark.line + 1
                if (key_node.tag, key) in seen:
                    raise ModelError(f"key {key!r} is given twice in one mapping (lines "
                                     f"{seen[(key_node.tag, key)]} and {line}); keep one",
                                     path=key_path(where, key_node))
                seen[(key_node.tag, key)] = line


__all__ = ["MAX_VALUES", "read_yaml"]
