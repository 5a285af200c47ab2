"""`--import MODULE` / `imports:` with a module that is not installed (a file on the path of a tmp folder),
in the `train` CLI and in sweep workers; and one clear line for a plugin that fails to load."""

from __future__ import annotations

import json
import logging
import sys
import textwrap

import pytest
import yaml
from train_helpers import tiny_overrides
from typer.testing import CliRunner

from agentbench_af import plugins
from agentbench_af.cli import app
from agentbench_af.credit import TOKEN_WEIGHTINGS

MODULE = textwrap.dedent('''
    """A weighting defined outside any installed package: 1 on action tokens, 0.5 on reasoning tokens."""
    from agentbench_af.credit import action_mask, register_weighting

    @register_weighting("tmp-half-reasoning")
    def half_reasoning(batch, cfg):
        act = action_mask(batch, cfg.format_role).float()  # (B, T)
        return act + 0.5 * (batch.response_mask.float() - act)  # (B, T)
''')


@pytest.fixture
def tmp_module(tmp_path, monkeypatch):
    folder = tmp_path / "plugin_src"
    folder.mkdir()
    (folder / "tmp_weighting_plugin.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(folder))  # spawned sweep workers inherit sys.path
    yield "tmp_weighting_plugin"
    TOKEN_WEIGHTINGS.pop("tmp-half-reasoning", None)
    sys.modules.pop("tmp_weighting_plugin", None)


def test_train_import_option_loads_a_module_that_is_not_installed(tmp_path, tmp_module):
    args = ["train", *tiny_overrides(tmp_path, method="grpo+tmp-half-reasoning", run__name="r"), "--quiet"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and "weighting must be one of" in res.output  # unknown without --import
    res = CliRunner().invoke(app, [*args, "--import", tmp_module])
    assert res.exit_code == 0, res.output
    saved = yaml.safe_load((tmp_path / "r" / "config.yaml").read_text())
    assert saved["imports"] == [tmp_module] and saved["credit"]["weighting"] == "tmp-half-reasoning"


def test_sweep_workers_import_the_config_imports(tmp_path, tmp_module):
    base = {"imports": [tmp_module], "method": "grpo+tmp-half-reasoning"}
    for item in tiny_overrides(tmp_path / "unused"):
        key, value = item.split("=", 1)
        node = base
        *parents, last = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = yaml.safe_load(value)
    spec = {"base": base, "out_dir": str(tmp_path / "sweep"), "grid": {"seeds": [0]}}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    res = CliRunner().invoke(app, ["sweep", str(tmp_path / "spec.yaml"), "--backend", "local", "--workers", "1",
                                   "--quiet"])
    assert res.exit_code == 0, res.output
    (run,) = (tmp_path / "sweep" / "runs").iterdir()
    assert json.loads((run / "record.json").read_text())["status"] == "completed"


def test_a_module_that_fails_to_import_is_one_line_naming_it(tmp_path):
    res = CliRunner().invoke(app, ["train", *tiny_overrides(tmp_path), "--import", "no_such_plugin_mod"])
    assert res.exit_code == 2
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert lines == ["error: cannot import plugin module 'no_such_plugin_mod': ModuleNotFoundError: "
                     "No module named 'no_such_plugin_mod'"]


def test_sweep_import_option_adds_to_every_run(tmp_path, tmp_module):
    from agentbench_af.sweep import load_sweep_spec
    from agentbench_af.sweep.spec import expand

    spec = {"base": {"method": "grpo+tmp-half-reasoning"}, "out_dir": str(tmp_path / "s"),
            "grid": {"seeds": [0, 1]}}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    cfgs = expand(load_sweep_spec(tmp_path / "spec.yaml", [tmp_module]))
    assert [c.imports for c in cfgs] == [(tmp_module,), (tmp_module,)]


def test_a_broken_entry_point_is_one_logged_line_and_the_rest_still_load(tmp_path, monkeypatch, caplog):
    dist = tmp_path / "site" / "broken_plugin-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[agentbench_af.test_group]\nbroken = broken_plugin_mod\n"
                                           f"fine = {'json'}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(plugins, "FAILED", [])
    with caplog.at_level(logging.WARNING, logger="agentbench_af"):
        plugins.load_entry_points("agentbench_af.test_group")
    assert [r.getMessage() for r in caplog.records] == [
        "plugin 'broken' (agentbench_af.test_group -> broken_plugin_mod) failed to load: "
        "ModuleNotFoundError: No module named 'broken_plugin_mod'"]
    assert plugins.FAILED == [caplog.records[0].getMessage()]
    assert "plugins that failed to load: plugin 'broken'" in plugins.failed_hint()


def test_reproduce_import_option_reaches_the_preset(tmp_path, tmp_module):
    from agentbench_af.sweep.reproduce import ReproduceConfig, prepare_spec

    spec = {"base": {"method": "grpo+tmp-half-reasoning"}, "grid": {"seeds": [0]}}
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(spec))
    args = ["reproduce", "--preset", str(path), "--work-dir", str(tmp_path / "w"), "--dry-run"]
    assert CliRunner().invoke(app, args).exit_code == 2  # the method is unknown without the module
    res = CliRunner().invoke(app, [*args, "--import", tmp_module])
    assert res.exit_code == 0 and "1 runs, 1 to run" in res.output, res.output
    assert prepare_spec(ReproduceConfig(str(path), work_dir=tmp_path / "w", imports=(tmp_module,))).imports == (
        tmp_module,)
