"""The TRL side of a multi-turn step (`peer_trl.py --turns N`): episodes run the way a TRL user writes them.

TRL 1.16's `GRPOTrainer` hands generation to a `rollout_func(prompts, trainer)` that returns `prompt_ids`,
`completion_ids` and `logprobs`; an `env_mask` field (1: a token the model sampled, 0: one the environment
inserted) becomes its `tool_mask`, and the loss runs on `completion_mask * tool_mask`. `run_episodes`
builds those fields: each turn, one `generate` call over the live rows' contexts (in `peer_trl.py` TRL's
own plain `model.generate` path, `_generate_single_turn`, as TRL's tool loop calls it per turn); the
reply, decoded without special tokens as TRL's single-turn reward sees it, steps the environment; a
reply cut by the token limit is closed with an end-of-turn id, and the next user message follows as
the ids that TRL's `_get_tool_suffix_ids` would take from the chat template (`turn_suffix_ids`), so the
sampled ids are never re-tokenised. The episode's reward is the sum of its turns' rewards.

`compare_with_collector` runs one scripted episode set through this code and through our collector
(`collect_rollouts` + `trajectories_to_batch`) and checks that they give the same token ids, the same
loss positions and the same returns, so that the timed steps of both sides train on the same layout.
This module needs neither TRL nor a model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import agentbench_af
from agentbench_af.formats.chat import ChatFormat
from agentbench_af.formats.prompts import turn_message
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import Generation, GenerationEngine, RolloutConfig, SamplingParams

Generate = Callable[[list[list[int]]], list[list[int]]]  # contexts -> sampled ids (stop id kept when it ended)


def _template_ids(tokenizer: Any, messages: list[dict[str, str]], add_generation_prompt: bool) -> list[int]:
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt, tokenize=True,
                                        return_dict=False)
    return [int(i) for i in ids]


def turn_suffix_ids(tokenizer: Any, user_message: str, end_ids: Sequence[int]) -> list[int]:
    """Ids that follow an assistant reply's end-of-turn id up to the next assistant header, for a user
    message: the template of a dummy exchange plus the message, after the dummy's last end-of-turn id
    (how TRL 1.16's `_get_tool_suffix_ids` cuts a tool result's suffix)."""
    dummy = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
    head = _template_ids(tokenizer, dummy, False)
    ends = [k for k, i in enumerate(head) if i in end_ids]
    if not ends:
        raise ValueError(f"the chat template puts none of the end-of-turn ids {list(end_ids)} after a reply")
    head = head[: ends[-1] + 1]
    full = _template_ids(tokenizer, dummy + [{"role": "user", "content": user_message}], True)
    if full[: len(head)] != head:
        raise ValueError("the chat template renders the dummy exchange differently once a user turn follows")
    return full[len(head):]


@dataclass(frozen=True)
class Episodes:
    """What `rollout_func` returns, per row: the first prompt, everything after it, and the loss mask."""

    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]  # every reply and inserted user turn after the first prompt
    env_mask: list[list[int]]  # 1: sampled by the model, 0: inserted (closing id of a cut reply, user turns)
    rewards: list[float]  # the sum of the episode's turn rewards
    turns: list[int]

    @property
    def generated_tokens(self) -> int:
        return sum(sum(m) for m in self.env_mask)


def run_episodes(generate: Generate, tokenizer: Any, prompt_ids: Sequence[Sequence[int]], seeds: Sequence[int],
                 env_id: str, env_kwargs: dict, end_ids: Sequence[int]) -> Episodes:
    """One episode per row (row i starts from `prompt_ids[i]` on `seeds[i]`), a batched `generate` per turn."""
    if len(prompt_ids) != len(seeds):
        raise ValueError(f"{len(prompt_ids)} prompts for {len(seeds)} seeds")
    envs = [agentbench_af.make(env_id, **env_kwargs) for _ in seeds]
    for env, seed in zip(envs, seeds, strict=True):
        env.reset(seed=int(seed))
    completion: list[list[int]] = [[] for _ in seeds]
    mask: list[list[int]] = [[] for _ in seeds]
    rewards, turns = [0.0] * len(seeds), [0] * len(seeds)
    live = list(range(len(seeds)))
    while live:
        replies = generate([list(prompt_ids[i]) + completion[i] for i in live])
        if len(replies) != len(live):
            raise ValueError(f"generate returned {len(replies)} replies for {len(live)} contexts")
        next_live = []
        for i, ids in zip(live, replies, strict=True):
            ids = [int(t) for t in ids]
            finished = bool(ids) and ids[-1] in end_ids
            completion[i] += ids
            mask[i] += [1] * len(ids)
            text = tokenizer.decode(ids[:-1] if finished else ids, skip_special_tokens=True)
            obs, reward, terminated, truncated, _ = envs[i].step(text)
            rewards[i] += float(reward)
            turns[i] += 1
            if terminated or truncated:
                continue
            env = envs[i]
            inserted = ([] if finished else [int(end_ids[0])]) + turn_suffix_ids(
                tokenizer, turn_message(obs, env.turn + 1, env.actions_left, env.variant.max_actions_per_turn), end_ids)
            completion[i] += inserted
            mask[i] += [0] * len(inserted)
            next_live.append(i)
        live = next_live
    return Episodes([list(p) for p in prompt_ids], completion, mask, rewards, turns)


def scripted_reply(context: Sequence[int], replies: Sequence[Sequence[int]]) -> list[int]:
    """One of `replies`, chosen by a hash of the context ids (the same context gets the same reply)."""
    digest = hashlib.blake2b(repr(list(context)).encode(), digest_size=8).digest()
    return list(replies[int.from_bytes(digest, "big") % len(replies)])


class _ScriptedEngine:
    """A `GenerationEngine` whose reply to a context is `scripted_reply` (for our collector)."""

    def __init__(self, replies: Sequence[Sequence[int]], end_ids: Sequence[int]) -> None:
        self.replies, self.end_ids = replies, end_ids

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams, stop_ids: Sequence[int],
                 cache_keys: Sequence[Hashable] | None = None) -> list[Generation]:
        out = []
        for context in prompts:
            ids = scripted_reply(context, self.replies)
            out.append(Generation(ids, [0.0] * len(ids), [0.0] * len(ids), bool(ids) and ids[-1] in self.end_ids))
        return out


def compare_with_collector(tokenizer: Any, chat: ChatFormat, prompt_ids: Sequence[Sequence[int]],
                           seeds: Sequence[int], group: int, env_id: str, env_kwargs: dict,
                           replies: Sequence[Sequence[int]]) -> Episodes:
    """Scripted episodes (`replies` chosen per context) through `run_episodes` and through our collector
    (full context, `group` rollouts per seed; `prompt_ids` holds one row per rollout, seed-major) must give
    equal ids, loss positions and returns; raises ValueError where they differ. Returns the TRL side's."""
    end_ids = list(chat.end_of_turn_ids)
    rows = [s for s in seeds for _ in range(group)]
    engine = cast(GenerationEngine, _ScriptedEngine(replies, end_ids))  # the collector calls only `generate`
    ours = collect_rollouts(engine, tokenizer, chat, env_id, seeds,
                            RolloutConfig(group_size=group, context_mode="full", max_new_tokens=max(map(len, replies))),
                            env_kwargs)
    batch = trajectories_to_batch(ours, "full", int(tokenizer.pad_token_id))
    theirs = run_episodes(lambda ctxs: [scripted_reply(c, replies) for c in ctxs], tokenizer, prompt_ids, rows,
                          env_id, env_kwargs, end_ids)
    for b, (traj, head, tail, mask) in enumerate(zip(ours, theirs.prompt_ids, theirs.completion_ids, theirs.env_mask,
                                                     strict=True)):
        n = int(batch.attention_mask[b].sum())
        if batch.input_ids[b, :n].tolist() != head + tail:
            raise ValueError(f"row {b} (seed {traj.seed}): the TRL side's token ids differ from our collector's")
        if batch.response_mask[b, len(head):n].int().tolist() != mask or batch.response_mask[b, :len(head)].any():
            raise ValueError(f"row {b} (seed {traj.seed}): the TRL side's env_mask differs from our loss positions")
        if traj.total_reward != theirs.rewards[b] or len(traj.turns) != theirs.turns[b]:
            raise ValueError(f"row {b} (seed {traj.seed}): returns or turn counts differ")
    return theirs
