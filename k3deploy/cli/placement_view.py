"""Rich table of where the serving groups land: trays used and free per clique, and the room left for more groups.
One row per clique whatever the groups (a fleet of 16 racks is 16 rows), the group indices as ranges."""

from __future__ import annotations

from collections import Counter

from rich.table import Table
from rich.text import Text

from k3deploy.console import safe_text
from k3deploy.preflight.placement import CliquePlacement, Placement, index_ranges


def _whys(clique: CliquePlacement) -> str:
    """Why a clique's other GPU nodes are not free trays, each reason once with how many nodes it keeps out
    (`cordoned (6)`): the nodes themselves are in `plan --cluster -o json`."""
    counts = Counter(entry.split(": ", 1)[-1] for entry in clique.excluded)
    return "; ".join(f"{why} ({n})" for why, n in counts.most_common())


def placement_table(result: Placement) -> Table:
    """One row per clique: free trays now, the groups dealt to it, trays they use, trays left, how many more groups
    it could take, what it lacks."""
    verdict = "fits" if result.fits else f"only {result.placed} fit"
    title = (
        f"placement: {result.replicas} group(s) of {result.nodes} trays, each in one clique - {verdict}; "
        f"room for {result.more} more group(s)"
    )
    # Each header says what it counts: a tray is a whole node a group's pod can take now.
    table = Table(
        "CLIQUE",
        "FREE TRAYS NOW",
        "GROUPS PLACED (INDEX)",
        "TRAYS THEY TAKE",
        "FREE TRAYS AFTER",
        "ROOM FOR MORE GROUPS",
        "NOTE",
        box=None,
        title=title,
        caption="free tray: a Ready, uncordoned GPU node matching the node selector, with parallel.gpus_per_node "
        "GPUs free (pods already holding GPUs count)",
    )
    for clique in result.cliques:
        groups = index_ranges(clique.groups)
        note = (
            "" if clique.free_after >= result.nodes else f"lacks {result.nodes - clique.free_after} tray(s) for a group"
        )
        if clique.excluded:
            note = "; ".join(filter(None, [note, f"{len(clique.excluded)} GPU node(s) not free: {_whys(clique)}"]))
        table.add_row(  # the clique and the node notes come from node labels: shown as text, never as escapes
            Text(safe_text(clique.clique)),
            str(len(clique.trays)),
            groups,
            str(len(clique.used)),
            str(clique.free_after),
            str(result.room(clique)),
            Text(safe_text(note)),
        )
    if not result.cliques:
        table.add_row("-", "0", "-", "0", "0", "0", "no GPU node is eligible")
    return table
