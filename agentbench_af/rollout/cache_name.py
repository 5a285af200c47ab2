"""The name of a causal LM's key/value cache, in whichever transformers is installed.

transformers 5.2x renamed the cache argument of `forward`/`generate` and the output field from
`past_key_values` to `cache`; the old argument still works there but warns on every call, and it goes in
5.40. Older versions (this project supports transformers >= 4.46) know only `past_key_values`. The
choice is made from the model class's `forward` signature, so a wrapped module (DDP, `torch.compile`)
whose `forward` takes `*args, **kwargs` falls back to the old name, which every version still accepts.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

NEW_NAME = "cache"
OLD_NAME = "past_key_values"


@functools.cache
def _cache_argument(model_class: type) -> str:
    forward = getattr(model_class, "forward", None)
    try:
        parameters = inspect.signature(forward).parameters if forward is not None else {}
    except (TypeError, ValueError):  # a builtin or C-level forward has no inspectable signature
        parameters = {}
    return NEW_NAME if NEW_NAME in parameters else OLD_NAME


def cache_argument(model: Any) -> str:
    """`"cache"` when `model.forward` takes that argument, else `"past_key_values"`."""
    return _cache_argument(type(model))  # type: ignore[arg-type]  # a class is hashable; mypy misses it for type[Any]


def cache_kwargs(model: Any, cache: Any) -> dict[str, Any]:
    """`{name: cache}` for `model(...)` or `model.generate(...)`, under the name the model takes."""
    return {cache_argument(model): cache}


def returned_cache(output: Any) -> Any:
    """The key/value cache a forward or generate output carries (None when it carries none)."""
    fields = getattr(output, "__dataclass_fields__", {})
    if NEW_NAME in fields:
        return getattr(output, NEW_NAME)
    return getattr(output, OLD_NAME, None)
