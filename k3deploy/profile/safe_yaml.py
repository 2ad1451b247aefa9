"""How profiles and `--set` values are read as YAML: safe, with no aliases or anchors, bounded nesting, no
duplicate keys, only JSON's types (no tags beyond the core schema's, and a date stays the text written)."""

from __future__ import annotations

from typing import Any

import yaml

#: Deepest nesting of mappings and lists accepted; a profile needs about 4, free-form fields a few more.
MAX_DEPTH = 32


class YamlRefused(yaml.YAMLError):
    """YAML that is well-formed but refused: aliases/anchors (expansion bombs) or nesting past MAX_DEPTH."""


def _at(mark: Any) -> str:
    """Where in the text a YAML event starts: "(line L, column C)", 1-based as editors count."""
    return f"(line {mark.line + 1}, column {mark.column + 1})" if mark is not None else "(position unknown)"


#: Tags a profile may carry (YAML 1.1's core: what JSON can hold). `!!binary`, `!!timestamp`, `!!set`, `!!omap`
#: and application tags build objects nothing downstream can write out (JSON, the vLLM command line, manifests).
_ACCEPTED_TAGS = {None, "!"} | {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")}
_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class _ProfileLoader(yaml.SafeLoader):
    """SafeLoader without aliases or anchors and with bounded nesting.

    An alias makes a small file expand into a huge object once rendered (a "billion laughs" in a
    free-form field such as `speculative.extra`); a profile never needs one. PyYAML's composer recurses
    per nesting level, so deep input would otherwise end in a RecursionError.
    """

    _depth = 0

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        """SafeLoader's mapping, with a key written twice refused (PyYAML keeps the last one silently)."""
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, (str, int, float, bool)) or key is None:
                    if key in seen:
                        raise YamlRefused(f"duplicate key {key!r} {_at(key_node.start_mark)}")
                    seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise YamlRefused(f"YAML anchors and aliases are not accepted {_at(event.start_mark)}")
        if getattr(event, "tag", None) not in _ACCEPTED_TAGS:
            shown = str(event.tag).replace("tag:yaml.org,2002:", "!!")
            raise YamlRefused(f"YAML tag {shown} is not accepted {_at(event.start_mark)}")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise YamlRefused(f"YAML nested deeper than {MAX_DEPTH} levels {_at(event.start_mark)}")
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
        return super().compose_node(parent, index)


# A bare 2024-01-01 is text here, as it is in JSON: the implicit timestamp resolver is left out.
_ProfileLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def parse_yaml(text: str) -> Any:
    """Parse one YAML document the way profiles and `--set` values are read: safe, no aliases, bounded depth."""
    return yaml.load(text, Loader=_ProfileLoader)  # a SafeLoader subclass
