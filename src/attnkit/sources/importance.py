"""`attnkit heads RUN --importance [--prune]`: which heads a Transformer run needs, over source/target pairs.

Head importance is Michel et al. (2019)'s gradient proxy (`analysis.importance.head_importance`):
I_h = sum over pairs of |dL/dxi_h| at xi = 1, where xi gates head h's output and L is a pair's
teacher-forced cross entropy (one pair at a time: the paper's expectation), normalised per layer.
The gates are the rows of one (L_enc + 2 L_dec, H) mask: the encoder's layers, then the decoder's
self-attention, then its cross attention (`split_mask`, the core `HeadMask`); heads are named as
`--mask-heads` names them (`encoder:1.2`, 1-based), so a name pastes into `attnkit translate
--mask-heads`. Pruning masks the least important heads `step` at a time (the paper's Figure 3) and
measures teacher-forced token accuracy (%) and the mean loss over the same pairs at each step.

The pairs come from the run's family (`Family.pairs`: the ids of `source<TAB>reference` lines);
a line without a reference is scored against the run's own greedy output (so accuracy starts at
100%, but for the EOS of an output cut at the step limit: it measures how far masking moves the
model from itself).

Resumable, as `attnkit faithfulness` is: `OUT/importance.jsonl` (`sources.progress`) starts with a
header (the fingerprints of the run's files, of the lines and of the dtype and device), then holds
one line per pair (`{"pair": i, "gradient": |dL/dxi| (L, H)}`) and one per pruning step
(`{"masked": k, "accuracy": ..., "loss": ...}`), each appended whole as it is done. A run started
again with the same `--out` computes only what the file lacks; a file written for another run, other
lines or another dtype is refused in one line. The sum over pairs is taken in pair order from the
recorded terms (JSON floats round-trip exactly), so a resumed run gives the figures of an
uninterrupted one. `--prune STEP` is not a setting: a step's figures depend only on how many heads
are masked, so another STEP reuses the steps on file. At the end importance.jsonl is written whole:
the header, the pairs in order, the steps by how many heads they mask.

Under torchrun (`torchrun --nproc-per-node N -m attnkit heads --importance ...`), rank r of N takes pairs
r, r + N, ... and pruning steps r, r + N, ... of the list, appending them to its own
`importance.rank<r>-of-<N>.jsonl` (`sources.progress.Shard`), resumable on its own; the greedy outputs of
missing references are found in one process's batches, batch k on rank k % N. Each pair's term and each
step's figures depend on that pair or that step alone, and the sum is taken in pair order from the terms,
so rank 0's importance.jsonl and importance.json are the one-process files, byte for byte when every process
runs as many threads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor

from attnkit.analysis.importance import head_gradient, mask_first, normalise_layers, pruning_order
from attnkit.data.batching import collate
from attnkit.data.vocab import BOS, EOS
from attnkit.decode.greedy import greedy
from attnkit.errors import AttnkitError
from attnkit.io import append_text, atomic_write_text
from attnkit.models.head_mask import KINDS
from attnkit.models.transformer import HeadMask, Transformer
from attnkit.sources.progress import Shard, lines_fingerprint, model_fingerprint, read_progress, records_elsewhere
from attnkit.sources.source import RunSource

Pair = tuple[list[int], list[int]]  # (source ids, target ids), no EOS
Record = Callable[[dict], None]  # appends one record to the progress file
BATCH = 64  # pairs a metric pass takes at once
PROGRESS = "importance.jsonl"
FORMAT = 1  # the header's `attnkit_importance` version
WHAT = "a progress file of attnkit heads --importance"


@dataclass(frozen=True)
class Layout:
    """Where each kind's layers sit among the mask's rows."""

    encoder: int  # L_enc
    decoder: int  # L_dec
    heads: int  # H

    @property
    def shape(self) -> tuple[int, int]:
        return self.encoder + 2 * self.decoder, self.heads

    def name(self, row: int, head: int) -> str:
        """Row `row`, head `head` (0-based) as `--mask-heads` names it: `encoder:1.1`, `decoder_self:2.3`, `cross:1.4`."""
        sizes = (self.encoder, self.decoder, self.decoder)
        for kind, size in zip(KINDS, sizes):
            if row < size:
                return f"{kind}:{row + 1}.{head + 1}"
            row -= size
        raise AttnkitError(f"head row {row} is past the {sum(sizes)} layers")


def layout(model: object, where: str) -> Layout:
    """The mask layout of a Transformer; one line for any other model."""
    if not isinstance(model, Transformer):
        raise AttnkitError(f"{where}: head importance needs a Transformer run (this run's model is {type(model).__name__})")
    return Layout(len(model.encoder_layers), len(model.decoder_layers), model.decoder_layers[0].self_attn.n_heads)


def split_mask(mask: Tensor, lay: Layout) -> HeadMask:
    """(L_enc + 2 L_dec, H) -> HeadMask: encoder rows, then decoder self, then cross."""
    le, ld = lay.encoder, lay.decoder
    return HeadMask(mask[:le], mask[le : le + ld], mask[le + ld :])


def complete(model: Transformer, pairs: Sequence[tuple[list[int], list[int] | None]], decode, shard: Shard = Shard()) -> list[Pair]:
    """Each pair, a missing target replaced by the model's greedy output (the run's step limit). The missing pairs
    go in batches of `BATCH`, in pair order, as one process batches them; under torchrun batch k is rank k % N's,
    and every rank gets every output (`Shard.share`), so each output is the one a single process finds."""
    missing = [i for i, (_, tgt) in enumerate(pairs) if tgt is None]
    done = {}
    device = next(model.parameters()).device
    for start in shard.mine(range(0, len(missing), BATCH)):
        index = missing[start : start + BATCH]
        b = collate([(pairs[i][0], []) for i in index], range(len(index))).to(device)
        with torch.inference_mode():
            hyps = greedy(model, b.src, b.src_keep, max_len_a=decode.max_len_a, max_len_b=decode.max_len_b, bos=BOS, eos=EOS)
        done |= {i: h.tokens for i, h in zip(index, hyps)}
    done = shard.share(done)
    return [(src, done[i] if tgt is None else tgt) for i, (src, tgt) in enumerate(pairs)]


def pair_loss(model: Transformer, lay: Layout, pairs: Sequence[Pair]) -> Callable[[Tensor, int], Tensor]:
    """(mask (L, H), i) -> pair i's teacher-forced cross entropy (mean over its target tokens) under the mask."""
    device = next(model.parameters()).device

    def loss(mask: Tensor, i: int) -> Tensor:
        b = collate([pairs[i]], [0]).to(device)
        logits = model(b.src, b.src_keep, b.tgt_in, split_mask(mask.to(device), lay))  # (1, T, V)
        return F.cross_entropy(logits.flatten(0, 1).float(), b.tgt_out.flatten())

    return loss


