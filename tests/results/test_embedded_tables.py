"""`agentbench-af embed`: a README's copies of generated tables are refreshed from their files, and
nothing outside the blocks changes."""

import pytest
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.results.embedded_tables import embedded_tables, refresh_embedded_tables

runner = CliRunner()

README = """# Title

Text before.

<!-- generated: board/gains.md -->
| env | gain |
|:----|:-----|
| A   | +1.0 |
<!-- end generated -->

Text between.

<!-- generated: other/table.md -->
| x |
<!-- end generated -->
Text after.
"""


def _tree(tmp_path, gains: str, table: str = "| x |\n"):
    (tmp_path / "board").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "board" / "gains.md").write_text(gains)
    (tmp_path / "other" / "table.md").write_text(table)
    readme = tmp_path / "README.md"
    readme.write_text(README)
    return readme


def test_blocks_are_found_with_their_table_lines():
    blocks = embedded_tables(README)
    assert [b.source for b in blocks] == ["board/gains.md", "other/table.md"]
    assert blocks[0].lines == ("| env | gain |", "|:----|:-----|", "| A   | +1.0 |")
    assert blocks[1].lines == ("| x |",)


def test_refresh_replaces_only_the_stale_block(tmp_path):
    _tree(tmp_path, "| env | gain |\n|:----|:-----|\n| A   | -2.5 |\n| B   | +0.5 |\n\nfootnote\n")
    new, changed = refresh_embedded_tables(README, tmp_path)
    assert changed == ["board/gains.md"]
    expected = README.replace("| A   | +1.0 |\n", "| A   | -2.5 |\n| B   | +0.5 |\n")
    assert new == expected  # the footnote is not copied; text outside the blocks is unchanged


def test_embed_command_writes_then_reports_up_to_date(tmp_path):
    readme = _tree(tmp_path, "| env | gain |\n|:----|:-----|\n| A   | +3.0 |\n")
    res = runner.invoke(app, ["embed", str(readme), "--check"])
    assert res.exit_code == 1 and "out of date: board/gains.md" in res.output
    assert readme.read_text() == README  # --check changes nothing
    res = runner.invoke(app, ["embed", str(readme)])
    assert res.exit_code == 0 and "refreshed board/gains.md" in res.output
    assert "| A   | +3.0 |" in readme.read_text() and "| A   | +1.0 |" not in readme.read_text()
    res = runner.invoke(app, ["embed", str(readme), "--check"])
    assert res.exit_code == 0 and "up to date" in res.output


def test_embed_command_refuses_clearly(tmp_path):
    readme = _tree(tmp_path, "no table here\n")
    res = runner.invoke(app, ["embed", str(readme)])
    assert res.exit_code == 2 and res.output.strip() == "error: board/gains.md holds no table lines to copy"
    (tmp_path / "other" / "table.md").unlink()
    (tmp_path / "board" / "gains.md").write_text("| a |\n")
    res = runner.invoke(app, ["embed", str(readme)])
    assert res.exit_code == 2 and "copies other/table.md, which does not exist" in res.output
    plain = tmp_path / "plain.md"
    plain.write_text("# nothing generated\n")
    res = runner.invoke(app, ["embed", str(plain)])
    assert res.exit_code == 2 and "holds no '<!-- generated: PATH -->' block" in res.output
    assert readme.read_text() == README  # a failed refresh writes nothing


def test_a_block_can_copy_one_table_of_a_file_with_several(tmp_path):
    (tmp_path / "study.md").write_text("# Study\n\n| a |\n|:--|\n| 1 |\n\ntext\n\n| b | c |\n|:--|:--|\n| 2 | 3 |\n")
    readme = "<!-- generated: study.md#2 -->\n| old |\n<!-- end generated -->\n"
    new, changed = refresh_embedded_tables(readme, tmp_path)
    assert changed == ["study.md#2"]
    assert new == "<!-- generated: study.md#2 -->\n| b | c |\n|:--|:--|\n| 2 | 3 |\n<!-- end generated -->\n"
    for bad in ("study.md#3", "study.md#x"):
        with pytest.raises(ValueError, match=bad.replace(".", r"\.")):
            refresh_embedded_tables(readme.replace("study.md#2", bad), tmp_path)
