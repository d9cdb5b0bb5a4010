"""The chart parser's training task (`model.kind: chart`): span charts, the margin loss, dev F1.

The data is the seq2seq parser's (the same reader, preprocessing, splits and EVALB), prepared once
(`attnkit.artifacts.prepared`) as word ids, characters, gold labelled spans (`chart.gold_spans`)
and POS tags. A batch's size is its number of words. Its loss is the margin (hinge) loss of each
sentence (Kitaev & Klein 2018, sec. 2.3; Taskar et al. 2005),

    max(0, max_T [s(T) + Delta(T, T*)] - s(T*))

found by loss-augmented CKY (`chart.cky` with the gold chart), summed over the sentences, plus the
tagger's summed cross-entropy. Validation: the dev loss per word, and EVALB labelled F1
(COLLINS.prm, all lengths) of the dev sentences parsed with their gold POS tags.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.artifacts.prepared import data_key, load_sequences, prepared, save_sequences
from attnkit.data.vocab import PAD
from attnkit.families.parsing.chart.cky import cky
from attnkit.families.parsing.chart.codec import (
    ChartBatch,
    ChartExample,
    ChartVocabs,
    build_chart_vocabs,
    chart_of,
    collate,
    drop_words,
    encode_chart_tree,
    scores_of,
    unknown_ids,
    vocabs_from_json,
    vocabs_to_json,
)  # fmt: skip
from attnkit.families.parsing.chart.infer import dev_f1
from attnkit.families.parsing.chart.model import ChartParser
from attnkit.families.parsing.config import ChartModel, ParseRun
from attnkit.families.parsing.task import PREPARE_STEPS, training_trees, tree_sources
from attnkit.families.parsing.trees import parse_trees
from attnkit.families.validation import validation_sums
from attnkit.progress import counter

log = logging.getLogger("attnkit")


def build(run: ParseRun, vocabs: ChartVocabs) -> ChartParser:
    """The chart parser of `run.model` (a `ChartModel`) for the vocabularies."""
    m = run.model
    assert isinstance(m, ChartModel)
    n_tags = len(vocabs.tags) if m.tagger and vocabs.tags is not None else 0
    return ChartParser(n_words=len(vocabs.words), n_chars=len(vocabs.chars), n_labels=len(vocabs.labels), n_tags=n_tags, d_model=m.d_model,
                       layers=m.layers, n_heads=m.n_heads, d_kv=m.d_kv, d_ff=m.d_ff, d_char=m.d_char, d_label_hidden=m.d_label_hidden,
                       dropout=m.dropout, attention_dropout=m.attention_dropout, relu_dropout=m.relu_dropout,
                       embedding_dropout=m.embedding_dropout, max_positions=m.max_positions, words=m.words)  # fmt: skip


def margin_loss(scores: Tensor, gold: list[np.ndarray], lengths: list[int], table: np.ndarray) -> Tensor:
    """Summed margin loss of a batch (module docstring).

    Args:
        scores: (B, P, L) span scores of the pairs of `table`.
        gold: Each sentence's gold label chart (n+1, n+1).
        lengths: Each sentence's n.
        table: (N+1, N+1) pair index of each span (`fencepost_pairs`).

    Returns:
        sum_b max(0, s(T^_b) + Delta(T^_b, T*_b) - s(T*_b)), T^ the loss-augmented best tree.
    """
    values = scores.detach().float().cpu().numpy()
    rows, pairs, labels, signs, costs = [], [], [], [], []
    for b, (n, chart) in enumerate(zip(lengths, gold)):
        found = cky(chart_of(values[b], table, n), chart)
        i, j = np.nonzero(np.triu(chart, k=1))  # gold constituents
        spans = [(s, e, label, 1.0) for s, e, label in found.spans] + [(s, e, int(chart[s, e]), -1.0) for s, e in zip(i, j)]
        rows += [b] * len(spans)
        pairs += [int(table[s, e]) for s, e, _, _ in spans]
        labels += [label for _, _, label, _ in spans]
        signs += [sign for *_, sign in spans]
        costs.append(found.cost)
    device = scores.device
    picked = scores[torch.tensor(rows, device=device), torch.tensor(pairs, device=device), torch.tensor(labels, device=device)].float()
    margin = torch.zeros(len(lengths), device=device).index_add(0, torch.tensor(rows, device=device), picked * torch.tensor(signs, device=device))
    return (margin + torch.tensor(costs, dtype=torch.float32, device=device)).clamp(min=0).sum()


def batch_loss(model: ChartParser, batch: ChartBatch) -> Tensor:
    """The batch's summed margin loss, plus the tagger's summed cross-entropy (with a tagger)."""
    y, scores, table, _ = scores_of(model, batch)
    loss = margin_loss(scores, batch.gold, batch.lengths.tolist(), table)
    if model.tagger is not None and bool((batch.tags != PAD).any()):
        logits = model.tag_logits(y).float()  # (B, T, n_tags)
        loss = loss + F.cross_entropy(logits.flatten(0, 1), batch.tags.flatten(), ignore_index=PAD, reduction="sum")
    return loss


@dataclass
class ChartData:
    vocabs: ChartVocabs
    train: list[ChartExample]
    valid: list[ChartExample]
    dev_gold: list[str]
    train_unknown: list[list[int]]  # each training word's id as an unknown word (`unknown_ids`)
    train_counts: list[list[int]]  # each training word's count in the training trees


def load_data(run: ParseRun, run_dir: Path, data_dir: str | None) -> ChartData:
    """The prepared chart data of `run`: read from the cache, or read and encoded into it."""
    path, files = tree_sources(run, data_dir)
    settings = run.data.model_dump(mode="json", exclude={"treebank", "train", "valid"})
    key = data_key({"family": "parsing", "kind": "chart", "format": 2, "data": settings}, files)
    folder = prepared(run_dir.parent / ".attnkit-cache", key, partial(_prepare, run, path))
    info = json.loads((folder / "data.json").read_text(encoding="utf-8"))
    ids = load_sequences(folder / "examples.safetensors")
    vocabs = vocabs_from_json(info["vocabs"], folder)
    return ChartData(vocabs, _examples(ids, "train"), _examples(ids, "valid"), info["dev_gold"], ids["train_unknown"], ids["train_counts"])


def _prepare(run: ParseRun, path: Path | None, folder: Path) -> None:
    sequences: dict[str, list[list[int]]] = {}
    with counter(PREPARE_STEPS, "preparing data", unit="step") as bar:  # the stage it is in, in the postfix
        bar.set_postfix_str("reading trees")
        train, dev = training_trees(run, path, "chart parsing")
        bar.update(1)
        bar.set_postfix_str("vocabulary")
        vocabs = build_chart_vocabs(train, min_freq=run.data.min_freq, signatures=run.data.unknown == "signature")
        bar.update(1)
        for name, trees in (("train", train), ("valid", dev)):
            bar.set_postfix_str(f"encoding {name}")
            encoded = [encode_chart_tree(vocabs, tree) for tree in trees]
            sequences[f"{name}_words"] = [e.words for e in encoded]
            sequences[f"{name}_chars"] = [[c for word in e.chars for c in word] for e in encoded]
            sequences[f"{name}_char_lengths"] = [[len(word) for word in e.chars] for e in encoded]
            sequences[f"{name}_spans"] = [[x for span in e.spans for x in span] for e in encoded]
            sequences[f"{name}_tags"] = [e.tags for e in encoded]
            bar.update(1)
    counts = Counter(word for tree in train for word in tree.words())
    sequences["train_unknown"] = [unknown_ids(vocabs, tree.words()) for tree in train]
    sequences["train_counts"] = [[counts[word] for word in tree.words()] for tree in train]
    save_sequences(folder / "examples.safetensors", sequences)
    info = {"vocabs": vocabs_to_json(vocabs, folder), "dev_gold": [str(tree) for tree in dev]}
    (folder / "data.json").write_text(json.dumps(info, ensure_ascii=False), encoding="utf-8")


def _examples(ids: dict[str, list[list[int]]], name: str) -> list[ChartExample]:
    out = []
    for words, flat, lengths, spans, tags in zip(*(ids[f"{name}_{part}"] for part in ("words", "chars", "char_lengths", "spans", "tags"))):
        ends = np.cumsum([0, *lengths])
        chars = [flat[a:b] for a, b in zip(ends[:-1], ends[1:])]
        out.append(ChartExample(words, chars, [tuple(spans[k : k + 3]) for k in range(0, len(spans), 3)], tags))  # type: ignore[misc]
    return out


class ChartTask:
    """Span charts for the chart parser; a batch's size is its number of words."""

    unit = "tokens"

    def __init__(self, run: ParseRun, data: ChartData) -> None:
        self.run, self.data, self.vocabs = run, data, data.vocabs
        lengths = [len(e.words) + 2 for e in data.train]
        self.train_lengths = (lengths, lengths)

    def build_model(self) -> nn.Module:
        return build(self.run, self.vocabs)

    def collate(self, index: list[int]) -> ChartBatch:
        alpha, data = self.run.model.word_dropout_alpha, self.data  # type: ignore[union-attr]
        if not alpha:
            return collate(data.train, index)
        return collate([drop_words(data.train[i], data.train_unknown[i], data.train_counts[i], alpha) for i in index], range(len(index)))

    def size(self, batch: ChartBatch) -> int:
        return batch.n_words

    def loss(self, model: nn.Module, batch: ChartBatch, step: int) -> Tensor:
        return batch_loss(model, batch)  # type: ignore[arg-type]

    @torch.inference_mode()
    def validate(self, model: nn.Module, device: torch.device) -> dict[str, float]:
        """Dev loss per word (batched as in training, `validation_sums`), and (with `train.eval_decode`)
        EVALB F1 of the dev parses."""
        valid, t = self.data.valid, self.run.train
        lengths = [len(e.words) + 2 for e in valid]
        sums = validation_sums((lengths, lengths), partial(collate, valid), partial(batch_loss, model),
                               lambda batch, loss: {"loss": loss, "words": batch.n_words}, t, device)  # fmt: skip
        metrics = {"loss": sums["loss"] / max(sums["words"], 1)}
        if t.eval_decode:
            n = t.eval_max_sentences or len(self.data.dev_gold)
            metrics.update(dev_f1(model, self.vocabs, [parse_trees(line)[0] for line in self.data.dev_gold[:n]]))
        return metrics
