"""Writing a rendered table in several formats: one atomic file per (format, file name), no timestamps.

    write_table_files(out_dir, {"md": [("table.md", render_md)], "csv": [...]}, formats=("md", "csv"))

Each render function is called only when its format is asked for, in the order of the mapping, so the
files and their bytes depend on the table alone. Left out: choosing which formats exist (the caller's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from agentbench_af.io import atomic_write_text


def write_table_files(out_dir: str | Path, files: Mapping[str, Sequence[tuple[str, Callable[[], str]]]],
                      formats: Iterable[str]) -> list[Path]:
    """Write `render()` to `out_dir / name` for every (name, render) of each format in `formats`."""
    wanted = set(formats)
    out_dir = Path(out_dir)
    return [atomic_write_text(out_dir / name, render())
            for fmt, named in files.items() if fmt in wanted for name, render in named]
