"""`attnkit attention SOURCE --long`: one long input through a Hugging Face decoder or encoder with its own kernel kept.

The model loads with the `capture.IMPLEMENTATION` attention (SDPA underneath; attnkit's blockwise
attention where logits are soft-capped); a model whose attention does not go through transformers'
attention interface (BLOOM, DeBERTa, MPNet: eager only) is refused before any work. After the
memory guard (`budget`), one forward pass (a decoder's logits for the last position only; an
encoder's body without its head, which would score every position; no key/value cache) keeps each
chosen layer's queries and keys, in memory or, when the guard says they do not fit, in files of a
temporary folder (`spill`); then each layer,
top first, is scanned block by block (`scan`) and written before the next: per-query summaries
`<name>/layer<l>` (H, N) and the grids `<name>` (layers, heads) of their means (`summaries.NAMES`),
pooled maps `pooled<s>/layer<l>` and `pooled<s>_without_sink/layer<l>` (H, t, t) (`pooling`), exact
rows `rows/layer<l>` (h, m, N) of the queries `rows` and heads `rows/heads`, and `rollout_rows`
(m, N) (`rollout`, when every layer is kept). `layers` lists the kept layers, `tokens` the input.
With new tokens asked for (decoders), greedy generation follows, by the same road: `generated/layer<l>`,
the row that chose each new token (`write_generation`). The rows default to a decoder's last token
(the one that predicts the next) and an encoder's first (its [CLS], what a classifier head reads).
"""

from __future__ import annotations

import inspect
import tempfile
from collections.abc import MutableMapping
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import torch

from attnkit.errors import AttnkitError
from attnkit.progress import bar
from attnkit.sources.hf.load import ARCH_NOUNS, HfModel, load
from attnkit.sources.hf.long import budget
from attnkit.sources.hf.long.blocks import KeptLayer
from attnkit.sources.hf.long.capture import IMPLEMENTATION, capturing, register
from attnkit.sources.hf.long.options import DEFAULT_ROW, POOLS, LongOptions, check_choice, resolve_rows
from attnkit.sources.hf.long.rollout import RolloutStep, start
from attnkit.sources.hf.long.scan import exact_rows, scan_layer
from attnkit.sources.hf.long.spill import Spilled
from attnkit.sources.hf.long.summaries import NAMES
from attnkit.sources.npz import NpzWriter, npz_writer

EAGER_ONLY = "its attention does not go through transformers' attention interface (eager only): leave out --long"
ARCHS = ("decoder", "encoder")  # what the long road reads: one text, every layer's self-attention


def open_model(source: str) -> HfModel:
    """A decoder or encoder model loaded with the long road's attention (refused if it cannot be captured)."""
    register()
    hf = load(source, attn_implementation=IMPLEMENTATION)
    if hf.arch not in ARCHS:
        raise AttnkitError(f"{source}: --long reads decoder (causal language) and encoder (BERT-like) models; this one is {ARCH_NOUNS[hf.arch]}")
    if not getattr(type(hf.model), "_supports_attention_backend", True):  # transformers' mark of the attention interface
        raise AttnkitError(f"{source}: {EAGER_ONLY}")
    return hf


def forward(hf: HfModel, ids: torch.Tensor, layers: frozenset[int] | None, queries: torch.Tensor | None,
            spill: Path | None = None) -> MutableMapping[int, KeptLayer]:  # fmt: skip
    """One forward pass of ids (1, N), keeping the chosen layers' keys and queries (in files under `spill`, when given);
    a decoder's logits for the last position only, an encoder's body alone (`base_model`: its attention is all there)."""
    model = hf.model.base_model if hf.arch == "encoder" else hf.model
    extra = {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    extra["use_cache"] = False  # the capture keeps the keys; a key/value cache would hold them again, with the values
    total = budget.shape_of(hf.model).layers
    with (
        bar(total=total, desc="long: forward", unit="layer") as progress,
        capturing(layers, queries, after=progress.update, kept=None if spill is None else Spilled(spill)) as capture,
    ):
        with torch.inference_mode():
            model(input_ids=ids, **extra)
    if capture.calls == 0:
        raise AttnkitError(f"{hf.name}: {EAGER_ONLY}")
    return capture.kept


def write_generation(writer: NpzWriter, hf: HfModel, ids: torch.Tensor, layers: frozenset[int] | None, new_tokens: int) -> int:
    """Generate up to `new_tokens` greedily and write, per kept layer, `generated/layer<l>` (H, k, N + k - 1): row t is the
    attention of position N - 1 + t, the one that chose new token t, over every position before it; and
    `generated_tokens` (k,). Returns k."""
    n = ids.size(1)
    model = hf.model
    pad = model.generation_config.pad_token_id
    pad = model.generation_config.eos_token_id if pad is None else pad
    with capturing(layers, per_pass=budget.shape_of(model).layers) as capture, torch.inference_mode():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens, do_sample=False,
                             num_beams=1, pad_token_id=pad)  # fmt: skip
    new = out[0, n:].tolist()
    k = len(new)
    writer.add("generated_tokens", hf.tokenizer.convert_ids_to_tokens(new) if hf.tokenizer is not None else [str(i) for i in new])
    for l in sorted(capture.steps):
        rows = capture.steps[l][:k]
        grid = torch.zeros(rows[0].size(0), k, n + k - 1)  # (H, k, N + k - 1)
        for t, row in enumerate(rows):  # right-aligned: a sliding-window cache holds only the latest keys
            grid[:, t, n + t - row.size(-1) : n + t] = row
        writer.add(f"generated/layer{l}", grid.numpy())
    return k


