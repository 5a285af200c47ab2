"""`results.snapshot`, the record form of the diagnostic: the action ratio per source of one batch, None with a reason where
it is undefined, and the record field with its warm-start and final snapshots."""

import json

import torch
from diag_factory import Traj, Turn, bandit_trajs, make_batch

from agentbench_af.diagnose import compute_bottleneck
from agentbench_af.results.snapshot import (
    BottleneckSnapshot,
    bottleneck_snapshot,
    record_bottleneck,
    record_ratio,
)


def test_snapshot_holds_the_full_diagnostic_numbers():
    batch = make_batch(bandit_trajs(0, "action", n_groups=6, group_size=4))
    snap = bottleneck_snapshot(batch, step=3)
    stats = compute_bottleneck(batch, ["old", "entropy"], null_permutations=16)
    assert snap.step == 3 and list(snap.sources) == ["old", "entropy"]
    assert (snap.n_groups, snap.n_groups_used, snap.n_generated_tokens) == (
        stats.n_groups, stats.n_groups_used, stats.n_generated_tokens)
    for name in ("old", "entropy"):
        action = stats.sources[name].overall.roles["action"]
        s = snap.sources[name]
        assert s.ratio == stats.sources[name].bottleneck_ratio > 2  # reward made by the action tokens
        assert (s.null_ratio, s.action_token_share, s.action_signal_share, s.reason) == (
            action.null_ratio, action.token_share, action.signal_share, None)
    again = BottleneckSnapshot.from_dict(json.loads(json.dumps(snap.to_dict())))
    assert again == snap


def test_no_reward_variance_gives_none_with_the_reason():
    trajs = [Traj(g, 1.0, [Turn("rraf", [1.0, 2.0, 0.5, 0.1])]) for g in range(3) for _ in range(2)]
    snap = bottleneck_snapshot(make_batch(trajs), step=0)
    assert snap.n_groups == 3 and snap.n_groups_used == 0
    for s in snap.sources.values():
        assert s.ratio is None and s.action_token_share is None
        assert s.reason == "no group with reward variance (3 groups)"


def test_no_action_tokens_and_an_unreadable_batch():
    trajs = [Traj(0, float(i), [Turn("rrf", [1.0, 2.0 + i, 0.5])]) for i in range(2)]
    snap = bottleneck_snapshot(make_batch(trajs), step=1)
    assert snap.n_groups_used == 1 and snap.sources["old"].reason == "no action tokens"
    batch = make_batch(bandit_trajs(0, "action", n_groups=2, group_size=2))
    batch.old_logprobs[batch.response_mask.nonzero()[0].tolist()] = torch.nan
    snap = bottleneck_snapshot(batch, step=1)  # no exception: the run goes on
    assert snap.sources["old"].ratio is None and snap.sources["old"].reason.startswith("diagnostic failed: ")


def test_record_field():
    warm = bottleneck_snapshot(make_batch(bandit_trajs(0, "action", n_groups=4, group_size=4)), step=0)
    final = bottleneck_snapshot(make_batch(bandit_trajs(1, "reasoning", n_groups=4, group_size=4)), step=5)
    field = record_bottleneck(warm.to_dict(), final)
    assert field["sources"] == ["old", "entropy"] and field["warm_start"]["step"] == 0 and field["final"]["step"] == 5
    assert record_ratio(field, "warm_start", "old") == warm.sources["old"].ratio > 1
    assert record_ratio(field, "final", "entropy") == final.sources["entropy"].ratio < 1
    assert record_ratio(None, "final") is None and record_ratio({"final": None}, "final") is None
    assert record_bottleneck(None, final)["warm_start"] is None  # e.g. resumed from an older checkpoint
    assert record_bottleneck(None, warm)["warm_start"] == warm.to_dict()  # 0 RL steps: one batch serves both
