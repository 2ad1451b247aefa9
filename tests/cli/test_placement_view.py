"""`plan --cluster`'s placement table: each column says what it counts."""

from __future__ import annotations

import io

from rich.console import Console

from k3deploy.cli.placement_view import placement_table
from k3deploy.preflight.placement import CliquePlacement, Placement


def test_the_columns_say_what_they_count() -> None:
    placement = Placement(
        replicas=2,
        nodes=4,
        nvlink=True,
        cliques=[CliquePlacement("c.1", [f"n{i}" for i in range(6)], groups=[0], used=["n0", "n1", "n2", "n3"])],
    )
    buffer = io.StringIO()
    Console(file=buffer, width=200).print(placement_table(placement))
    text = buffer.getvalue()
    header = next(line for line in text.splitlines() if "CLIQUE" in line).split("  ")
    assert [h.strip() for h in header if h.strip()] == [
        "CLIQUE",
        "FREE TRAYS NOW",
        "GROUPS PLACED (INDEX)",
        "TRAYS THEY TAKE",
        "FREE TRAYS AFTER",
        "NOTE",
    ]
    row = next(line for line in text.splitlines() if line.strip().startswith("c.1")).split()
    assert row[:5] == ["c.1", "6", "0", "4", "2"] and "lacks 2 tray(s) for a group" in text
    assert "free tray: a Ready, uncordoned GPU node" in text


def test_a_node_label_with_terminal_escapes_prints_as_text() -> None:
    """A clique label is whatever a node carries: it never reaches the terminal as an escape sequence."""
    placement = Placement(
        replicas=1,
        nodes=4,
        nvlink=True,
        cliques=[CliquePlacement("c\x1b]0;owned\x07", [f"n{i}" for i in range(4)], groups=[0], used=["n0"])],
    )
    buffer = io.StringIO()
    Console(file=buffer, force_terminal=True, width=200).print(placement_table(placement))
    assert "\x1b]0;owned" not in buffer.getvalue() and "\\x1b]0;owned\\x07" in buffer.getvalue()
