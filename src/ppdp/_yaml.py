"""The one YAML reader of the project: safe, fast, and without aliases.

Every YAML file ppdp reads (schemas, collector and party configs) goes through
:func:`load`. It uses libyaml's C parser when PyYAML was built with it (``CSafeLoader``:
a 200,000-column schema in seconds rather than minutes), PyYAML's pure-Python
``SafeLoader`` otherwise, and refuses any alias (``*name``) before a single Python object
is built. An alias makes one node of the document appear in several places; nine
aliases of nine aliases of ... ("billion laughs") make a few hundred bytes stand for a
tree of billions of leaves, which any later walk over the data (a copy, a check, the
``repr`` in an error) would expand until memory ran out. No ppdp file needs an alias,
so the node graph that the parser composes is checked first: every node must be
reached exactly once from the root, which takes one pass over the nodes as written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

__all__ = ["AliasRefusedError", "Loader", "load"]

_Base: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class AliasRefusedError(yaml.YAMLError):
    """The document uses a YAML alias (``*name``); its one-line reason names the line."""

    def __init__(self, line: int) -> None:
        self.problem = (
            f"a YAML alias (*name) repeats the node that starts at line {line}; "
            "anchors and aliases are not allowed in ppdp files: write the value out"
        )
        self.problem_mark = None
        super().__init__(self.problem)


class Loader(_Base):  # type: ignore[misc,valid-type]
    """A safe YAML loader (libyaml's when available) that refuses aliases."""

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        refuse_aliases(node)
        return self.construct_document(node)


def refuse_aliases(root: yaml.Node) -> None:
    """Raise :class:`AliasRefusedError` when a node is reachable twice from ``root``.

    The composer turns an alias into a second reference to its anchor's node (a cycle for
    a recursive alias), so a node met twice is exactly an alias. The walk stops at the
    first repeat: it visits each node as written at most once.
    """
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            raise AliasRefusedError(node.start_mark.line + 1)
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in reversed(node.value):
                stack.extend((value, key))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))


def loader_with(tag: str, constructor: Callable[[Any, Any], Any]) -> type:
    """A subclass of :class:`Loader` with ``constructor`` for ``tag``."""

    class _Custom(Loader):
        pass

    _Custom.add_constructor(tag, constructor)
    return _Custom


def load(text: str, *, loader: type = Loader) -> Any:
    """The Python value of the YAML document ``text``; :class:`yaml.YAMLError` when it is
    not valid YAML or uses an alias."""
    return yaml.load(text, Loader=loader)
