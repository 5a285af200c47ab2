"""A self-contained HTML page of sampled trajectories, every generated token shaded by its |c|.

    abs_c = token_contributions(batch, "old").abs()                      # (B, T)
    texts = [tok.convert_ids_to_tokens(row) for row in batch.input_ids.tolist()]   # or per-token decode
    write_html("tokens.html", batch, abs_c, texts, source="old")
    html_text = render_html(batch, abs_c, texts)                         # the page as a string

`token_texts` is either one list of strings per sample row (at least as long as the row's real tokens)
or a callable mapping a row's real token ids (list[int]) to their strings; nothing here depends on a
tokenizer type. One section per group (rollouts sorted by reward, best first), one block per turn;
generated tokens get a red background whose opacity is |c| / vmax (vmax: the 99th percentile of the
batch's nonzero |c| unless given) and a border in their role's colour; prompt tokens are dimmed and long
prompt stretches are folded into a <details> element. A signed c tensor is accepted: the shade uses |c|
and the tooltip shows the sign. Left out: JavaScript, external assets, and choosing which groups to show
beyond `groups` / `max_groups` (that is the caller's sampling).
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from agentbench_af.formats.roles import Role
from agentbench_af.io import atomic_write_text
from agentbench_af.rollout.batch import RolloutBatch

TokenTexts = Sequence[Sequence[str]] | Callable[[list[int]], Sequence[str]]
ROLE_STYLE = {  # role value -> (css class, border colour, label); colours match plots.ROLE_COLOURS
    int(Role.REASONING): ("r", "#1f77b4", "reasoning"),
    int(Role.ACTION): ("a", "#2ca02c", "action"),
    int(Role.FORMAT): ("f", "#9467bd", "format"),
}
SHADE_RGB = (214, 39, 40)
MAX_ALPHA = 0.85

CSS = """
body { font-family: system-ui, sans-serif; margin: 16px 24px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 6px; } h2 { font-size: 16px; margin: 0 0 4px; }
.meta { color: #555; font-size: 13px; margin-bottom: 6px; }
.legend { display: flex; flex-wrap: wrap; gap: 18px; align-items: center; margin: 10px 0 14px;
  font-size: 13px; position: sticky; top: 0; background: #fff; padding: 6px 0; border-bottom: 1px solid #ddd; }
.bar { width: 180px; height: 12px; border: 1px solid #888;
  background: linear-gradient(to right, rgba(SHADE,0), rgba(SHADE,MAXA)); }
.scale { display: flex; justify-content: space-between; width: 182px; font-size: 11px; color: #555; }
section.group { border: 1px solid #ccc; border-radius: 6px; padding: 10px 12px; margin: 14px 0; }
section.skipped { background: #fafafa; }
.traj { border-top: 1px dashed #bbb; padding: 8px 0 4px; }
.traj-head { font-size: 13px; margin-bottom: 4px; } .traj-head b { font-size: 14px; }
.pos { color: #1a7f37; } .neg { color: #b42318; }
.turn { display: flex; gap: 8px; border-left: 3px solid #e4e4e4; margin: 4px 0; padding: 2px 0 2px 6px; }
.turn-label { flex: 0 0 48px; font-size: 11px; color: #777; padding-top: 3px; }
.tokens { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; line-height: 1.8;
  white-space: pre-wrap; word-break: break-word; flex: 1; }
.tok { border: 1.5px solid transparent; border-radius: 3px; padding: 0 1px; }
.tok.r { border-color: #1f77b4; } .tok.a { border-color: #2ca02c; } .tok.f { border-color: #9467bd; }
.tok.empty { display: inline-block; min-width: 5px; height: 1.1em; vertical-align: middle; }
.p { color: #9a9a9a; }
details.fold { color: #9a9a9a; font-size: 11.5px; } details.fold summary { cursor: pointer; }
.swatch { display: inline-block; width: 22px; height: 13px; border: 2px solid; border-radius: 3px;
  vertical-align: middle; margin-right: 4px; }
.sample-label { font-size: 11px; color: #777; margin-top: 2px; }
"""


def _visible(text: str) -> str:
    """Escape for HTML; show newlines and other control characters as visible marks."""
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\u21b5\n")
        elif ch == "\t":
            out.append("\u2192\t")
        elif unicodedata.category(ch) == "Cc":
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return html.escape("".join(out), quote=False)


def _row_texts(token_texts: TokenTexts, batch: RolloutBatch, b: int, length: int) -> list[str]:
    if callable(token_texts):
        texts = list(token_texts(batch.input_ids[b, :length].tolist()))
    else:
        texts = list(token_texts[b])
    if len(texts) < length:
        raise ValueError(f"token_texts for sample {b} has {len(texts)} entries; the sample has {length} tokens")
    return [t if isinstance(t, str) else str(t) for t in texts[:length]]


def _turn_of_positions(gen: list[bool], turns: list[int]) -> list[int]:
    """Each position's turn: that of the next generated token (prompt text before a response belongs to
    its turn); positions after the last generated token take the last turn; -1 if nothing was generated."""
    out, nxt = [0] * len(gen), -1
    for pos in range(len(gen) - 1, -1, -1):
        if gen[pos]:
            nxt = turns[pos]
        out[pos] = nxt
    last = next((turns[p] for p in range(len(gen) - 1, -1, -1) if gen[p]), -1)
    return [t if t >= 0 else last for t in out]


def _prompt_run(texts: list[str], fold: int) -> str:
    """Prompt tokens, dimmed; a run longer than 1.5 * fold shows its last `fold` tokens, the rest folded."""
    if len(texts) <= fold * 1.5:
        return f'<span class="p">{_visible("".join(texts))}</span>'
    body = f'<span class="p">{_visible("".join(texts[-fold:]))}</span>'
    hidden = _visible("".join(texts[:-fold]))
    return (f'<details class="fold"><summary>{len(texts) - fold} earlier prompt tokens</summary>'
            f'<span class="p">{hidden}</span></details>{body}')


def _token(text: str, role: int, turn: int, c: float, vmax: float) -> str:
    cls, _, label = ROLE_STYLE.get(role, ("f", "#9467bd", f"role {role}"))
    alpha = MAX_ALPHA * min(abs(c) / vmax, 1.0) if vmax > 0 else 0.0
    r, g, b = SHADE_RGB
    tip = html.escape(f"{label} · turn {turn} · |c| = {abs(c):.4g} · c = {c:+.4g} · {text!r}", quote=True)
    empty = " empty" if text == "" else ""
    return (f'<span class="tok {cls}{empty}" style="background:rgba({r},{g},{b},{alpha:.3f})" '
            f'title="{tip}">{_visible(text)}</span>')


def _sample_html(batch: RolloutBatch, c: torch.Tensor, b: int, texts: list[str], vmax: float, fold: int) -> str:
    length = len(texts)
    gen = batch.response_mask[b, :length].tolist()
    roles = batch.roles[b, :length].tolist()
    turns = batch.turn_index[b, :length].tolist()
    cs = c[b, :length].tolist()
    if not any(gen):
        return f'<div class="turn"><div class="turn-label">no gen.</div><div class="tokens">{_prompt_run(texts, fold)}</div></div>'
    turn_of = _turn_of_positions(gen, turns)
    blocks, pos = [], 0
    while pos < length:
        turn, parts, prompt = turn_of[pos], [], list[str]()
        while pos < length and turn_of[pos] == turn:
            if gen[pos]:
                if prompt:
                    parts.append(_prompt_run(prompt, fold))
                    prompt = []
                parts.append(_token(texts[pos], roles[pos], turns[pos], cs[pos], vmax))
            else:
                prompt.append(texts[pos])
            pos += 1
        if prompt:
            parts.append(_prompt_run(prompt, fold))
        blocks.append(f'<div class="turn"><div class="turn-label">turn {turn}</div>'
                      f'<div class="tokens">{"".join(parts)}</div></div>')
    return "".join(blocks)


def _traj_html(batch: RolloutBatch, c: torch.Tensor, t: int, rows: list[int], mean_r: float,
               token_texts: TokenTexts, vmax: float, fold: int) -> str:
    """One trajectory: a header (reward, its deviation from the group mean, success, Σ|c|), then its
    samples in order."""
    order = batch.sample_order.tolist()
    rows = sorted(rows, key=lambda b: order[b])
    reward, success = float(batch.traj_return[t]), bool(batch.traj_success[t])
    n_gen = int(batch.response_mask[rows].sum()) if rows else 0
    total = float(c[rows].abs().sum()) if rows else 0.0
    adv = reward - mean_r
    head = (f'<div class="traj-head"><b>rollout {t}</b> · reward <b>{reward:.3g}</b> '
            f'(<span class="{"pos" if adv >= 0 else "neg"}">R − mean {adv:+.3g}</span>) · '
            f'{"success" if success else "no success"} · {n_gen} generated tokens · Σ|c| {total:.3g}</div>')
    body = []
    for b in rows:
        if len(rows) > 1:
            body.append(f'<div class="sample-label">sample {order[b]} (row {b})</div>')
        texts = _row_texts(token_texts, batch, b, int(batch.attention_mask[b].sum()))
        body.append(_sample_html(batch, c, b, texts, vmax, fold))
    return f'<div class="traj">{head}{"".join(body) or "<i>no samples</i>"}</div>'


def _legend(vmax: float, source: str) -> str:
    swatches = "".join(f'<span><span class="swatch" style="border-color:{col}"></span>{label}</span>'
                       for _, col, label in ROLE_STYLE.values())
    return (f'<div class="legend"><span><b>|c|</b> (energy <code>{html.escape(source)}</code>)</span>'
            f'<span><div class="bar"></div><div class="scale"><span>0</span><span>{vmax / 2:.3g}</span>'
            f'<span>&ge;&nbsp;{vmax:.3g}</span></div></span>'
            f'<span><b>role</b> (border):</span>{swatches}'
            f'<span><span class="p">dimmed text</span>: prompt / observation</span></div>')


def render_html(batch: RolloutBatch, abs_c: torch.Tensor, token_texts: TokenTexts, *, source: str = "old",
                title: str = "Action Bottleneck: token contributions", groups: Sequence[int] | None = None,
                max_groups: int | None = 8, max_rollouts: int | None = None, prompt_fold: int = 64,
                vmax: float | None = None) -> str:
    """The page as a string. `groups`: group ids to show, in that order (default: `max_groups` groups,
    those with reward variance first, by id). `vmax`: the |c| of a full shade (default: the 99th
    percentile of the nonzero |c| of the whole batch)."""
    B, T = batch.input_ids.shape
    if tuple(abs_c.shape) != (B, T):
        raise ValueError(f"abs_c has shape {tuple(abs_c.shape)}, expected {(B, T)} like batch.input_ids")
    c = abs_c.detach().double().cpu()  # (B, T)
    if not torch.isfinite(c).all():
        raise ValueError("abs_c holds a non-finite value")
    if not callable(token_texts) and len(token_texts) != B:
        raise ValueError(f"token_texts has {len(token_texts)} rows; the batch has {B} samples")
    traj_group, reward = batch.traj_group.tolist(), batch.traj_return.double().tolist()
    rewards_of: dict[int, list[float]] = {}
    for t, g in enumerate(traj_group):
        rewards_of.setdefault(g, []).append(reward[t])
    varies = {g: max(rs) != min(rs) for g, rs in rewards_of.items()}
    if groups is not None:
        missing = sorted(set(groups) - set(rewards_of))
        if missing:
            raise ValueError(f"groups {missing} are not in the batch (groups: {sorted(rewards_of)})")
        group_ids = list(dict.fromkeys(groups))
    else:  # groups with reward variance (the ones with a signal) first, each part by id
        group_ids = sorted(rewards_of, key=lambda g: (not varies[g], g))[:max_groups]
    rows_of: dict[int, list[int]] = {}
    for b, t in enumerate(batch.sample_traj.tolist()):
        rows_of.setdefault(t, []).append(b)
    gen_mask = batch.response_mask.cpu()
    if vmax is None:  # one scale for the whole batch, so pages of the same batch compare
        vals = c.abs()[gen_mask]
        vals = vals[vals > 0]
        vmax = float(torch.quantile(vals, 0.99)) if vals.numel() else 0.0
    sections = []
    for g in group_ids:
        trajs = [t for t in range(len(traj_group)) if traj_group[t] == g]
        rs = rewards_of[g]
        mean_r = sum(rs) / len(rs)
        std_r = (sum((r - mean_r) ** 2 for r in rs) / len(rs)) ** 0.5
        skipped = not varies[g]
        trajs.sort(key=lambda t: -reward[t])
        if max_rollouts is not None:
            trajs = trajs[:max_rollouts]
        parts = [_traj_html(batch, c, t, rows_of.get(t, []), mean_r, token_texts, vmax, prompt_fold)
                 for t in trajs]
        note = " · <b>zero reward variance: skipped, all c = 0</b>" if skipped else ""
        sections.append(
            f'<section class="group{" skipped" if skipped else ""}"><h2>Group {g}</h2>'
            f'<div class="meta">{len(rs)} rollouts · mean reward {mean_r:.3g} · reward std {std_r:.3g}{note}</div>'
            f'{"".join(parts)}</section>')
    css = CSS.replace("SHADE", ",".join(map(str, SHADE_RGB))).replace("MAXA", str(MAX_ALPHA))
    n_groups = len(set(traj_group))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'<style>{css}</style></head><body><h1>{html.escape(title)}</h1>'
            f'<div class="meta">{len(group_ids)} of {n_groups} groups shown · c = (e − mean_e)(R − mean_R) per '
            f'group · shade: |c| / {vmax:.3g}{" (every c is 0)" if vmax == 0 else ""}</div>'
            f'{_legend(vmax, source)}{"".join(sections)}</body></html>\n')


def write_html(path: str | Path, batch: RolloutBatch, abs_c: torch.Tensor, token_texts: TokenTexts,
               **kwargs) -> Path:
    """`render_html` written atomically to `path`; keyword arguments as render_html."""
    return atomic_write_text(path, render_html(batch, abs_c, token_texts, **kwargs))
