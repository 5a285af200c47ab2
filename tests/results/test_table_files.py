"""`write_table_files`: the files of the asked formats only, in the mapping's order, rendered on demand."""

from agentbench_af.results.table_files import write_table_files


def test_writes_only_the_asked_formats_in_mapping_order(tmp_path):
    calls = []

    def render(text):
        return lambda: calls.append(text) or text

    files = {"md": [("t.md", render("# t\n"))], "csv": [("t.csv", render("a\n")), ("s.csv", render("b\n"))],
             "tex": [("t.tex", render("tex"))]}
    written = write_table_files(tmp_path / "out", files, ["csv", "md", "html"])
    assert written == [tmp_path / "out" / n for n in ("t.md", "t.csv", "s.csv")]
    assert [p.read_text() for p in written] == ["# t\n", "a\n", "b\n"]
    assert calls == ["# t\n", "a\n", "b\n"]  # tex never rendered
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["s.csv", "t.csv", "t.md"]  # no temporaries left
