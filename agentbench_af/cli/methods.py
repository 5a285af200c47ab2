"""`agentbench-af methods`: every registered estimator, token weighting and policy loss, with its source,
and the update schedules of `rl.token_passes`.

A run picks an estimator and a weighting in `method` (`grpo+actfocus`: the estimator's method name, then
the weighting) and a policy loss in `loss.policy` (`gspo`). Plugins' methods are listed too (their
entry points load first); a plugin that gives no source shows the module it was defined in.
Left out: the leaderboard of methods (it needs a training recipe per row).
"""

from __future__ import annotations

import json

import typer
from tabulate import tabulate

from agentbench_af.cli.app import app


def _needs(spec, cfg) -> str:
    from agentbench_af.credit.registry import resolve_needs

    needs = resolve_needs(spec.needs, cfg)
    names = [n for n in ("critic", "reference", "step_groups", "groups") if getattr(needs, n)]
    return ", ".join(names) + (" (by config)" if callable(spec.needs) else "")


def method_rows() -> dict[str, list[dict[str, str]]]:
    """The three registries as rows: estimators, weightings, policy losses."""
    from agentbench_af.credit import ADVANTAGE_ESTIMATORS, POLICY_LOSSES, TOKEN_WEIGHTINGS, CreditConfig
    from agentbench_af.plugins import CREDIT_GROUP, load_entry_points
    from agentbench_af.train.config import TOKEN_PASSES

    load_entry_points(CREDIT_GROUP)
    cfg = CreditConfig()

    def source(spec) -> str:
        return spec.source or f"plugin {spec.fn.__module__}"

    return {
        "estimators": [{"name": s.name, "method": s.method, "needs": _needs(s, cfg), "source": source(s)}
                       for s in ADVANTAGE_ESTIMATORS.values()],
        "weightings": [{"name": s.name, "needs": _needs(s, cfg), "source": source(s)} for s in TOKEN_WEIGHTINGS.values()],
        "policy_losses": [{"name": s.name, "agg": s.agg or "any", "needs": "entropy" if s.needs_entropy else "",
                           "source": source(s)} for s in POLICY_LOSSES.values()],
        "token_passes": [{"name": name, "source": text} for name, text in TOKEN_PASSES.items()],
    }


@app.command("methods")
def methods_command(
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """List the registered advantage estimators, token weightings and policy losses with their sources."""
    rows = method_rows()
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    typer.echo("Advantage estimators (method = <method>[+<weighting>]):")
    typer.echo(tabulate([(r["method"], r["name"], r["needs"], r["source"]) for r in rows["estimators"]],
                        headers=["method", "estimator", "needs", "source"]))
    typer.echo("\nToken weightings (method = <base>+<weighting>):")
    typer.echo(tabulate([(r["name"], r["needs"], r["source"]) for r in rows["weightings"]],
                        headers=["weighting", "needs", "source"]))
    typer.echo("\nPolicy losses (loss.policy = <name>):")
    typer.echo(tabulate([(r["name"], r["agg"], r["needs"], r["source"]) for r in rows["policy_losses"]],
                        headers=["policy loss", "loss.agg", "needs", "source"]))
    typer.echo("\nUpdate schedules (rl.token_passes = <name>):")
    typer.echo(tabulate([(r["name"], r["source"]) for r in rows["token_passes"]], headers=["token passes", "source"]))
    typer.echo("\nRecipes: settings files merged on top of a config (`train CONFIG.yaml baselines/recipes/dapo.yaml`).")
