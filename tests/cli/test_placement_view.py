"""`plan --cluster`'s placement table: each column says what it counts."""

from __future__ import annotations

import io

from rich.console import Console

from k3deploy.cli.placement_view import placement_table
from k3deploy.preflight.placement import CliquePlacement, Placement, place
from tests.preflight.test_placement_fleet import RACKS, _fleet, _name, _profile


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
        "ROOM FOR MORE GROUPS",
        "NOTE",
    ]
    row = next(line for line in text.splitlines() if line.strip().startswith("c.1")).split()
    assert row[:6] == ["c.1", "6", "0", "4", "2", "0"] and "lacks 2 tray(s) for a group" in text
    assert "only 1 fit; room for 0 more group(s)" in text
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


def test_sixteen_cliques_are_sixteen_rows_with_the_groups_as_ranges_and_the_room_left() -> None:
    buffer = io.StringIO()
    Console(file=buffer, width=200).print(placement_table(place(_profile(64), _fleet())))
    text = buffer.getvalue()
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.strip().startswith("rack-")}
    assert sorted(rows) == [_name(r) for r in range(RACKS)]
    assert "only 56 fit; room for 0 more group(s)" in text
    # Rack 2: 12 free trays (6 cordoned), groups 25, 40 and 55 placed there (the deal's order), none left.
    assert rows[_name(2)][:6] == [_name(2), "12", "25,", "40,", "55", "12"]
    # Why the other GPU nodes are out, each reason once with its count (the nodes are in -o json).
    assert "6 GPU node(s) not free: cordoned (6)" in text
    assert "3 GPU node(s) not free: 2 of 4 GPUs free, needs 4 (3)" in text


def test_consecutive_groups_in_one_clique_print_as_a_range() -> None:
    placement = Placement(
        replicas=4,
        nodes=1,
        nvlink=True,
        cliques=[
            CliquePlacement("c.1", [f"n{i}" for i in range(6)], groups=[0, 1, 2, 3], used=["n0", "n1", "n2", "n3"])
        ],
    )
    buffer = io.StringIO()
    Console(file=buffer, width=200).print(placement_table(placement))
    row = next(line for line in buffer.getvalue().splitlines() if line.strip().startswith("c.1")).split()
    assert row[:6] == ["c.1", "6", "0-3", "4", "2", "2"]
