"""Reading an XML file as plain data: elements with their attributes and line numbers.

An ``.lqnx`` file someone sends is data. It is parsed with ``defusedxml`` (expat with the
dangerous parts refused): a document type declaration, an entity (the "billion laughs"
expansion) or an external reference (a file or URL pulled in) stops the read with a
located error. The number of elements and the depth are bounded as they are read, so a
huge or deeply nested file is refused before it costs memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from xml.sax import SAXParseException
from xml.sax.handler import ContentHandler

import defusedxml.sax
from defusedxml import DefusedXmlException

from simstack.errors import ModelError

MAX_DEPTH = 64


@dataclass
class Node:
    """One element: its tag, attributes, the line it starts on, and its children in order."""

    tag: str
    attrs: dict[str, str]
    line: int
    children: list[Node] = field(default_factory=list)

    def all(self, tag: str) -> list[Node]:
        return [c for c in self.children if c.tag == tag]

    def first(self, tag: str) -> Node | None:
        return next((c for c in self.children if c.tag == tag), None)


class _Builder(ContentHandler):
    def __init__(self, source: str, max_elements: int):
        super().__init__()
        self.source = source
        self.max_elements = max_elements
        self.count = 0
        self.stack: list[Node] = []
        self.root: Node | None = None
        self._locator: Any = None

    def setDocumentLocator(self, locator: Any) -> None:  # noqa: N802 (SAX's name)
        self._locator = locator

    def startElement(self, name: str, attrs: Any) -> None:  # noqa: N802
        line = self._locator.getLineNumber() if self._locator is not None else 0
        self.count += 1
        if self.count > self.max_elements:
            raise ModelError(f"more than {self.max_elements} elements: refused as too large", file=self.source,
                             path=f"line {line}")
        if len(self.stack) >= MAX_DEPTH:
            raise ModelError(f"elements nested more than {MAX_DEPTH} deep", file=self.source, path=f"line {line}")
        node = Node(name, {k: attrs.getValue(k) for k in attrs.getNames()}, line)
        if self.stack:
            self.stack[-1].children.append(node)
        else:
            self.root = node
        self.stack.append(node)

    def endElement(self, name: str) -> None:  # noqa: N802
        self.stack.pop()


def parse_xml(data: bytes, source: str, *, max_elements: int) -> Node:
    """The element tree of ``data``; a malformed or hostile document is a ``ModelError``
    naming ``source`` and the line."""
    builder = _Builder(source, max_elements)
    try:
        defusedxml.sax.parseString(data, builder, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except SAXParseException as exc:
        raise ModelError(f"not well-formed XML: {exc.getMessage()}", file=source,
                         path=f"line {exc.getLineNumber()}") from None
    except DefusedXmlException as exc:
        raise ModelError(f"refused: {type(exc).__name__} ({exc}); an LQN model needs no document type, "
                         f"entity or external reference", file=source) from None
    if builder.root is None:
        raise ModelError("no XML element found", file=source)
    return builder.root
