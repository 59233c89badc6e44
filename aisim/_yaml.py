"""The one YAML loader for user input: PyYAML's ``SafeLoader`` plus the refusals of our error
contract. Imported lazily by ``aisim._io.parse_yaml_text`` (not compiled: it subclasses PyYAML)."""

from __future__ import annotations

import re
from typing import Any

import yaml

from aisim._input_limits import MAX_EXPANDED_NODES, MAX_NESTING_DEPTH
from aisim._text import value_error_text
from aisim.errors import ConfigError

_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlLimitError(yaml.MarkedYAMLError):
    """Well-formed YAML beyond one of our limits (reported without 'not valid YAML')."""


class StrictSafeLoader(yaml.SafeLoader):
    """``SafeLoader`` that refuses nesting deeper than ``MAX_NESTING_DEPTH`` (its composer
    recurses once per level, so deep input was a ``RecursionError``), a key repeated in one
    mapping (naming both lines; PyYAML keeps the last value silently), and aliases that recurse
    or expand past ``MAX_EXPANDED_NODES`` values."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.nesting = 0
        self.saw_alias = False

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.saw_alias = True
        if not self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent):
            return super().compose_node(parent, index)
        if self.nesting >= MAX_NESTING_DEPTH:
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise YamlLimitError(
                problem=f"nested deeper than {MAX_NESTING_DEPTH} levels", problem_mark=mark
            )
        self.nesting += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.nesting -= 1

    def compose_document(self) -> Any:
        node = super().compose_document()
        if self.saw_alias:
            check_alias_graph(node)
        return node

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, _ in node.value:
                # Merge keys (<<) legitimately bring in keys that the mapping then overrides.
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node)
                if key in first_line:
                    raise yaml.MarkedYAMLError(
                        problem=f"duplicate key {key!r}",
                        problem_mark=key_node.start_mark,
                        note=f"first given at line {first_line[key]}",
                    )
                first_line[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep=deep)


# YAML 1.2 reads 1e15 and 1.0e15 as numbers; PyYAML (YAML 1.1) needs a dot and a signed
# exponent (1.0e+15) and otherwise returns the *string* '1.0e15', which a number field then
# refuses. Users write the short forms (GPU FLOP/s, bandwidths), so they are floats here.
StrictSafeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def check_alias_graph(root: Any) -> None:
    """With aliases a node graph is a DAG, or even cyclic: refuse cycles, nesting deeper than
    ``MAX_NESTING_DEPTH`` and more than ``MAX_EXPANDED_NODES`` nodes once expanded (iterative,
    each shared node visited once)."""
    height: dict[int, int] = {}
    size: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        children: list[Any] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [item for pair in node.value for item in pair]
        if finished:
            on_path.discard(key)
            level = 1 if isinstance(node, yaml.CollectionNode) else 0
            height[key] = level + max((height[id(child)] for child in children), default=0)
            size[key] = 1 + sum(size[id(child)] for child in children)
            if height[key] > MAX_NESTING_DEPTH:
                raise YamlLimitError(
                    problem=f"nested deeper than {MAX_NESTING_DEPTH} levels once aliases are "
                    "expanded",
                    problem_mark=node.start_mark,
                )
            if size[key] > MAX_EXPANDED_NODES:
                raise YamlLimitError(
                    problem=f"aliases expand to more than {MAX_EXPANDED_NODES} values",
                    problem_mark=node.start_mark,
                )
            continue
        if key in height:
            continue
        if key in on_path:
            raise YamlLimitError(
                problem="an alias refers to a collection that contains it",
                problem_mark=node.start_mark,
            )
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in height)


def load_yaml(text: str, source: str) -> Any:
    """One YAML document; every failure is ``ConfigError('<source>: ...')`` on one line."""
    try:
        # The reader checks every character on construction (a NUL is a ReaderError here).
        loader = StrictSafeLoader(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {one_line_error(exc)}") from None
    try:
        return loader.get_single_data()
    except YamlLimitError as exc:
        raise ConfigError(f"{source}: {one_line_error(exc)}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {one_line_error(exc)}") from None
    except (ValueError, OverflowError) as exc:  # e.g. the timestamp 2001-02-30
        raise ConfigError(f"{source}: not valid YAML: {value_error_text(exc)}") from None
    finally:
        loader.dispose()


def one_line_error(exc: Exception) -> str:
    """PyYAML errors span several lines with a source excerpt; keep problem and position."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        note = f" ({exc.note})" if exc.note else ""
        return f"{exc.problem} at line {mark.line + 1}, column {mark.column + 1}{note}"
    return " ".join(str(exc).split())
