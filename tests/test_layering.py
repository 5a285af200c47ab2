"""The packages form layers along the data flow: a module imports only its own layer and the ones below,
and no module imports itself back through others.

Every import statement of every module (top level, inside functions, under TYPE_CHECKING) is read with
`ast`, so a lazy import counts as much as an eager one. Between packages an import may not point to a
higher layer, and the package graph may have no cycle (two packages of one layer may not import each
other). Between modules (inside a folder as much as across folders) the import graph may have no cycle
either: `from pkg import sub` is an edge to the module `pkg.sub`, `from pkg import name` one to `pkg`'s
`__init__`, and the parent packages an import loads on the way are not counted.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: lowest first. formats (the response grammar) -> env contract -> environments -> rollout -> (models score
#: it) -> credit -> update (train) -> records -> tables. `agentbench_af` itself (the package __init__)
#: re-exports `api` and counts as `api`.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("io", "config", "plugins"),  # atomic files, typed YAML configs, plugin loading: no project imports
    ("formats",),  # the response grammar (tags, spans, parse_response), prompts, chat templates, token roles
    ("api",),  # the environment contract (it parses responses with `formats.parse`), registry, game cache
    ("environments", "baselines"),  # environments implement `api`; baselines are recipes
    ("rollout",),  # generation types and engines, collection, `RolloutBatch`
    ("models",),  # tiny models, tokenizers, the policy bundle and its scoring forward pass
    ("credit",),  # advantages and token weights over a `RolloutBatch`
    ("evaluate",),  # success rate of a policy on evaluation seeds
    ("diagnose",),  # the Action Bottleneck statistics and report of a batch
    ("results",),  # run records, saved rollouts, the record's diagnostic snapshot, tables, plots
    ("train",),  # warm/ (SFT warm start), update/, bookkeeping/ (run folder, reading runs), distributed/, loop
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


def import_statements(path: Path, module: str) -> list[tuple[int, str, tuple[str, ...]]]:
    """(line, dotted module, names taken from it) of every import in `path`, relative imports resolved;
    `import a.b` gives (line, "a.b", ())."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    out: list[tuple[int, str, tuple[str, ...]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name, ()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            out.append((node.lineno, base, tuple(a.name for a in node.names)))
    return out


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every project module `path` imports (relative imports resolved)."""
    out = []
    for line, base, names in import_statements(path, module):
        # `from pkg import sub` imports pkg.sub when sub is a module; pkg itself either way
        out += [(line, base)] + [(line, f"{base}.{name}") for name in names]
    return [(line, name) for line, name in out if name.split(".")[0] == "agentbench_af"]


def _nearest_module(name: str, modules: dict[str, Path]) -> str:
    """`pkg.mod.Class` -> `pkg.mod`: the longest prefix of `name` that is a project module."""
    while name not in modules and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}"


def module_edges(modules: dict[str, Path] | None = None) -> dict[tuple[str, str], list[str]]:
    """(importing module, imported module) -> 'file:line' of each import between two project modules.

    `from pkg import sub` points to the module `pkg.sub` only, `from pkg import name` (not a module) to
    `pkg`; the parent packages an import loads on the way are not edges, nor a module importing itself.
    """
    modules = _modules() if modules is None else modules
    edges: dict[tuple[str, str], list[str]] = {}
    for module, path in modules.items():
        for line, base, names in import_statements(path, module):
            if base.split(".")[0] != "agentbench_af":
                continue
            targets = {f"{base}.{n}" if f"{base}.{n}" in modules else _nearest_module(base, modules)
                       for n in names} or {_nearest_module(base, modules)}
            for target in targets - {module}:
                if target in modules:
                    edges.setdefault((module, target), []).append(_where(path, line))
    return edges


def cycle_path(edges, component: list[str]) -> list[str]:
    """One closed path through a strongly connected component: [a, b, ..., a] (shortest back to a)."""
    start, inside = component[0], set(component)
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        if a in inside and b in inside:
            graph.setdefault(a, []).append(b)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:  # breadth first from `start` until an edge closes the loop
        nxt = []
        for v in frontier:
            for w in graph.get(v, []):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if w not in came_from:
                    came_from[w] = v
                    nxt.append(w)
        frontier = nxt
    raise ValueError(f"{component} is not a cycle of the graph")


def package_edges() -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> 'file:line' of each import between two packages."""
    modules = _modules()
    edges: dict[tuple[str, str], list[str]] = {}
    for module, path in modules.items():
        src = package_of(module)
        for line, name in imported_modules(path, module):
            dst = package_of(_nearest_module(name, modules))  # `from pkg.mod import Class`: the module is pkg.mod
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


def test_no_import_cycle_between_modules():
    """Inside a folder too: a cycle is printed as `a -> b -> a` with the file:line of each import."""
    edges = module_edges()
    found = []
    for component in cycles(edges):
        path = cycle_path(edges, component)
        found.append(" -> ".join(path) + "  (" + "; ".join(
            f"{a} imports {b} at {', '.join(edges[(a, b)])}" for a, b in zip(path, path[1:], strict=False)) + ")")
    assert found == [], "\n".join(found)


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


def test_the_module_graph_catches_a_cycle_inside_a_folder(tmp_path):
    files = {
        "__init__.py": "from agentbench_af.x.a import g\n",  # the package re-exports a: no edge back to it
        "a.py": "from agentbench_af.x import b\ndef g():\n    pass\n",
        "b.py": "def f():\n    from .a import g\n",  # lazy and relative: still an edge
        "c.py": "from agentbench_af.x import g\nfrom agentbench_af.x.b import f\n",  # g from the __init__
    }
    modules = {}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        modules["agentbench_af.x" + ("" if name == "__init__.py" else "." + name[:-3])] = tmp_path / name
    edges = module_edges(modules)
    assert sorted(edges) == [("agentbench_af.x", "agentbench_af.x.a"), ("agentbench_af.x.a", "agentbench_af.x.b"),
                             ("agentbench_af.x.b", "agentbench_af.x.a"), ("agentbench_af.x.c", "agentbench_af.x"),
                             ("agentbench_af.x.c", "agentbench_af.x.b")]
    (component,) = cycles(edges)
    assert cycle_path(edges, component) == ["agentbench_af.x.a", "agentbench_af.x.b", "agentbench_af.x.a"]
    assert edges[("agentbench_af.x.b", "agentbench_af.x.a")] == [f"{tmp_path / 'b.py'}:2"]
    del edges[("agentbench_af.x.b", "agentbench_af.x.a")]
    assert cycles(edges) == []
