"""Writes old_readme.json once: the command lines and flags of the README as it was before its sections moved into
the documentation site (commit 1f98140), which test_old_readme_facts.py finds again in docs/ or the new README.

Run from the checkout: `python -m tests.docs.freeze` (needs that commit in the history).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.docs.commands import command_lines, flags

COMMIT = "1f98140"
FROZEN = Path(__file__).with_name("old_readme.json")


def main() -> None:
    """Read README.md at COMMIT and write its commands and flags to FROZEN."""
    text = subprocess.run(
        ["git", "show", f"{COMMIT}:README.md"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    frozen = {"source": f"README.md at {COMMIT}", "commands": command_lines(text), "flags": flags(text)}
    FROZEN.write_text(json.dumps(frozen, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
