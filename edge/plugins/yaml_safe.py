"""The one YAML loader for plugin manifests: JSON-shaped data only, its size bounded before it is built.

YAML aliases repeat what they name, so a 600-byte file can stand for 40 million strings (an alias
bomb) that every later reader (the manifest check, an `example:` turned into JSON) would build. The
loader counts alias uses while composing and the expanded size of the document before constructing
it, and refuses past the limits. Dates stay the text they were written as, and tags that build
non-JSON values (`!!binary`, `!!timestamp`, `!!set`, ...) are refused, so a manifest holds only what
a JSON Schema can check.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, SequenceNode

from oz0.edge.contracts.json_data import JsonDataError, check_json_data
from oz0.edge.errors import Oz0Error

__all__ = ["MAX_YAML_ALIASES", "MAX_YAML_BYTES", "MAX_YAML_NODES", "YamlLimitError", "safe_load"]

MAX_YAML_BYTES = 1_048_576
MAX_YAML_ALIASES = 64
MAX_YAML_NODES = 100_000

_REFUSED_TAGS = ("binary", "timestamp", "set", "omap", "pairs")


class YamlLimitError(Oz0Error, yaml.YAMLError):
    """A YAML document refused for its size or for a value JSON cannot hold; `problem` says which."""

    def __init__(self, problem: str, *, mark: Any = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


class _BoundedLoader(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        if self.check_event(AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise YamlLimitError(f"more than {MAX_YAML_ALIASES} alias uses (*name); the limit is "
                                     f"{MAX_YAML_ALIASES}: write the values out", mark=self.peek_event().start_mark)  # type: ignore[no-untyped-call]  # PyYAML's stubs leave peek_event untyped
        node: Node | None = super().compose_node(parent, index)
        assert node is not None  # called only where the parser has a node to compose
        return node

    def construct_document(self, node: Node) -> Any:
        _check_expanded(node)
        return super().construct_document(node)


def _check_expanded(root: Node) -> None:
    """The number of nodes the document stands for with every alias expanded, computed once per node."""
    sizes: dict[int, int] = {}
    opened: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in sizes:
            continue
        if not done and id(node) in opened:
            raise YamlLimitError("an alias refers to a value that holds it (a loop); JSON data cannot",
                                 mark=node.start_mark)
        opened.add(id(node))
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = list(node.value)
        elif isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        if done or not children:
            total = 1 + sum(sizes.get(id(c), 0) for c in children)
            sizes[id(node)] = total
            if total > MAX_YAML_NODES:
                raise YamlLimitError(f"the document expands to more than {MAX_YAML_NODES:,} values once its "
                                     f"aliases are repeated; the limit is {MAX_YAML_NODES:,}",
                                     mark=node.start_mark)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)


def _refuse(loader: yaml.SafeLoader, node: Node) -> Any:
    raise YamlLimitError(f"the tag {node.tag.replace('tag:yaml.org,2002:', '!!')} builds a value JSON cannot "
                         "hold; write plain text, numbers, lists and mappings", mark=node.start_mark)


_BoundedLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
for _tag in _REFUSED_TAGS:
    _BoundedLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _refuse)


def safe_load(text: str) -> Any:
    """One YAML document as JSON-shaped data. Raises yaml.YAMLError (YamlLimitError past a limit)."""
    if len(text) > MAX_YAML_BYTES:
        raise YamlLimitError(f"the file is over {MAX_YAML_BYTES:,} characters; the limit is {MAX_YAML_BYTES:,}")
    loader = _BoundedLoader(text)
    try:
        data = loader.get_single_data()
    finally:
        loader.dispose()
    try:
        check_json_data(data)
    except JsonDataError as exc:
        raise YamlLimitError(str(exc)) from None
    return data
