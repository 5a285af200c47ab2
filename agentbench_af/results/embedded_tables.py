"""Copies of generated tables inside a Markdown file (a README), kept equal to the files they copy.

A block `<!-- generated: PATH -->` ... `<!-- end generated -->` holds the table lines (those starting with
`|`) of PATH, a path relative to the Markdown file's folder. `refresh_embedded_tables` rewrites every
block with its file's current table lines; text outside the blocks is never touched. Left out: blocks
that copy anything but table lines, and nested blocks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

EMBEDDED_BLOCK = re.compile(r"(<!-- generated: (\S+) -->\n)(.*?)(<!-- end generated -->)", re.S)


@dataclass(frozen=True)
class EmbeddedTable:
    """One block: the file it copies (as written in the Markdown) and the table lines it holds now."""

    source: str
    lines: tuple[str, ...]


def table_lines(text: str) -> tuple[str, ...]:
    """The lines of `text` that belong to a Markdown table (start with `|`), in order."""
    return tuple(line for line in text.splitlines() if line.startswith("|"))


def embedded_tables(markdown: str) -> list[EmbeddedTable]:
    """Every generated block in `markdown`, in order."""
    return [EmbeddedTable(m.group(2), table_lines(m.group(3))) for m in EMBEDDED_BLOCK.finditer(markdown)]


def refresh_embedded_tables(markdown: str, base: Path) -> tuple[str, list[str]]:
    """`markdown` with every block's content replaced by its source file's table lines, and the sources
    whose copy changed. Raises FileNotFoundError (naming the block) when a source file is missing and
    ValueError when a source holds no table lines."""
    changed: list[str] = []

    def replace(match: re.Match[str]) -> str:
        source = match.group(2)
        path = base / source
        if not path.is_file():
            raise FileNotFoundError(f"a generated block copies {source}, which does not exist under {base}")
        lines = table_lines(path.read_text())
        if not lines:
            raise ValueError(f"{source} holds no table lines to copy")
        if lines != table_lines(match.group(3)):
            changed.append(source)
        return match.group(1) + "".join(line + "\n" for line in lines) + match.group(4)

    return EMBEDDED_BLOCK.sub(replace, markdown), changed
