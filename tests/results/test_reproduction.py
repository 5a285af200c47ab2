"""Comparing a record with its re-run: the two-proportion z score, when an exact match is expected."""

import math
import subprocess

import pytest

from agentbench_af.results import reproduction
from agentbench_af.results.record import RunRecord
from agentbench_af.results.reproduction import check_cell, exact_expected, success_z

HERE = {"device": "cpu", "cpu_model": "AMD EPYC", "cpu_capability": "AVX512", "python": "3.11.7",
        "torch": "2.13.0+cpu", "transformers": "5.24.0", "tokenizers": "0.23.3", "numpy": "2.4.6",
        "commit": "a" * 40, "clean": True, "code_hash": "0123456789abcdef"}


def record(final=0.25, warm=0.125, fingerprint=None, commit=None, episodes=64, versions=None) -> RunRecord:
    return RunRecord(env_id="FrozenLake-4x4-v0", method="ppo", model="tiny-0.12m", model_params=1, seed=0,
                     config_hash="c" * 12, config={}, protocol={"eval_episodes": episodes}, final_success=final,
                     final_metrics={"success": final}, warm_start_success=warm,
                     curve=[{"step": 0, "success": warm}, {"step": 8, "success": final}],
                     git_commit=commit, versions=versions or {}, fingerprint=fingerprint)


def test_z_score_worked_by_hand():
    # 4/16 against 8/16: pooled p = 12/32 = 0.375, SE = sqrt(0.375 * 0.625 * (1/16 + 1/16)) = sqrt(0.029296875)
    assert success_z(0.25, 0.5, 16, 16) == pytest.approx(0.25 / math.sqrt(0.029296875))
    assert success_z(0.25, 0.5, 16, 16) == pytest.approx(1.46059, abs=1e-5)
    # 5/10 against 5/20: pooled p = 10/30, SE = sqrt(1/3 * 2/3 * (1/10 + 1/20)) = sqrt(1/30)
    assert success_z(0.5, 0.25, 10, 20) == pytest.approx(-0.25 * math.sqrt(30))
    # 0/10 against 10/10: pooled p = 1/2, SE = sqrt(1/4 * 2/10) = sqrt(0.05): 4.47 SE
    assert success_z(0.0, 1.0, 10, 10) == pytest.approx(1 / math.sqrt(0.05))
    assert success_z(0.0, 0.0, 64, 64) == 0.0 and success_z(1.0, 1.0, 8, 8) == 0.0  # SE 0: no difference
    assert success_z(None, 0.5, 8, 8) is None and success_z(0.5, 0.5, 0, 8) is None


def test_exact_match_expected_for_the_same_class_and_code():
    fp = dict(HERE)
    assert exact_expected(record(fingerprint=fp), HERE) == (True, [])
    # same clean commit, code hash unknown: still the same code
    assert exact_expected(record(fingerprint={**fp, "code_hash": None}), HERE) == (True, [])


def test_exact_match_not_expected_on_other_hardware_or_versions():
    expected, reasons = exact_expected(record(fingerprint={**HERE, "cpu_capability": "AVX2"}), HERE)
    assert not expected and reasons == ["cpu_capability AVX2 vs AVX512"]
    expected, reasons = exact_expected(record(fingerprint={**HERE, "torch": "2.12.0+cpu"}), HERE)
    assert not expected and reasons == ["torch 2.12.0+cpu vs 2.13.0+cpu"]


def test_exact_match_not_expected_from_an_uncommitted_tree():
    rec = record(fingerprint={**HERE, "clean": False, "code_hash": "ffffffffffffffff"})
    expected, reasons = exact_expected(rec, HERE)
    assert not expected
    assert reasons == ["code: record aaaaaaa-dirty, here aaaaaaa (an uncommitted tree cannot be compared)"]


def test_clean_commits_compare_their_code_with_git(monkeypatch):
    rec = record(fingerprint={**HERE, "commit": "b" * 40, "code_hash": "ffffffffffffffff"})
    monkeypatch.setattr(reproduction, "code_unchanged", lambda a, b: True)  # only docs changed between them
    assert exact_expected(rec, HERE) == (True, [])
    monkeypatch.setattr(reproduction, "code_unchanged", lambda a, b: False)
    assert exact_expected(rec, HERE)[1] == ["code: record bbbbbbb, here aaaaaaa (code differs)"]


