"""The paper's picture of a self-attentive sentence embedding (Lin et al. 2017, Fig. 2 and 5): each
word with its background shaded by attention, summed over the r hops and for each hop.

`write_html` writes one self-contained page (inline CSS, no script, no network); `write_png` draws,
per sentence, the summed row and one row per hop as a heatmap over the words (matplotlib, Agg).
Shading is relative: the largest weight of a row is the darkest.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

from attnkit.families.classification.infer import ClassifyResult
from attnkit.io import atomic_write_text
from attnkit.viz.heatmap import pyplot, save_png

_STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 70em; }
.sentence { margin-bottom: 1.5em; border-bottom: 1px solid #ddd; padding-bottom: 1em; }
.words { line-height: 2em; }
.words span { padding: 0.15em 0.2em; border-radius: 0.2em; }
.label { font-weight: bold; }
.probs { color: #555; font-size: 0.9em; }
.hop { font-size: 0.85em; line-height: 1.8em; }
.hop b { display: inline-block; width: 4em; color: #777; font-weight: normal; }
"""


def hop_sums(attention: Sequence[Sequence[float]]) -> list[float]:
    """Attention of each word summed over the hops (R x n -> n)."""
    return [sum(column) for column in zip(*attention)]


def _words(tokens: Sequence[str], weights: Sequence[float]) -> str:
    """Words as spans, each shaded red in proportion to its weight over the row's largest."""
    top = max(weights) or 1.0
    return " ".join(f'<span style="background: rgba(220, 40, 40, {w / top:.3f})" title="{w:.4f}">{html.escape(t)}</span>' for t, w in zip(tokens, weights))


def render_html(results: Sequence[ClassifyResult], title: str = "attnkit explain") -> str:
    """The page for `results` (each with attention) as a string."""
    parts = [f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"]  # fmt: skip
    for r in results:
        probs = ", ".join(f"{html.escape(label)} {p:.3f}" for label, p in r.probs.items())
        parts.append(f"<div class='sentence'><div><span class='label'>{html.escape(r.label)}</span> "
                     f"<span class='probs'>({probs})</span></div>")  # fmt: skip
        parts.append(f"<p class='words'>{_words(r.tokens, hop_sums(r.attention))}</p>")
        parts.append(f"<details><summary>{len(r.attention)} hops</summary>")
        parts.extend(f"<div class='hop'><b>hop {i}</b>{_words(r.tokens, row)}</div>" for i, row in enumerate(r.attention, 1))
        parts.append("</details></div>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_html(path: str | Path, results: Sequence[ClassifyResult], title: str = "attnkit explain") -> None:
    """Write `render_html` to `path` atomically."""
    atomic_write_text(path, render_html(results, title))


def write_png(path: str | Path, results: Sequence[ClassifyResult]) -> None:
    """One panel per sentence: the hop sum (normalized to 1) and each hop, over the words (written atomically)."""
    import numpy as np

    plt = pyplot()

    heights = [1 + len(r.attention) for r in results]
    width = max(4.0, 0.45 * max(len(r.tokens) for r in results) + 1.5)
    fig, axes = plt.subplots(len(results), 1, figsize=(width, 0.28 * sum(heights) + 1.2 * len(results)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})  # fmt: skip
    for ax, r in zip(axes[:, 0], results):
        hops = np.array(r.attention)  # (R, n)
        total = hops.sum(axis=0, keepdims=True)  # (1, n)
        rows = np.concatenate([total / total.max(), hops / hops.max(axis=1, keepdims=True).clip(min=1e-12)])  # (1 + R, n)
        ax.imshow(rows, cmap="Reds", aspect="auto", vmin=0.0, vmax=1.0)
        ax.set_xticks(range(len(r.tokens)), r.tokens, rotation=60, ha="right", fontsize=8)
        ax.set_yticks(range(rows.shape[0]), ["sum"] + [f"hop {i}" for i in range(1, rows.shape[0])], fontsize=7)
        ax.axhline(0.5, color="black", linewidth=0.8)
        ax.set_title(f"{r.label} ({r.probs[r.label]:.2f})", fontsize=9, loc="left")
    fig.tight_layout()
    save_png(fig, path)
