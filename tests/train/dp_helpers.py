"""One update on a fixed set of trajectories, by one process on all of them or by each of several gloo
ranks on its contiguous share of the prompts: the same code path as the training loop (score, credit,
wrap, ppo_update), with SGD and no gradient clipping, so that the parameters after the step are
proportional to the gradient and any normalisation error shows."""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist

from agentbench_af.credit import CreditConfig
from agentbench_af.models.forward import score_batch
from agentbench_af.models.policy import Policy
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.train.distributed.credit import rank_advantages, rank_token_weights
from agentbench_af.train.distributed.data_parallel import DataParallel, TrainModules
from agentbench_af.train.distributed.ranks import SINGLE, Ranks, UpdateSync, reduce_metrics, share
from agentbench_af.train.update.critic import SeparateCritic
from agentbench_af.train.update.loss import LossConfig
from agentbench_af.train.update.ppo import Credit, UpdateSettings, ppo_update

CPU = torch.device("cpu")


@dataclass(frozen=True)
class Case:
    name: str
    estimator: str = "grpo"
    weighting: str = "uniform"
    critic: str = "none"  # none | detached | shared | separate
    agg: str = "token-mean"
    strategy: str = "ddp"
    kl_coef: float = 0.0
    entropy_coef: float = 0.0
    synced: bool = True  # False: DDP without the global denominators (the naive per-rank mean)
    credit: dict = field(default_factory=dict)
    loss: dict = field(default_factory=dict)  # further LossConfig fields (loss.policy and its knobs)
    lopti: float | None = None  # rl.token_passes=lopti with this threshold


def one_update(warm_start: str, trajs: list, group_size: int, case: Case, ranks: Ranks) -> dict[str, torch.Tensor]:
    """The trained parameters of the plain modules after one update of this rank's share ("lm.<name>",
    "value_head.<name>", "critic.<name>"), the same before it ("init.lm.<name>", ...) and the metrics
    averaged over ranks ("metric.<name>")."""
    torch.manual_seed(0)
    policy = Policy.load(warm_start)
    prompts = [trajs[i:i + group_size] for i in range(0, len(trajs), group_size)]
    mine = [t for group in share(prompts, ranks) for t in group]
    batch = trajectories_to_batch(mine, "full", policy.pad_token_id)
    value_head = policy.ensure_value_head() if case.critic in ("detached", "shared") else None
    critic = SeparateCritic(policy.lm) if case.critic == "separate" else None
    ref = copy.deepcopy(policy.lm).requires_grad_(False) if case.kl_coef > 0 else None
    batch = score_batch(policy.lm, batch, 1.0, CPU, value_head, ref, critic)
    credit = CreditConfig(estimator=case.estimator, weighting=case.weighting, **case.credit)
    advantage = rank_advantages(batch, credit, ranks)
    weights = rank_token_weights(batch, credit, ranks)
    parallel = DataParallel(ranks, case.strategy, CPU)  # type: ignore[arg-type]
    plain = TrainModules(policy.lm, value_head, critic)
    init = {f"init.{name}.{k}": v.detach().clone() for name, m in plain.named().items() for k, v in m.state_dict().items()}
    trained = parallel.wrap(plain)
    params = [p for m in trained.named().values() for p in m.parameters()]
    optimizer = torch.optim.SGD(params, lr=0.5)
    loss_cfg = LossConfig(agg=case.agg, max_grad_norm=1e9, kl_coef=case.kl_coef, entropy_coef=case.entropy_coef,  # type: ignore[arg-type]
                          **case.loss)
    settings = UpdateSettings(loss_cfg, CPU, detach_critic=case.critic == "detached",
                              sync=UpdateSync(ranks) if case.synced and ranks.active else None, lopti_threshold=case.lopti)
    metrics = ppo_update(trained, optimizer, batch, Credit(advantage.advantages, advantage.returns, weights), settings,
                         torch.Generator().manual_seed(0))
    parallel.after_update()
    out = {f"{name}.{k}": v.detach().clone() for name, m in parallel.plain.named().items() for k, v in m.state_dict().items()}
    out.update(init)
    out.update({f"metric.{k}": torch.tensor(v) for k, v in reduce_metrics(metrics, ranks).items()})
    return out


def reference(warm_start: str, trajs: list, group_size: int, cases: list[Case]) -> dict[str, dict]:
    return {c.name: one_update(warm_start, trajs, group_size, c, SINGLE) for c in cases}


def rank_main(rank: int, world: int, port: int, data: str, out_dir: str) -> None:
    """Entry point of one spawned rank: every case in `data` (a pickle), results to out_dir/rank-<r>.pt."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        spec = pickle.loads(Path(data).read_bytes())
        ranks = Ranks(rank, world, rank)
        results = {c.name: one_update(spec["warm_start"], spec["trajs"], spec["group_size"], dataclasses.replace(c), ranks)
                   for c in spec["cases"]}
        torch.save(results, Path(out_dir) / f"rank-{rank}.pt")
    finally:
        dist.destroy_process_group()
