"""How profiles and `--set` values are read as YAML: safe, with no aliases or anchors and bounded nesting."""

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


class _ProfileLoader(yaml.SafeLoader):
    """SafeLoader without aliases or anchors and with bounded nesting.

    An alias makes a small file expand into a huge object once rendered (a "billion laughs" in a
    free-form field such as `speculative.extra`); a profile never needs one. PyYAML's composer recurses
    per nesting level, so deep input would otherwise end in a RecursionError.
    """

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise YamlRefused(f"YAML anchors and aliases are not accepted {_at(event.start_mark)}")
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise YamlRefused(f"YAML nested deeper than {MAX_DEPTH} levels {_at(event.start_mark)}")
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
        return super().compose_node(parent, index)


def parse_yaml(text: str) -> Any:
    """Parse one YAML document the way profiles and `--set` values are read: safe, no aliases, bounded depth."""
    return yaml.load(text, Loader=_ProfileLoader)  # a SafeLoader subclass