def _write_scans(writer: NpzWriter, kept: MutableMapping[int, KeptLayer], n: int, options: LongOptions,
                 rollout: torch.Tensor | None) -> torch.Tensor | None:  # fmt: skip
    """Scan every kept layer of n tokens, top first, writing each; the rollout rows if `rollout` (m, N) is given."""
    layers = sorted(kept, reverse=True)
    grids = {name: {} for name in NAMES}
    total = len(layers) * n
    with bar(total=total, desc="long: layers", unit="row") as progress:
        for l in layers:
            step = RolloutStep(rollout) if rollout is not None else None
            result = scan_layer(kept[l], options.window, POOLS, step, progress.update)
            for name, values in result.summaries.items():
                writer.add(f"{name}/layer{l}", values.numpy())
                grids[name][l] = values.mean(dim=-1)  # (H,)
            for s, tiles in result.pooled.items():
                writer.add(f"pooled{s}/layer{l}", tiles.numpy())
                writer.add(f"pooled{s}_without_sink/layer{l}", result.pooled_without_sink[s].numpy())
            rollout = step.out if step is not None else None
    for name in NAMES:
        writer.add(name, torch.stack([grids[name][l] for l in sorted(kept)]).numpy())  # (layers, H)
    return rollout


def write_ids(hf: HfModel, ids: torch.Tensor, tokens: list[str], writer: NpzWriter, options: LongOptions) -> dict:
    """The long road's npz of token ids (1, N) labelled `tokens` through `hf` into `writer`; returns a summary."""
    n = ids.size(1)
    shape = budget.shape_of(hf.model)
    check_choice("layers", options.layers, shape.layers, 1)
    check_choice("heads", options.heads, shape.heads, 0)
    if options.new_tokens and hf.arch != "decoder":
        raise AttnkitError(f"{hf.name}: --max-new-tokens generates with a decoder; this one is {ARCH_NOUNS[hf.arch]}")
    rows = resolve_rows(options.rows, n, DEFAULT_ROW[hf.arch])
    rows_only = options.mode == "rows"
    plan = budget.Plan(len(options.layers or range(shape.layers)), len(rows) + (options.new_tokens or 0), len(options.heads or range(shape.heads)), rows_only)
    est = budget.check(hf.name, shape, n, plan, options.max_memory or budget.available_memory() // 2)
    budget.release_freed_memory()
    summary = {"model": hf.name, "tokens": n, "rows": len(rows), "mode": options.mode,
               "estimate": {"memory_bytes": est.memory, "disk_bytes": est.disk, "spilled_bytes": est.spilled}}  # fmt: skip
    with ExitStack() as stack:
        spill = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="attnkit-spill-"))) if est.spilled else None
        kept = forward(hf, ids, frozenset(options.layers) if options.layers else None, torch.tensor(rows) if rows_only else None, spill)
        budget.release_freed_memory(budget.SCAN_MMAP_THRESHOLD)
        summary["layers"] = len(kept)
        _write_kept(writer, kept, tokens, rows, shape, options)
        if not rows_only:
            whole = options.layers is None or len(kept) == shape.layers
            rollout = _write_scans(writer, kept, n, options, start(rows, n) if whole else None)
            if rollout is not None:
                writer.add("rollout_rows", rollout.numpy())
            summary["rollout"] = rollout is not None
    if options.new_tokens:
        summary["generated"] = write_generation(writer, hf, ids, frozenset(options.layers) if options.layers else None, options.new_tokens)
    return summary


def _write_kept(writer: NpzWriter, kept: MutableMapping[int, KeptLayer], tokens: list[str], rows: list[int], shape: budget.Shape,
                options: LongOptions) -> None:  # fmt: skip
    """The tokens, the kept layers' numbers, the rows and each kept layer's exact rows."""
    writer.add("tokens", tokens)
    writer.add("layers", np.array(sorted(kept)))
    writer.add("rows", np.array(rows))
    writer.add("rows/heads", np.array(options.heads or range(shape.heads)))
    for l in sorted(kept):
        indices = list(range(len(rows))) if options.mode == "rows" else rows
        writer.add(f"rows/layer{l}", exact_rows(kept[l], indices, list(options.heads) if options.heads else None).numpy())
    if options.mode != "rows":
        writer.add("window", np.array(options.window))


def write_long(hf: HfModel, text: str, writer: NpzWriter, options: LongOptions) -> dict:
    """The long road's npz of `text` through `hf` into `writer` (too long for the model's positions: one line)."""
    from attnkit.sources.hf.inputs import prepare
    from attnkit.sources.options import AttentionOptions

    prep = prepare(hf, text, AttentionOptions(truncate=options.truncate))
    return write_ids(hf, prep.inputs["input_ids"], prep.tokens, writer, options)


def export_long(source: str, text: str, out: str | Path, options: LongOptions) -> dict:
    """Write the long road's npz of `text` through the Hugging Face decoder or encoder `source`; returns a summary."""
    hf = open_model(source)
    with npz_writer(out) as writer:
        summary = write_long(hf, text, writer, options)
    return {"out": str(out), **summary}