def scores(model: Transformer, lay: Layout, pairs: Sequence[Pair]) -> Callable[[Tensor], dict[str, float]]:
    """mask (L, H) -> teacher-forced token accuracy (%) and mean token loss over `pairs` under the mask."""
    device = next(model.parameters()).device

    @torch.inference_mode()
    def metric(mask: Tensor) -> dict[str, float]:
        hit = total = 0
        loss = 0.0
        for start in range(0, len(pairs), BATCH):
            b = collate(pairs, range(start, min(start + BATCH, len(pairs)))).to(device)
            logits = model(b.src, b.src_keep, b.tgt_in, split_mask(mask.to(device), lay)).float()  # (B, T, V)
            keep = b.tgt_keep  # (B, T)
            hit += int(((logits.argmax(-1) == b.tgt_out) & keep).sum())
            loss += float(F.cross_entropy(logits[keep], b.tgt_out[keep], reduction="sum"))
            total += int(keep.sum())
        return {"accuracy": 100.0 * hit / total, "loss": loss / total}

    return metric


def pair_terms(model: Transformer, lay: Layout, pairs: Sequence[Pair], index: Sequence[int], done: dict[int, list], record: Record,
               progress: Callable[[int], None] = lambda n: None) -> None:  # fmt: skip
    """The term |dL/dxi| (L, H) of each pair of `index` that `done` lacks (pair -> (L, H) lists): into `done` and `record`."""
    loss = pair_loss(model, lay, pairs)
    for i in index:
        if i not in done:
            done[i] = head_gradient(loss, i, lay.shape).tolist()  # (L, H): float64, exact through JSON
            record({"pair": i, "gradient": done[i]})
            progress(1)


def summed(terms: dict[int, list], lay: Layout, n: int) -> Tensor:
    """Michel et al.'s I_h: the terms of pairs 0 .. n-1 summed in pair order, normalised per layer -> (L, H)."""
    total = torch.zeros(lay.shape, dtype=torch.float64)  # (L, H)
    for i in range(n):
        total += torch.tensor(terms[i], dtype=torch.float64)  # (L, H)
    return normalise_layers(total).float()  # (L, H)


def importance(model: Transformer, lay: Layout, pairs: Sequence[Pair], progress: Callable[[int], None] = lambda n: None, *,
               done: dict[int, list] | None = None, record: Record = lambda r: None) -> Tensor:  # fmt: skip
    """Michel et al.'s I_h over `pairs`, one pair at a time, normalised per layer: -> (L_enc + 2 L_dec, H).

    `done` holds the terms |dL/dxi| of pairs already on file (pair -> (L, H) lists); each new term goes to `record`.
    """
    terms = dict(done or {})
    pair_terms(model, lay, pairs, range(len(pairs)), terms, record, progress)
    return summed(terms, lay, len(pairs))


def pruned_counts(heads: int, step: int) -> list[int]:
    """How many heads each pruning step masks: 0, step, 2 step, ... and finally all of them."""
    return [*range(0, heads, step), heads]


