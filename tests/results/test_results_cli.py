"""`agentbench-af table` and `agentbench-af plot` on hand-made records."""

import shutil

from typer.testing import CliRunner

from agentbench_af.cli import app

runner = CliRunner()


def test_table_writes_all_formats_and_is_byte_identical(records_dir, tmp_path):
    res = runner.invoke(app, ["table", str(records_dir)])
    assert res.exit_code == 0, res.output
    assert "| tiny-0.2m grpo " in res.output and "failed run excluded" in res.output
    names = {"table.md", "table.csv", "table.tex", "stats.csv"}
    assert names <= {p.name for p in records_dir.iterdir()}
    first = {n: (records_dir / n).read_bytes() for n in names}
    # regenerate from a copy of the records somewhere else: same bytes (no timestamps, no paths)
    copy = tmp_path / "elsewhere"
    shutil.copytree(records_dir, copy)
    for n in names:
        (copy / n).unlink()
    res = runner.invoke(app, ["table", str(copy), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert {n: (tmp_path / "out" / n).read_bytes() for n in names} == first


def test_table_one_format_and_several_dirs(records_dir, tmp_path):
    res = runner.invoke(app, ["table", str(records_dir / "FrozenLake-6x6-v0-grpo-tiny-0.2m-dddddddddddd-s0"),
                              str(records_dir / "FrozenLake-6x6-v0-grpo+actfocus-tiny-0.2m-eeeeeeeeeeee-s0"),
                              "--out", str(tmp_path / "o"), "--format", "md"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["gains.md", "table.md"]  # a pair: one gain row
    assert "FrozenLake-4x4-v0" not in (tmp_path / "o" / "table.md").read_text()


def test_table_refuses_clearly(tmp_path):
    res = runner.invoke(app, ["table", str(tmp_path)])
    assert res.exit_code == 2 and res.output.strip() == f"error: no record.json found under {tmp_path}"
    res = runner.invoke(app, ["table", str(tmp_path / "missing")])
    assert res.exit_code == 2 and "no such file or directory" in res.output
    res = runner.invoke(app, ["table", str(tmp_path), "--format", "html"])
    assert res.exit_code == 2 and "--format must be one of" in res.output


def test_plot_command(records_dir, tmp_path):
    res = runner.invoke(app, ["plot", str(records_dir), "--out", str(tmp_path / "plots")])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "curve-FrozenLake-4x4-v0.png", "curve-FrozenLake-4x4-v0.svg", "curve-FrozenLake-6x6-v0.png",
        "curve-FrozenLake-6x6-v0.svg", "final-success.png", "final-success.svg"]
    res = runner.invoke(app, ["plot", str(tmp_path / "plots")])
    assert res.exit_code == 2 and "no record.json found" in res.output
