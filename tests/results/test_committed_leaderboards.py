"""Every committed leaderboard is generated from committed run records (tables are never typed by hand).

For each `leaderboards/<name>/` holding a `table.md`, the records under it must exist, and `agentbench-af
table` over them must regenerate the committed table and bottleneck files byte for byte; so must each
table combined from several leaderboards (`COMBINED`), and every copy of a generated table in the README,
`docs/` or a leaderboard's README must equal its file. (Records were
once kept out of git by a `runs/` ignore rule while their tables were committed; this catches that.)
"""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.results.embedded_tables import embedded_tables, source_table

LEADERBOARDS = Path(__file__).resolve().parents[2] / "leaderboards"
ROOT = LEADERBOARDS.parent
GENERATED = ("table.md", "gains.md", "table.csv", "table.tex", "stats.csv", "gains.csv", "bottleneck.md", "bottleneck.csv")
README = ROOT / "README.md"
BOARDS = sorted(p.parent for p in LEADERBOARDS.glob("*/table.md"))
# tables generated from several leaderboards' records together: folder -> the leaderboards it reads
COMBINED = {LEADERBOARDS / "cpu-confirm" / "with-sudoku": (LEADERBOARDS / "cpu-confirm", LEADERBOARDS / "cpu-confirm-sudoku")}
# Markdown files that must show generated tables (the README leads with one; docs/results.md holds the rest)
MUST_EMBED = (README, ROOT / "docs" / "results.md")
# every Markdown file a reader sees whose generated blocks are checked
EMBEDDING = sorted({*MUST_EMBED, *ROOT.glob("docs/**/*.md"), *LEADERBOARDS.glob("**/README.md")})


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


@pytest.mark.parametrize("folder", sorted(COMBINED), ids=[f"{f.parent.name}/{f.name}" for f in sorted(COMBINED)])
def test_combined_tables_regenerate_from_their_leaderboards(folder, tmp_path):
    """A table over several leaderboards (the README's headline) is what `agentbench-af table` writes
    from those leaderboards' committed records, byte for byte."""
    committed = [name for name in GENERATED if (folder / name).exists()]
    assert "gains.md" in committed, f"{folder}: no gains.md"
    res = CliRunner().invoke(app, ["table", *map(str, COMBINED[folder]), "--out", str(tmp_path), "--format", "md"])
    assert res.exit_code == 0, res.output
    for name in committed:
        assert (tmp_path / name).read_bytes() == (folder / name).read_bytes(), f"{folder.name}/{name} differs"


def test_readme_and_results_page_embed_generated_tables():
    for path in MUST_EMBED:
        assert embedded_tables(path.read_text()), f"{path.relative_to(ROOT)} embeds no generated table"


@pytest.mark.parametrize("markdown", EMBEDDING, ids=[str(p.relative_to(ROOT)) for p in EMBEDDING])
def test_embedded_tables_are_copies_of_the_generated_files(markdown):
    """A table that the README, a page under docs/ or a leaderboard's README shows between
    `<!-- generated: FILE -->` and `<!-- end generated -->` (FILE relative to that Markdown file) has
    exactly the table lines of that committed (and, above, regenerated) file: numbers cannot drift
    (`agentbench-af embed FILE.md` refreshes them)."""
    for block in embedded_tables(markdown.read_text()):
        assert block.lines == source_table(markdown.parent, block.source), \
            f"{markdown.relative_to(ROOT)}'s copy of {block.source} differs"
