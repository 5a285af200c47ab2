"""LoRA adapters on a policy through `peft` (`model.lora_rank` > 0; LoRA: Hu et al., arXiv 2106.09685).

`add_lora(lm, LoraSettings(rank, alpha, dropout, targets), seed)` injects peft's LoRA layers into the
linear modules of `lm` whose names end in one of `targets`, in place (`peft.inject_adapter_in_model`):
the model keeps its class, forward signature and `generate`, so the rollout engine samples from the
adapted weights with no copy, and the chunked log-prob path still applies. peft freezes every base
weight; only the adapters' A (r x in) and B (out x r) train. An adapted linear computes
W x + (alpha / r) B A dropout(x), with B = 0 at injection, so the adapted model starts equal to `lm`;
A is drawn from `seed` (the global RNG is left untouched).

`merged_copy(lm)` is a deep copy with each adapter merged into its base weight (peft's `merge`,
W + (alpha / r) B A) and the LoRA wrappers taken out: a plain transformers model that saves and loads
like any other. `Policy.save` writes that, so a warm start SFT'd with LoRA is loaded by a later run
(`run.init_from`, or its own RL) as a plain model, and RL puts fresh adapters on top of it.
Left out: adapters on the embeddings, quantised base weights (QLoRA), and several adapters at once.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass

import torch
from torch import nn

from agentbench_af.rollout.sampler_copy import AdapterMerge, register_adapter_merge

ADAPTER = "default"
#: the linear modules of a Llama-style decoder layer (attention and MLP projections)
LLAMA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class LoraSettings:
    """What `add_lora` injects: rank r, scale numerator alpha (the update is scaled by alpha / r), dropout
    on the adapter's input, and the names (last component) of the linear modules that get adapters."""

    rank: int
    alpha: int
    dropout: float = 0.0
    targets: tuple[str, ...] = LLAMA_TARGETS


def has_lora(lm: nn.Module) -> bool:
    """Whether some module of `lm` is a peft adapter layer (never, while peft has not been imported: so a
    run without LoRA neither needs nor loads it)."""
    if "peft" not in sys.modules:
        return False
    from peft.tuners.tuners_utils import BaseTunerLayer

    return any(isinstance(m, BaseTunerLayer) for m in lm.modules())


def _linear_names(lm: nn.Module) -> list[str]:
    """The last name components of `lm`'s linear modules, sorted."""
    return sorted({name.rpartition(".")[2] for name, m in lm.named_modules() if isinstance(m, nn.Linear) and name})


def add_lora(lm: nn.Module, settings: LoraSettings, seed: int = 0) -> nn.Module:
    """Inject LoRA adapters into `lm` in place and return it (see the module docstring). `ValueError` when a
    target names no linear module of `lm` or `lm` already has adapters."""
    try:
        from peft import LoraConfig, inject_adapter_in_model
    except ImportError as exc:
        raise ImportError('model.lora_rank > 0 needs peft: python -m pip install -e ".[lora]" (or set '
                          'model.lora_rank=0)') from exc
    if has_lora(lm):
        raise ValueError(f"{type(lm).__name__} already has LoRA adapters; add_lora runs once per model")
    present = _linear_names(lm)
    missing = [t for t in settings.targets if t not in present]
    if missing:
        raise ValueError(f"model.lora_targets {missing} name no linear module of {type(lm).__name__} (its linear "
                         f"modules: {present}); set model.lora_targets to some of those, or model.lora_rank=0 "
                         f"for full fine-tuning")
    config = LoraConfig(r=settings.rank, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
                        target_modules=list(settings.targets), bias="none")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        inject_adapter_in_model(config, lm, adapter_name=ADAPTER)
    return lm


def merge_lora(lm: nn.Module) -> nn.Module:
    """Merge every adapter of `lm` into its base weight and put the base linear back in its place (in
    place; returns `lm`, now a plain model). peft's `merge` does the arithmetic."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    adapted = [name for name, m in lm.named_modules() if isinstance(m, BaseTunerLayer)]
    for name in adapted:
        parent_name, _, child = name.rpartition(".")
        parent = lm.get_submodule(parent_name)
        layer = getattr(parent, child)
        layer.merge(adapter_names=[ADAPTER])
        setattr(parent, child, layer.get_base_layer())
    if hasattr(lm, "peft_config"):
        del lm.peft_config
    return lm


def merged_copy(lm: nn.Module) -> nn.Module:
    """A plain copy of `lm` with its adapters merged (`lm` itself unchanged); `lm` when it has none."""
    return merge_lora(copy.deepcopy(lm)) if has_lora(lm) else lm


@torch.no_grad()
def merged_parameter(lm: nn.Module, name: str) -> torch.Tensor:
    """The parameter `name` of `merged_copy(lm)`, read from `lm` without copying it: an adapted linear's
    weight is its base weight plus its adapter's delta (peft's `get_delta_weight`: (alpha / r) B A, fp32)."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    owner, _, leaf = name.rpartition(".")
    module = lm.get_submodule(owner)
    if not isinstance(module, BaseTunerLayer):
        return lm.get_parameter(name)
    base = getattr(module.get_base_layer(), leaf)
    delta = module.get_delta_weight(ADAPTER) if leaf == "weight" else None  # type: ignore[operator]
    return base if delta is None else base + delta


def adapter_parameter_count(lm: nn.Module) -> int:
    """How many parameters of `lm` belong to its LoRA adapters (0 without any)."""
    if not has_lora(lm):
        return 0
    from peft import get_peft_model_state_dict

    return sum(t.numel() for t in get_peft_model_state_dict(lm, adapter_name=ADAPTER).values())


def trainable_parameters(lm: nn.Module) -> list[nn.Parameter]:
    """The parameters of `lm` the optimizer gets: every one that requires a gradient (all of a fully
    fine-tuned model; the adapters of a LoRA one), in `parameters()` order."""
    return [p for p in lm.parameters() if p.requires_grad]


# sampling copies (`rollout.sampler_copy`) merge the adapters before they cast the weights to bf16
register_adapter_merge(AdapterMerge(has_lora, merged_copy, merged_parameter))
