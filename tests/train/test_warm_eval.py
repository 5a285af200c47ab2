"""The step-0 evaluation of a shared warm start is computed once and read back by every method's run."""

import json
import shutil

from train_helpers import tiny_config

from agentbench_af.train import loop
from agentbench_af.train.distributed import evaluation as distributed_eval
from agentbench_af.train.warm.warm_eval import shared_warm_eval, warm_eval_key


def test_computed_once_then_read(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"step": 0, "success": 0.25}

    assert shared_warm_eval(tmp_path, "k", compute) == {"step": 0, "success": 0.25}
    assert shared_warm_eval(tmp_path, "k", compute) == {"step": 0, "success": 0.25}
    assert len(calls) == 1
    assert json.loads((tmp_path / "evals" / "k.json").read_text())["success"] == 0.25


def test_unreadable_file_is_recomputed(tmp_path):
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "k.json").write_text('{"step": 0, "succ')  # torn write
    assert shared_warm_eval(tmp_path, "k", lambda: {"success": 0.5}) == {"success": 0.5}
    assert json.loads((tmp_path / "evals" / "k.json").read_text()) == {"success": 0.5}


def test_key_follows_the_protocol_not_the_method(tmp_path):
    base = warm_eval_key(tiny_config(tmp_path, method="grpo"), "None")
    assert warm_eval_key(tiny_config(tmp_path, method="ppo+actfocus", rl__lr=1e-5), "None") == base
    for change in ({"eval__episodes": 5}, {"eval__temperature": 0.5}, {"run__seed": 1},
                   {"rollout__max_new_tokens": 40}, {"env__overrides": "{max_turns: 2}"}):
        assert warm_eval_key(tiny_config(tmp_path, **change), "None") != base, change
    assert warm_eval_key(tiny_config(tmp_path), "torch.bfloat16") != base


def test_second_method_reuses_the_first_runs_warm_start_eval(tmp_path, warm_start, monkeypatch):
    warm = tmp_path / "warm"
    shutil.copytree(warm_start, warm)
    shutil.rmtree(warm / "evals", ignore_errors=True)  # evaluations other tests stored in the shared warm start
    first = loop.train(tiny_config(tmp_path / "a", method="grpo", rl__steps=1, eval__every=1,
                                   run__init_from=str(warm)), show_progress=False)
    assert len(list((warm / "evals").glob("*.json"))) == 1

    calls = []
    real = distributed_eval.evaluate_policy  # the loop evaluates through train.distributed.evaluation
    monkeypatch.setattr(distributed_eval, "evaluate_policy", lambda *a, **k: calls.append(1) or real(*a, **k))
    second = loop.train(tiny_config(tmp_path / "b", method="ppo", rl__steps=1, eval__every=1,
                                    run__init_from=str(warm)), show_progress=False)
    assert len(calls) == 1  # only the step-1 evaluation ran; step 0 came from the warm start's file
    assert second.curve[0] == first.curve[0]
    assert second.warm_start_success == first.warm_start_success


def test_the_evaluation_shows_its_turns_in_a_progress_bar(warm_start, capsys):
    from agentbench_af.models.policy import Policy
    from agentbench_af.rollout.engine import TransformersEngine

    cfg = tiny_config(warm_start.parent / "unused", eval__episodes=6)
    policy = Policy.load(warm_start)
    engine = TransformersEngine(policy.lm, policy.pad_token_id, cfg.rollout.max_batch_size)
    taken = []
    _, trajs = distributed_eval.evaluate_policy(engine, policy.tokenizer, policy.chat, cfg.env.id, 6, 1.0,
                                                cfg.rollout, cfg.env.overrides, progress=taken.append)
    assert sum(taken) == sum(len(tr.turns) for tr in trajs) > 0  # every turn reported once
    distributed_eval.evaluation_row(engine, policy.tokenizer, policy.chat, cfg, distributed_eval.Ranks(), 0, 1,
                                    show_progress=True)
    label = "greedy" if cfg.eval.temperature == 0 else f"T = {cfg.eval.temperature:g}"
    assert f"eval {cfg.env.id} ({label}, 6 episodes)" in capsys.readouterr().err


def test_a_finished_pass_is_kept_until_cleared(tmp_path):
    from agentbench_af.evaluate.evaluate import EvalResult
    from agentbench_af.train.warm.warm_eval import EvalPasses

    said, calls = [], []
    passes = EvalPasses(tmp_path, "k", announce=said.append)
    result = EvalResult(success=0.5, mean_reward=0.5, valid_rate=1.0, effective_rate=0.75, mean_turns=2.0, episodes=4)
    assert passes.get("T1", lambda: calls.append(1) or result) == result
    assert passes.get("T1", lambda: calls.append(1) or result) == result  # read back, not played again
    assert len(calls) == 1 and len(said) == 1 and "T1 pass" in said[0]
    passes.path("greedy").write_text('{"success": 0.')  # torn by a kill: played again
    assert passes.get("greedy", lambda: result) == result
    passes.clear()
    assert list((tmp_path / "evals" / "passes").iterdir()) == []


def test_a_killed_warm_start_evaluation_resumes_at_its_unfinished_pass(tmp_path, warm_start, monkeypatch):
    def fresh_warm(name):
        warm = tmp_path / name
        shutil.copytree(warm_start, warm)
        shutil.rmtree(warm / "evals", ignore_errors=True)
        return warm

    def config(out, warm):
        return tiny_config(tmp_path / out, rl__steps=0, eval__episodes=6, eval__temperature=1.0, eval__also_greedy=True,
                           run__init_from=str(warm))

    whole = loop.train(config("whole", fresh_warm("warm-a")), show_progress=False).curve[0]

    warm = fresh_warm("warm-b")
    real, played = distributed_eval.evaluate_policy, []

    def killed_at_greedy(*a, **k):
        played.append(a[5])  # the temperature
        if a[5] == 0:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(distributed_eval, "evaluate_policy", killed_at_greedy)
    try:
        loop.train(config("killed", warm), show_progress=False)
    except KeyboardInterrupt:
        pass
    assert played == [1.0, 0] and len(list((warm / "evals" / "passes").glob("*.json"))) == 1

    monkeypatch.setattr(distributed_eval, "evaluate_policy", lambda *a, **k: played.append(a[5]) or real(*a, **k))
    resumed = loop.train(config("killed", warm), resume=True, show_progress=False).curve[0]
    assert played == [1.0, 0, 0]  # only the greedy pass played again
    assert resumed == whole
    assert not list((warm / "evals" / "passes").glob("*.json"))  # the stored row replaces the kept passes
