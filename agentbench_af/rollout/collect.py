"""The multi-turn collector: steps many environments at once, one batched generation per turn.

For every live trajectory it builds the context from token ids only (rendered environment text and
the ids that were sampled; generated text is never re-tokenised), asks the engine for one response
each, labels the sampled ids with token roles, decodes them for the environment, and steps it. In
`full` mode each turn's context extends the previous one, so the trajectory index is passed to the
engine as a cache key (the transformers engine then runs only the new ids; see `prefix_cache`).
Left out: asynchronous environments (all envs here step in microseconds to milliseconds).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

import agentbench_af
from agentbench_af.formats.chat import ChatFormat
from agentbench_af.formats.prompts import turn_message
from agentbench_af.formats.roles import token_roles
from agentbench_af.rollout.types import (
    GenerationEngine,
    RolloutConfig,
    SamplingParams,
    Trajectory,
    TurnRecord,
)


def stable_hash(text: str) -> int:
    """A process-independent 63-bit hash of `text`."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).digest(), "big") >> 1


def build_context(chat: ChatFormat, traj: Trajectory, message: str, cfg: RolloutConfig) -> list[int]:
    """Context ids for the next turn of `traj` whose user message is `message`.

    In `full` mode this extends the previous turn's context (the same ids as rebuilding it from every
    message, without tokenising the history again)."""
    past = traj.turns
    if cfg.context_mode == "full" and past:
        last = past[-1]
        return list(last.context_ids) + closed_response(chat, last.response_ids) + list(
            chat.next_turn_ids(message, prompt_prefix=cfg.prompt_prefix)
        )
    return rebuild_context(chat, traj, message, cfg)


def rebuild_context(chat: ChatFormat, traj: Trajectory, message: str, cfg: RolloutConfig) -> list[int]:
    """`build_context` from every kept message (what `full` mode's shortcut must equal)."""
    past = traj.turns
    if cfg.context_mode == "window":
        past = past[-(cfg.window_turns - 1) :] if cfg.window_turns > 1 else []
    messages = [t.user_message for t in past] + [message]
    ids = list(chat.prefix_ids(traj.system_prompt, messages[0], prompt_prefix=cfg.prompt_prefix))
    for turn, nxt in zip(past, messages[1:], strict=True):
        ids += closed_response(chat, turn.response_ids)
        ids += chat.next_turn_ids(nxt, prompt_prefix=cfg.prompt_prefix)
    return ids


def closed_response(chat: ChatFormat, response_ids: Sequence[int]) -> list[int]:
    """The sampled ids as they stand in later contexts: a response cut by the token limit still closes
    its message with an end-of-turn id (not trained on)."""
    ids = list(response_ids)
    if not ids or ids[-1] not in chat.end_of_turn_ids:
        ids += list(chat.end_of_turn_ids[:1])
    return ids


def collect_rollouts(
    engine: GenerationEngine,
    tokenizer,
    chat: ChatFormat,
    env_id: str,
    seeds: Sequence[int],
    cfg: RolloutConfig,
    env_kwargs: dict | None = None,
    progress: Callable[[int], object] | None = None,
    reset_options: dict | None = None,
) -> list[Trajectory]:
    """Run `cfg.group_size` rollouts for each seed; group i holds the rollouts of `seeds[i]`. `reset_options`
    go to every `env.reset` (e.g. {"draw": k}, docs/environments.md)."""
    env_kwargs = env_kwargs or {}
    envs, trajs, messages = [], [], []
    for group, seed in enumerate(seeds):
        for _ in range(cfg.group_size):
            env = agentbench_af.make(env_id, **env_kwargs)
            obs, info = env.reset(seed=int(seed), options=reset_options)
            traj = Trajectory(env_id=env_id, seed=int(seed), group=group, system_prompt=env.system_prompt())
            envs.append(env)
            trajs.append(traj)
            messages.append((obs, turn_message(obs, 1, env.actions_left, env.variant.max_actions_per_turn)))
    live = list(range(len(trajs)))
    reuse = cfg.context_mode == "full"
    clear = getattr(engine, "clear_cache", None)
    if clear is not None:
        clear()  # stored prefixes were computed by earlier weights
    try:
        _collect_turns(engine, tokenizer, chat, cfg, envs, trajs, messages, live, reuse, progress)
    finally:
        if clear is not None:
            clear()
    return trajs


def _collect_turns(engine, tokenizer, chat, cfg, envs, trajs, messages, live, reuse, progress) -> None:
    """Step every live trajectory until all have ended (one batched generation per turn)."""
    params = SamplingParams(cfg.temperature, cfg.top_p, cfg.max_new_tokens)
    stop_ids = list(chat.end_of_turn_ids)
    while live:
        contexts = [build_context(chat, trajs[i], messages[i][1], cfg) for i in live]
        too_long = {i for i, ctx in zip(live, contexts, strict=True) if len(ctx) + cfg.max_new_tokens > cfg.max_context_tokens}
        for i in too_long:
            trajs[i].truncated = True
        keep = [(i, ctx) for i, ctx in zip(live, contexts, strict=True) if i not in too_long]
        if not keep:
            break
        if reuse:
            gens = engine.generate([ctx for _, ctx in keep], params, stop_ids, cache_keys=[i for i, _ in keep])
        else:
            gens = engine.generate([ctx for _, ctx in keep], params, stop_ids)
        next_live = []
        for (i, ctx), gen in zip(keep, gens, strict=True):
            ids = gen.token_ids
            body = ids[:-1] if gen.finished else ids
            text = cfg.prompt_prefix + tokenizer.decode(body, skip_special_tokens=False)
            roles = token_roles(ids, tokenizer, prompt_prefix=cfg.prompt_prefix)
            obs_before, user_message = messages[i]
            env = envs[i]
            obs, reward, terminated, truncated, info = env.step(text)
            trajs[i].turns.append(
                TurnRecord(
                    user_message=user_message, context_ids=ctx, response_ids=list(ids),
                    logprobs=list(gen.logprobs), entropies=list(gen.entropies), roles=[int(r) for r in roles],
                    response_text=text, reward=float(reward), valid=bool(info["action_is_valid"]),
                    effective=bool(info["action_is_effective"]), invalid_reason=str(info.get("invalid_reason", "")),
                    obs_key=stable_hash(obs_before),
                )
            )
            trajs[i].success = bool(info["success"])
            if terminated or truncated:
                trajs[i].terminated, trajs[i].truncated = bool(terminated), bool(truncated)
            else:
                next_live.append(i)
                messages[i] = (obs, turn_message(obs, env.turn + 1, env.actions_left, env.variant.max_actions_per_turn))
        if progress is not None:
            progress(len(keep))
        live = next_live
