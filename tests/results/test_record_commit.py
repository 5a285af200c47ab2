"""A record names the commit of the code the process loaded, not whatever the checkout holds later."""

import subprocess

from agentbench_af.results import record


def test_commit_is_read_once_at_import(monkeypatch):
    loaded = record._LOADED_COMMIT
    assert loaded is None or loaded.split("-")[0].isalnum()

    def no_git(*args, **kwargs):
        raise AssertionError("git must not be asked again after import")

    monkeypatch.setattr(subprocess, "run", no_git)
    assert record.git_commit() == loaded


def test_commit_of_this_checkout():
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=record.Path(record.__file__).parent, capture_output=True,
                          text=True).stdout.strip()
    if head:  # a git checkout (an sdist install has none, and records None)
        assert record.git_commit().startswith(head[:7])
