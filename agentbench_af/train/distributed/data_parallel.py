"""The modules an update trains, wrapped for data parallelism: DDP or FSDP2 (`run.parallel`).

- `ddp`: `DistributedDataParallel` around the policy, the value head and the separate critic; they keep
  sharing their parameters with the plain modules that generate and score, so nothing is copied.
- `fsdp2`: `torch.distributed.fsdp.fully_shard` on a copy of each module (each decoder layer named in the
  model's `_no_split_modules` is its own shard group, then the root). Generation and scoring run different
  numbers of forward passes on each rank, so they use the plain, unsharded modules, into which the trained
  weights are gathered after every update (`after_update`), as a colocated rollout engine does.
Checkpoints hold full (unsharded) state dicts in the one-process layout, so any world size resumes them.
Left out: FSDP2 mixed-precision policies (the loop's autocast applies) and CPU offload.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch import nn

from agentbench_af.train.distributed.ranks import Ranks

if TYPE_CHECKING:
    from torch.distributed.checkpoint.state_dict import OptimizerStateType, ValueType

Strategy = Literal["ddp", "fsdp2"]
STRATEGIES = ("ddp", "fsdp2")


@dataclass
class TrainModules:
    """The modules `ppo_update` runs on (wrapped), in the order their parameters enter the optimizer."""

    lm: nn.Module
    value_head: nn.Module | None = None
    critic: nn.Module | None = None

    def named(self) -> dict[str, nn.Module]:
        return {k: m for k, m in (("lm", self.lm), ("value_head", self.value_head), ("critic", self.critic))
                if m is not None}

    def map(self, f: Callable[[nn.Module], nn.Module]) -> TrainModules:
        """`f` applied to each module present; an absent one stays None."""
        return TrainModules(f(self.lm), None if self.value_head is None else f(self.value_head),
                            None if self.critic is None else f(self.critic))


def _shard(module: nn.Module) -> nn.Module:
    from torch.distributed.fsdp import fully_shard

    block_names = set(getattr(module, "_no_split_modules", None) or [])
    for sub in module.modules():
        if sub is not module and type(sub).__name__ in block_names:
            fully_shard(sub)
    fully_shard(module)
    return module


class DataParallel:
    """Wraps the plain modules (`wrap`), keeps them in step with the trained ones (`after_update`), and
    reads and writes full state dicts for checkpoints. For one process every method is the identity."""

    def __init__(self, ranks: Ranks, strategy: Strategy, device: torch.device) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"run.parallel must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
        self.ranks, self.strategy, self.device = ranks, strategy, device
        self.plain: TrainModules | None = None
        self.trained: TrainModules | None = None

    @property
    def sharded(self) -> bool:
        return self.ranks.active and self.strategy == "fsdp2"

    def wrap(self, plain: TrainModules) -> TrainModules:
        """The modules to train: DDP wrappers of `plain`, sharded copies of it (fsdp2), or `plain` itself."""
        self.plain = plain
        if not self.ranks.active:
            self.trained = plain
        elif self.strategy == "ddp":
            from torch.nn.parallel import DistributedDataParallel as DDP

            ids = [self.device.index] if self.device.type == "cuda" else None
            self.trained = plain.map(lambda m: DDP(m, device_ids=ids))
        else:
            self.trained = plain.map(lambda m: _shard(copy.deepcopy(m)))
        return self.trained

    def _plain(self) -> TrainModules:
        if self.plain is None:
            raise RuntimeError("DataParallel.wrap must run before its modules are read")
        return self.plain

    def _trained(self) -> TrainModules:
        if self.trained is None:
            raise RuntimeError("DataParallel.wrap must run before its modules are read")
        return self.trained

    def _container(self) -> nn.ModuleDict:
        return nn.ModuleDict(self._trained().named())

    def model_state(self, on_every_rank: bool = False) -> dict[str, dict[str, torch.Tensor]]:
        """{"lm": ..., "value_head": ..., "critic": ...} full state dicts. fsdp2: a collective whose result
        is on CPU and on rank 0 only (empty elsewhere), or on every rank's device with `on_every_rank`."""
        if self.sharded:
            from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

            options = StateDictOptions(full_state_dict=True, cpu_offload=not on_every_rank)
            full = get_model_state_dict(self._container(), options=options)
            return {name: {k[len(name) + 1:]: _tensor(k, v) for k, v in full.items() if k.startswith(name + ".")}
                    for name in self._trained().named()}
        return {name: m.state_dict() for name, m in self._plain().named().items()}

    def after_update(self) -> None:
        """fsdp2: gather the trained weights into the plain modules (every rank calls it)."""
        if self.sharded:
            for name, state in self.model_state(on_every_rank=True).items():
                getattr(self._plain(), name).load_state_dict(state)

    def load_model_state(self, state: dict[str, dict[str, torch.Tensor] | None]) -> None:
        """Load full state dicts (a checkpoint's) into the plain modules and, for fsdp2, the shards."""
        present: dict[str, dict[str, torch.Tensor]] = {}
        for name, module in self._plain().named().items():
            module_state = state.get(name)
            if module_state is None:
                raise ValueError(f"the model state has no {name!r} weights, which this run trains")
            module.load_state_dict(module_state)
            present[name] = module_state
        if self.sharded:
            from torch.distributed.checkpoint.state_dict import StateDictOptions, set_model_state_dict

            full: dict[str, ValueType] = {f"{name}.{k}": v for name in self._trained().named()
                                          for k, v in present[name].items()}
            set_model_state_dict(self._container(), full, options=StateDictOptions(full_state_dict=True))

    def _fqns(self) -> list[str]:
        return [f"{name}.{k}" for name, m in self._trained().named().items() for k, _ in m.named_parameters()]

    def optimizer_state(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """The optimizer's state in the one-process layout (parameters numbered in order); fsdp2 gathers it
        to rank 0's CPU (other ranks get an empty state)."""
        if not self.sharded:
            return optimizer.state_dict()
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        full = get_optimizer_state_dict(self._container(), optimizer,
                                        options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        index = {fqn: i for i, fqn in enumerate(self._fqns())}
        if not full.get("param_groups"):
            return {}
        states, groups = full["state"], full["param_groups"]
        if not isinstance(states, dict) or not isinstance(groups, list):
            raise TypeError("a full optimizer state dict has a 'state' dict and a 'param_groups' list")
        return {"state": {index[k]: v for k, v in states.items()},
                "param_groups": [{**g, "params": [index[k] for k in _fqn_list(g["params"])]} for g in groups]}

    def load_optimizer_state(self, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        if not self.sharded:
            optimizer.load_state_dict(state)
            return
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        fqns = self._fqns()
        full: OptimizerStateType = {
            "state": {fqns[i]: v for i, v in state["state"].items()},
            "param_groups": [{**g, "params": [fqns[i] for i in g["params"]]} for g in state["param_groups"]]}
        set_optimizer_state_dict(self._container(), optimizer, full, options=StateDictOptions(full_state_dict=True))


def _tensor(key: str, value: ValueType) -> torch.Tensor:
    """A full model state dict holds tensors only; anything else is a broken state dict."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"model state entry {key!r} is a {type(value).__name__}, not a tensor")
    return value


def _fqn_list(params: ValueType) -> list[str]:
    """A full optimizer state's parameter group lists its parameters by fully qualified name."""
    if not isinstance(params, list) or not all(isinstance(p, str) for p in params):
        raise TypeError(f"a full optimizer state's 'params' lists parameter names, got {params!r}")
    return [str(p) for p in params]
