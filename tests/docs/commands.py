"""The `k3deploy` command lines a Markdown page shows, and the flags it names (pure).

A command line is a line of a fenced code block that starts with `k3deploy` (after a `$ ` prompt or a
`.venv/bin/` prefix; a line ending in `\\` goes on with the next), or an inline code span that starts so. Used to
freeze the old README's commands (old_readme.json) and to find every command the docs show for the CLI check.
"""

from __future__ import annotations

import re

#: A long option as the docs spell one: `--set`, `--dry-run`, `--no-wait`.
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
_FENCE = re.compile(r"^\s*(```|~~~)")
_PREFIX = re.compile(r"^(?:\$\s+)?(?:\.venv/bin/)?(?=k3deploy(?:\s|$))")
_INLINE = re.compile(r"(?<!`)`([^`]+)`(?!`)")
#: A shell comment after a command: ` # ...` (a `#` inside a word, as in a URL's anchor, is not one).
_COMMENT = re.compile(r"\s+#(?:\s.*)?$")


def _fenced_and_prose(text: str) -> tuple[list[str], str]:
    """The lines inside fenced code blocks, and the rest of the text (the prose, where inline spans are)."""
    code: list[str] = []
    prose: list[str] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        (code if fenced else prose).append(line)
    return code, "\n".join(prose)


def _joined(lines: list[str]) -> list[str]:
    """Lines with their `\\` continuations joined on."""
    out: list[str] = []
    pending = ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


def normalise(command: str) -> str:
    """One space between words, no prompt, venv prefix or trailing comment: how two spellings of one command
    compare."""
    return _COMMENT.sub("", _PREFIX.sub("", " ".join(command.split())))


def command_lines(text: str) -> list[str]:
    """Every `k3deploy ...` command line of a Markdown text, normalised, in order, without repeats."""
    code, prose = _fenced_and_prose(text)
    found = [normalise(line) for line in _joined(code)]
    found += [normalise(span) for span in _INLINE.findall(prose)]
    out: list[str] = []
    for command in found:
        if (command == "k3deploy" or command.startswith("k3deploy ")) and command not in out:
            out.append(command)
    return out


def flags(text: str) -> list[str]:
    """Every long option a Markdown text names anywhere (code or prose), sorted, without repeats."""
    return sorted(set(FLAG.findall(text)))
