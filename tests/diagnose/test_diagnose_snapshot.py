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


def test_snapshot_with_a_policy_holds_the_headline_and_pearson():
    from bigram import Bigram, planted_trajs

    from agentbench_af.diagnose.headline import compute_headline
    from agentbench_af.results.snapshot import record_headline

    batch = make_batch(planted_trajs(0, "action", n_groups=6))
    lm = Bigram(int(batch.input_ids.max()) + 1, scale=0.3)
    settings = {"max_groups": 4, "shuffles": 8, "resamples": 100}
    snap = bottleneck_snapshot(batch, step=2, lm=lm, settings=settings)
    expected = compute_headline(batch, lm, **settings).to_dict(with_groups=False)
    assert snap.headline == expected and snap.headline["ci_low"] > snap.headline["null"]
    stats = compute_bottleneck(batch, ["old"])
    assert snap.sources["old"].pearson == {k: stats.sources["old"].overall.roles[k].pearson
                                           for k in ("reasoning", "action", "format")}
    again = BottleneckSnapshot.from_dict(json.loads(json.dumps(snap.to_dict())))
    assert again == snap
    field = record_bottleneck(None, snap)
    assert record_headline(field, "final") == expected and record_headline(field, "warm_start") is None
    assert bottleneck_snapshot(batch, step=2).headline is None  # no policy: no headline


def test_old_snapshot_dicts_read_back_without_the_new_fields():
    old = {"step": 0, "n_groups": 2, "n_groups_used": 1, "n_generated_tokens": 10,
           "sources": {"old": {"ratio": 1.1, "null_ratio": 1.0, "action_token_share": 0.2,
                               "action_signal_share": 0.22, "reason": None}}}
    snap = BottleneckSnapshot.from_dict(old)
    assert snap.headline is None and snap.sources["old"].pearson is None and snap.sources["old"].ratio == 1.1


def test_headline_failure_is_recorded_not_raised():
    from bigram import Bigram

    batch = make_batch(bandit_trajs(0, "action", n_groups=2, group_size=2))
    snap = bottleneck_snapshot(batch, step=1, lm=Bigram(3))  # ids beyond the model's vocabulary
    assert snap.headline["ratio"] is None and snap.headline["reason"].startswith("headline failed: ")
    assert snap.sources["old"].ratio is not None  # the secondary numbers are still there
