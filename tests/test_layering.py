"""The packages form layers along the data flow: a module imports only its own layer and the ones below.

Every import statement of every module (top level, inside functions, under TYPE_CHECKING) is read with
`ast`, so a lazy import counts as much as an eager one. Within one package any import is allowed (its
modules may import each other); between packages an import may not point to a higher layer, and the
package graph may have no cycle (two packages of one layer may not import each other).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: lowest first. env -> formats -> rollout -> (models score it) -> credit -> update (train) -> records ->
#: tables. `agentbench_af` itself (the package __init__) re-exports `api` and counts as `api`.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("io", "config", "plugins"),  # atomic files, typed YAML configs, plugin loading: no project imports
    ("api",),  # the environment contract, registry, response grammar (parse), game cache
    ("environments", "baselines"),  # environments implement `api`; baselines are recipes
    ("formats",),  # prompts, chat templates, token roles
    ("rollout",),  # sampling engines, collection, `RolloutBatch`
    ("models",),  # tiny models, tokenizers, the policy bundle and its scoring forward pass
    ("credit",),  # advantages and token weights over a `RolloutBatch`
    ("evaluate",),  # success rate of a policy on evaluation seeds
    ("diagnose",),  # the Action Bottleneck statistics and report of a batch
    ("results",),  # run records, saved rollouts, the record's diagnostic snapshot, tables, plots
    ("train",),  # SFT warm start, the update, the training loop, reading run directories
    ("sweep",),  # grids of runs, backends, reproduce
    ("cli",),  # the typer commands
)
LAYER_OF = {pkg: i for i, names in enumerate(LAYERS) for pkg in names}
SOURCES = {"agentbench_af": ROOT / "agentbench_af", "agentbench_af.environments": ROOT / "environments",
           "agentbench_af.baselines": ROOT / "baselines"}


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for the package and the folders installed inside it."""
    found = {}
    for prefix, folder in SOURCES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([prefix, *parts])] = path
    return found


def package_of(module: str) -> str:
    """The layer package of a dotted module name: `agentbench_af.train.loop` -> `train`."""
    parts = module.split(".")
    if parts[0] != "agentbench_af":
        raise ValueError(f"not a project module: {module}")
    return "api" if len(parts) == 1 else parts[1]


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every project module `path` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import sub` imports pkg.sub when sub is a module; pkg itself either way
            out += [(node.lineno, base)] + [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return [(line, name) for line, name in out if name.split(".")[0] == "agentbench_af"]


def package_edges() -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> 'file:line' of each import between two packages."""
    modules = _modules()
    edges: dict[tuple[str, str], list[str]] = {}
    for module, path in modules.items():
        src = package_of(module)
        for line, name in imported_modules(path, module):
            while name not in modules and "." in name:  # `from pkg.mod import Class`: the module is pkg.mod
                name = name.rsplit(".", 1)[0]
            dst = package_of(name)
            if dst != src:
                edges.setdefault((src, dst), []).append(f"{path.relative_to(ROOT)}:{line}")
    return edges


def cycles(edges) -> list[list[str]]:
    """The strongly connected components with more than one package (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_package_has_a_layer():
    packages = {package_of(m) for m in _modules()}
    assert packages - set(LAYER_OF) == set(), "add the new package to LAYERS"


def test_no_import_points_to_a_higher_layer():
    upward = {f"{a} -> {b}": where for (a, b), where in package_edges().items() if LAYER_OF[b] > LAYER_OF[a]}
    assert upward == {}


def test_no_import_cycle_between_packages():
    assert cycles(package_edges()) == []


def test_no_environment_imports_another():
    """Each environment package stands alone on `api`: shared code goes to `api` (e.g. `api.game_cache`)."""
    crossing = []
    for module, path in _modules().items():
        parts = module.split(".")
        if parts[:2] != ["agentbench_af", "environments"] or len(parts) < 3:
            continue
        for line, name in imported_modules(path, module):
            other = name.split(".")
            if other[:2] == ["agentbench_af", "environments"] and len(other) > 2 and other[2] != parts[2]:
                crossing.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert crossing == []


def test_the_checks_catch_an_upward_import_and_a_cycle(tmp_path):
    mod = tmp_path / "m.py"
    mod.write_text("def f():\n    from agentbench_af.train.loop import train\n    from . import sibling\n")
    assert imported_modules(mod, "agentbench_af.formats.m") == [
        (2, "agentbench_af.train.loop"), (2, "agentbench_af.train.loop.train"),
        (3, "agentbench_af.formats"), (3, "agentbench_af.formats.sibling"),
    ]
    assert cycles({("a", "b"): [], ("b", "c"): [], ("c", "a"): [], ("c", "d"): []}) == [["a", "b", "c"]]
    assert cycles({("a", "b"): [], ("b", "c"): []}) == []
    with pytest.raises(ValueError):
        package_of("numpy.linalg")
