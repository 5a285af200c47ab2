"""Expert demonstrations as `Trajectory` records, so the warm start trains on exactly the contexts
the rollout collector builds (same chat format, same context mode, token roles from the same code).

The expert's response text is tokenised here (it was never sampled, so there is nothing to preserve);
an end-of-turn id closes every response. Left out: demonstrations from sources other than the
environment's own expert.
"""

from __future__ import annotations

from collections.abc import Sequence

import agentbench_af
from agentbench_af.formats.chat import ChatFormat
from agentbench_af.formats.parse import format_response
from agentbench_af.formats.prompts import turn_message
from agentbench_af.formats.roles import token_roles
from agentbench_af.rollout.collect import build_context, stable_hash
from agentbench_af.rollout.types import RolloutConfig, Trajectory, TurnRecord


def check_draws_vary(env_id: str, env_kwargs: dict | None, draws: int) -> None:
    """`ValueError` when `draws` > 1 episodes of a seed would all be the same game (`TextEnv.draws_vary`)."""
    if draws > 1 and not agentbench_af.make(env_id, **(env_kwargs or {})).draws_vary:
        raise ValueError(f"{draws} draws of a seed are the same game on {env_id} with {env_kwargs or {}}, so the "
                         f"demonstrations would repeat; use 1 (on WebShop, draws differ with relabel_ids=true)")


def demonstration_trajectories(
    env_id: str,
    seeds: Sequence[int],
    tokenizer,
    chat: ChatFormat,
    cfg: RolloutConfig,
    env_kwargs: dict | None = None,
    draws: int = 1,
) -> list[Trajectory]:
    """`draws` expert episodes per seed, the k-th reset with `options={"draw": k}` (one group each, numbered in
    order: seed by seed, draw by draw)."""
    check_draws_vary(env_id, env_kwargs, draws)
    eot = list(chat.end_of_turn_ids)[:1]
    trajs = []
    for group, (seed, draw) in enumerate((s, k) for s in seeds for k in range(draws)):
        env = agentbench_af.make(env_id, **(env_kwargs or {}))
        obs, _ = env.reset(seed=int(seed), options={"draw": draw} if draw else None)
        traj = Trajectory(env_id=env_id, seed=int(seed), group=group, system_prompt=env.system_prompt())
        done = False
        while not done:
            message = turn_message(obs, env.turn + 1, env.actions_left, env.variant.max_actions_per_turn)
            context = build_context(chat, traj, message, cfg)
            expert = env.expert_turn()
            text = format_response(expert.reasoning, expert.actions)
            body = text[len(cfg.prompt_prefix) :] if text.startswith(cfg.prompt_prefix) else text
            ids = chat.response_ids(body, cfg.prompt_prefix) + eot
            roles = token_roles(ids, tokenizer, prompt_prefix=cfg.prompt_prefix)
            obs_before = obs
            obs, reward, terminated, truncated, info = env.step(text)
            traj.turns.append(
                TurnRecord(
                    user_message=message, context_ids=context, response_ids=ids,
                    logprobs=[0.0] * len(ids), entropies=[0.0] * len(ids), roles=[int(r) for r in roles],
                    response_text=text, reward=float(reward), valid=bool(info["action_is_valid"]),
                    effective=bool(info["action_is_effective"]), obs_key=stable_hash(obs_before),
                )
            )
            traj.success = bool(info["success"])
            done = terminated or truncated
            traj.terminated, traj.truncated = bool(terminated), bool(truncated)
        trajs.append(traj)
    return trajs
