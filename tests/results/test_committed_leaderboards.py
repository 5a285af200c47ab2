"""Every committed leaderboard is generated from committed run records (tables are never typed by hand).

For each `leaderboards/<name>/` holding a `table.md`, the records under it must exist, and `agentbench-af
table` over them must regenerate the committed table and bottleneck files byte for byte. (Records were
once kept out of git by a `runs/` ignore rule while their tables were committed; this catches that.)
"""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.results.embedded_tables import embedded_tables, table_lines

LEADERBOARDS = Path(__file__).resolve().parents[2] / "leaderboards"
GENERATED = ("table.md", "gains.md", "table.csv", "table.tex", "stats.csv", "gains.csv", "bottleneck.md", "bottleneck.csv")
README = LEADERBOARDS.parent / "README.md"
BOARDS = sorted(p.parent for p in LEADERBOARDS.glob("*/table.md"))


def test_there_are_committed_leaderboards():
    assert BOARDS, f"no leaderboards/*/table.md under {LEADERBOARDS}"


@pytest.mark.parametrize("board", BOARDS, ids=[b.name for b in BOARDS])
def test_leaderboard_tables_regenerate_from_its_records(board, tmp_path):
    records = sorted(board.rglob("record.json"))
    assert records, f"{board.name}: table.md is committed but no record.json under it"
    res = CliRunner().invoke(app, ["table", str(board), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    for name in GENERATED:
        committed = board / name
        if committed.exists():
            assert (tmp_path / name).read_bytes() == committed.read_bytes(), f"{board.name}/{name} differs"


@pytest.mark.parametrize("board", BOARDS, ids=[b.name for b in BOARDS])
def test_leaderboard_records_name_a_clean_commit(board):
    """A record made from a checkout with uncommitted changes names `<commit>-dirty`: no commit pins its
    code, so it belongs in docs/history/unpinned/, not here."""
    import json

    dirty = [p.parent.name for p in sorted(board.rglob("record.json"))
             if str(json.loads(p.read_text()).get("git_commit") or "").endswith("-dirty")]
    assert not dirty, f"{board.name}: records from a dirty tree: {dirty[:3]}"


def test_readme_tables_are_copies_of_the_generated_files():
    """A table the README shows between `<!-- generated: FILE -->` and `<!-- end generated -->` has exactly
    the table lines of that committed (and, above, regenerated) file: README numbers cannot drift
    (`agentbench-af embed README.md` refreshes them)."""
    blocks = embedded_tables(README.read_text())
    assert blocks, "the README embeds no generated table"
    for block in blocks:
        source = README.parent / block.source
        assert source.is_file(), f"README embeds {block.source}, which does not exist"
        assert block.lines == table_lines(source.read_text()), f"README's copy of {block.source} differs"
