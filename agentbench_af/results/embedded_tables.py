"""Copies of generated tables inside a Markdown file (a README), kept equal to the files they copy.

A block `<!-- generated: PATH -->` ... `<!-- end generated -->` holds the table lines (those starting with
`|`) of PATH, a path relative to the Markdown file's folder; `PATH#N` copies only its N-th table (1-based; tables
are runs of such lines). `refresh_embedded_tables` rewrites every
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


def nth_table(text: str, n: int) -> tuple[str, ...]:
    """The lines of the `n`-th (1-based) Markdown table of `text`; empty when it has fewer."""
    tables: list[list[str]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("|"):
            if not inside:
                tables.append([])
            tables[-1].append(line)
        inside = line.startswith("|")
    return tuple(tables[n - 1]) if 1 <= n <= len(tables) else ()


def source_table(base: Path, source: str) -> tuple[str, ...]:
    """The table lines a block copying `source` (`PATH` or `PATH#N`, relative to `base`) must hold. Raises
    FileNotFoundError when the file is missing and ValueError when it holds no such table lines."""
    name, _, which = source.partition("#")
    path = base / name
    if not path.is_file():
        raise FileNotFoundError(f"a generated block copies {name}, which does not exist under {base}")
    if which and not which.isdigit():
        raise ValueError(f"a generated block copies {source}: write PATH#N with N a table's number (1, 2, ...)")
    lines = nth_table(path.read_text(), int(which)) if which else table_lines(path.read_text())
    if not lines:
        raise ValueError(f"{source} holds no table lines to copy")
    return lines


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
        lines = source_table(base, source)
        if lines != table_lines(match.group(3)):
            changed.append(source)
        return match.group(1) + "".join(line + "\n" for line in lines) + match.group(4)

    return EMBEDDED_BLOCK.sub(replace, markdown), changed