def prune_steps(metric: Callable[[Tensor], dict[str, float]], order: Sequence[tuple[int, int]], shape: tuple[int, int], counts: Sequence[int],
                done: dict[int, dict], record: Record, progress: Callable[[int], None] = lambda n: None) -> None:  # fmt: skip
    """The metric with the first k heads of `order` masked, for each k of `counts` that `done` (the steps on file,
    by k) lacks: {"masked": k, ...} into `done` and `record`."""
    for k in counts:
        if k not in done:
            done[k] = {"masked": k, **metric(mask_first(order, k, shape))}
            record(done[k])
        progress(1)


def head_report(found: Tensor, lay: Layout) -> dict:
    """The JSON of the importance scores: per kind (layers x heads) and the order, least important first."""
    rows = found.tolist()
    le, ld = lay.encoder, lay.decoder
    by_kind = dict(zip(KINDS, (rows[:le], rows[le : le + ld], rows[le + ld :])))
    return {"importance": by_kind, "order": [lay.name(r, h) for r, h in pruning_order(found)]}


def progress_header(loaded, lines: Sequence[str]) -> dict:
    """What the figures depend on: the run's files, the lines, the model's dtype and device."""
    weight = next(loaded.model.parameters())
    return {"attnkit_importance": FORMAT, "model": model_fingerprint(RunSource(loaded).files()), "data": lines_fingerprint(lines),
            "settings": {"dtype": str(weight.dtype).removeprefix("torch."), "device": weight.device.type}}  # fmt: skip


def write_progress(path: Path, expected: dict, terms: dict[int, list], steps: dict[int, dict]) -> None:
    """importance.jsonl whole, as one uninterrupted process appends it: the header, the pairs, the steps by k."""
    lines = [expected, *({"pair": i, "gradient": terms[i]} for i in sorted(terms)), *(steps[k] for k in sorted(steps))]
    atomic_write_text(path, "".join(json.dumps(line) + "\n" for line in lines))


def given_pairs(loaded, lines: Sequence[str], where: str) -> tuple[Layout, list]:
    """The mask layout of the run's model and the pairs of `lines` (one line for a run that gives none)."""
    from attnkit.families import FAMILIES

    lay = layout(loaded.model, str(loaded.folder))
    if loaded.family.pairs is None:
        able = ", ".join(f.name for f in FAMILIES.values() if f.pairs is not None)
        raise AttnkitError(f"{loaded.folder}: a {loaded.family.name} run gives no source/target pairs to score its heads on ({able} runs do)")
    return lay, loaded.family.pairs(loaded, lines, where)  # a line it cannot read is refused first


def run_importance(loaded, lines: Sequence[str], where: str, out: str | Path, prune_step: int | None = None, shard: Shard = Shard()) -> dict | None:
    """Importance of every head of a loaded run over `lines` (`source<TAB>reference` or a source alone) and,
    with `prune_step`, the pruning steps; the JSON `attnkit heads --importance` writes (module docstring).
    Resumes from OUT's progress files, where it records its progress. Under torchrun (`shard`) each rank scores
    its pairs and its steps; rank 0 writes importance.jsonl whole and returns the JSON, the others None."""
    from attnkit.progress import counter

    model = loaded.model.eval()
    lay, given = given_pairs(loaded, lines, where)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path, expected = out / shard.file(PROGRESS), progress_header(loaded, lines)
    records = read_progress(path, expected, WHAT) + records_elsewhere(out, PROGRESS, path, expected, WHAT)  # before any model pass
    terms = {r["pair"]: r["gradient"] for r in records if "pair" in r}
    steps = {r["masked"]: r for r in records if "masked" in r}

    def record(r: dict) -> None:
        append_text(path, json.dumps(r) + "\n")

    pairs = complete(model, given, loaded.run.decode, shard)
    mine = shard.mine(range(len(pairs)))
    with counter(len(mine), "head importance", unit="pair") as bar:
        bar.update(sum(i in terms for i in mine))
        pair_terms(model, lay, pairs, mine, terms, record, bar.update)
    terms = shard.share({i: terms[i] for i in mine})  # every pair's, on every rank: each finds the same order
    found = summed(terms, lay, len(pairs))
    doc = {"run": str(loaded.folder), "pairs": len(pairs), "heads": lay.shape[0] * lay.heads, **head_report(found, lay)}
    if prune_step is not None:
        order = pruning_order(found)
        counts = pruned_counts(len(order), prune_step)
        mine = shard.mine(counts)
        with counter(len(mine), "pruning", unit="step") as bar:
            prune_steps(scores(model, lay, pairs), order, lay.shape, mine, steps, record, bar.update)
        parts = shard.gather({k: steps[k] for k in mine})
        if parts is None:
            return None
        for part in parts:
            steps.update(part)
        doc["pruning"] = [steps[k] for k in counts]
    if shard.rank != 0:
        return None
    write_progress(out / PROGRESS, expected, terms, steps)
    return doc
