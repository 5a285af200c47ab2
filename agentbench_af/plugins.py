"""Plugins: code from outside the package that registers environments and credit methods.

Two ways in, as the Python ecosystem does it:
- entry points of installed packages, in the groups `agentbench_af.environments` and
  `agentbench_af.credit`. Each points at a module (importing it registers) or at a function with no
  arguments (calling it registers). A group is loaded once per process, the first time its registry is
  read; a plugin that fails to load is reported as one line on the `agentbench_af` logger (and kept in
  `FAILED`), and the others still load.
- `import_modules(names)`: modules named by `--import` or a config's `imports:` key, imported before
  the config is built (so `method` may name what they register); a failure is a `PluginError`.
Left out: plugin versioning and ordering between plugins (they load in the order Python lists them).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable
from importlib.metadata import entry_points

ENVIRONMENTS_GROUP = "agentbench_af.environments"
CREDIT_GROUP = "agentbench_af.credit"

logger = logging.getLogger("agentbench_af")

#: "entry point 'name' (group): error" for each plugin that failed to load in this process
FAILED: list[str] = []
_LOADED: set[str] = set()
_LOADING: set[str] = set()


class PluginError(ImportError):
    """A module named by `--import` / `imports:` could not be imported; the message is one line."""


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def load_entry_points(group: str) -> None:
    """Load every entry point of `group` once per process; failures are logged, never raised."""
    if group in _LOADED or group in _LOADING:
        return
    _LOADING.add(group)
    try:
        for ep in entry_points(group=group):
            try:
                target = ep.load()
                if callable(target):
                    target()
            except Exception as exc:  # noqa: BLE001 - one broken plugin must not stop the others
                line = f"plugin {ep.name!r} ({group} -> {ep.value}) failed to load: {_one_line(exc)}"
                FAILED.append(line)
                logger.warning(line)
    finally:
        _LOADING.discard(group)
        _LOADED.add(group)


def failed_hint() -> str:
    """`"; plugins that failed to load: ..."` when some did, else ""; appended to unknown-name errors."""
    return f"; plugins that failed to load: {' | '.join(FAILED)}" if FAILED else ""


def import_modules(names: Iterable[str]) -> None:
    """Import each module (registering what it defines); raise `PluginError` naming the first failure."""
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise PluginError(f"imports: expected module names, got {name!r}")
        try:
            importlib.import_module(name.strip())
        except Exception as exc:  # noqa: BLE001 - any failure becomes one line naming the module
            raise PluginError(f"cannot import plugin module {name!r}: {_one_line(exc)}") from exc