def test_code_unchanged_asks_git_about_code_folders_only():
    head = reproduction.subprocess.run(["git", "rev-parse", "HEAD"], cwd=reproduction._PACKAGE_DIR,
                                       capture_output=True, text=True).stdout.strip()
    if not head:
        pytest.fail("these tests run from a git checkout")
    assert reproduction.code_unchanged(head, head) is True
    assert reproduction.code_unchanged(head, "0" * 40) is None  # an unknown commit: git cannot tell


def test_code_unchanged_between_commits_of_a_repository(tmp_path):
    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout.strip()

    (tmp_path / "agentbench_af").mkdir()
    (tmp_path / "agentbench_af" / "loss.py").write_text("CLIP = 0.2\n")
    (tmp_path / "README.md").write_text("v1\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "first")
    first = git("rev-parse", "HEAD")
    (tmp_path / "README.md").write_text("v2\n")  # docs only
    git("commit", "-qam", "docs")
    docs = git("rev-parse", "HEAD")
    (tmp_path / "agentbench_af" / "loss.py").write_text("CLIP = 0.3\n")
    git("commit", "-qam", "code")
    code = git("rev-parse", "HEAD")
    package = tmp_path / "agentbench_af"  # asked from the package folder, as the installed code does
    assert reproduction.code_unchanged(first, docs, package) is True
    assert reproduction.code_unchanged(docs, code, package) is False
    assert reproduction.code_unchanged(first, code, tmp_path) is False


def test_a_record_without_fingerprint_says_so_and_names_version_differences():
    rec = record(commit="a" * 40 + "-dirty", versions={"torch": "2.13.0+cpu", "transformers": "5.23.0"})
    expected, reasons = exact_expected(rec, HERE)
    assert not expected
    assert reasons == ["the record has no fingerprint", "transformers 5.23.0 vs 5.24.0",
                       "code: record aaaaaaa-dirty, here aaaaaaa (an uncommitted tree cannot be compared)"]


def test_check_cell_exact():
    rec = record(fingerprint=HERE)
    check = check_cell("cell", rec, record(fingerprint=HERE), HERE)
    assert check.exact_expected and check.exact and check.passed and check.verdict == "exact match"
    changed = check_cell("cell", record(final=0.265625, fingerprint=HERE), record(fingerprint=HERE), HERE)
    assert changed.exact_expected and not changed.exact and not changed.passed
    assert changed.verdict == "FAIL: exact match expected"
    assert abs(changed.z_final) < 1  # one episode of 64 apart: statistically nothing, exactly a failure


def test_check_cell_statistical():
    # 16/64 against 20/64: pooled 36/128, SE = sqrt(0.28125 * 0.71875 / 32) = 0.0795, z = 0.0625 / 0.0795 = 0.79
    near = check_cell("cell", record(final=0.25), record(final=0.3125, fingerprint=HERE), HERE)
    assert not near.exact_expected and near.passed and near.verdict == "within 3 SE"
    assert near.z_final == pytest.approx(0.0625 / math.sqrt(0.28125 * 0.71875 / 32))
    # 16/64 against 40/64: pooled 56/128, SE = sqrt(0.4375 * 0.5625 / 32) = 0.0877, z = 0.375 / 0.0877 = 4.28
    far = check_cell("cell", record(final=0.25), record(final=0.625, fingerprint=HERE), HERE)
    assert far.z_final == pytest.approx(4.2762, abs=1e-4) and not far.passed and far.verdict == "FAIL: beyond 3 SE"
    # the warm start is held to the same tolerance: 0/64 against 12/64 (pooled 12/128) is 3.64 SE
    warm = check_cell("cell", record(warm=0.0), record(warm=0.1875, fingerprint=HERE), HERE)
    assert warm.z_warm == pytest.approx(3.6389, abs=1e-4) and not warm.passed


def test_check_cell_refuses_a_different_number_of_episodes():
    check = check_cell("cell", record(episodes=64), record(episodes=32, fingerprint=HERE), HERE)
    assert not check.passed and check.error == "the re-run evaluated 32 episodes, the record 64"


def test_a_data_parallel_record_is_not_expected_to_match_a_one_process_rerun():
    rec = record(fingerprint=HERE)
    rec.parallel = {"world_size": 2, "strategy": "ddp"}
    check = check_cell("cell", rec, record(fingerprint=HERE), HERE)
    assert not check.exact_expected and check.reasons == ["trained on 2 processes, re-run on 1"] and check.passed
