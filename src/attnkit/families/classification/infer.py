"""Use a trained sentence classifier (`model.kind: sase`): classify, embed, evaluate.

`classify_texts` returns, per text, the label, the class probabilities, the words the model saw and
the attention A (hops x words) of the self-attentive model (Lin et al. 2017), which
`attnkit explain` draws (`families.classification.explain`). `embed_texts` returns the sentence embeddings M (flattened, or the mean
over hops). `evaluate_labelled` scores a labelled file: accuracy, macro-F1 and the confusion matrix.
For a sentence-pair model (SNLI) a text is ``premise<TAB>hypothesis``; tokens and attention are the
premise's (and `tokens2`, `attention2` the hypothesis's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from attnkit.artifacts.runs import LoadedRun
from attnkit.data.batching import pad
from attnkit.errors import DataError
from attnkit.evaluate.metrics import accuracy
from attnkit.families.classification.codec import words
from attnkit.families.classification.data import LabelledText, read_labelled, read_snli, read_sst_trees, shown_label
from attnkit.families.classification.metrics import confusion_matrix, macro_f1
from attnkit.progress import counter


@dataclass
class ClassifyResult:
    """One classified text.

    Attributes:
        label: The most probable label.
        probs: Probability of every label, in the run's label order.
        tokens: The words the model read (normalized, before the vocabulary lookup; unknown words
            are shown as written).
        attention: A, one row per hop, one weight per token (R x n); ``[]`` without attention pooling.
        tokens2: A sentence-pair model's hypothesis words (None for one sentence).
        attention2: The hypothesis's A (R x n2), as `attention` is the premise's (None for one sentence).
        encoder: A Transformer encoder's self-attention over the (first) sentence's words, one
            ``(heads, n, n)`` tensor per layer, first layer first (``[]`` for other encoders).
    """

    label: str
    probs: dict[str, float]
    tokens: list[str]
    attention: list[list[float]]
    tokens2: list[str] | None = None
    attention2: list[list[float]] | None = None
    encoder: list[torch.Tensor] = field(default_factory=list)


def tokenize(loaded: LoadedRun, text: str) -> list[str]:
    """The words of `text` as the run's model reads them (normalized as in training)."""
    return words(text, loaded.run.data.lowercase, loaded.run.data.drop_symbols)


def _split(loaded: LoadedRun, texts: Sequence[str], source: str, pair: bool) -> list[tuple[list[str], list[str] | None]]:
    """Tokens of each text (and of its hypothesis when `pair`); empty texts are errors."""
    out = []
    for i, text in enumerate(texts, start=1):
        parts = text.split("\t") if pair else [text]
        if pair and len(parts) != 2:
            raise DataError(f"{source} {i}: a sentence-pair model needs 'premise<TAB>hypothesis', got {len(parts)} field(s)")
        words = [tokenize(loaded, part) for part in parts]
        if not all(words):
            raise DataError(f"{source} {i}: empty text")
        out.append((words[0], words[1] if pair else None))
    return out


def _batches(loaded: LoadedRun, split: list[tuple[list[str], list[str] | None]], batch_size: int) -> Iterator[tuple]:
    """Model inputs ``(tokens, keep, tokens2, keep2)`` of consecutive batches, on the model's device."""
    vocab = loaded.vocabs.vocab
    device = next(loaded.model.parameters()).device
    for start in range(0, len(split), batch_size):
        chunk = split[start : start + batch_size]
        tokens, keep = pad([vocab.encode(words) for words, _ in chunk])  # (B, S)
        tokens2 = keep2 = None
        if chunk[0][1] is not None:
            tokens2, keep2 = pad([vocab.encode(words2) for _, words2 in chunk])  # (B, S2)
            tokens2, keep2 = tokens2.to(device), keep2.to(device)
        yield tokens.to(device), keep.to(device), tokens2, keep2


def model_inputs(loaded: LoadedRun, text: str) -> tuple[torch.Tensor, ...]:
    """One text's model inputs on the model's device: (tokens, keep), each (1, S), and (tokens2, keep2) for a pair."""
    tokens, keep, tokens2, keep2 = next(_batches(loaded, _split(loaded, [text], "text", pair=loaded.run.model.pair != "none"), 1))
    return (tokens, keep) if tokens2 is None else (tokens, keep, tokens2, keep2)


@torch.inference_mode()
def classify_texts(loaded: LoadedRun, texts: list[str], batch_size: int = 64, *, source: str = "text",
                   progress: Callable[[int], None] | None = None) -> list[ClassifyResult]:  # fmt: skip
    """Classify texts with a loaded sase run (`attnkit.families.load_run`).

    Args:
        loaded: The run, in eval mode.
        texts: One sentence (or ``premise<TAB>hypothesis``) each.
        batch_size: Texts per forward pass.
        source: Names a text in errors: ``f"{source} {i}"`` with i counted from 1.
        progress: Called with the number of texts of each batch classified.

    Raises:
        DataError: An empty text (nothing left after normalization), or a pair without a tab.
    """
    labels = loaded.vocabs.labels.labels
    split = _split(loaded, texts, source, pair=loaded.run.model.pair != "none")
    results: list[ClassifyResult] = []
    for tokens, keep, tokens2, keep2 in _batches(loaded, split, batch_size):
        output = loaded.model(tokens, keep, tokens2, keep2, need_weights=True)
        probs = output.logits.float().softmax(dim=-1)  # (B, C)
        for row, p in enumerate(probs.tolist()):
            words, words2 = split[len(results)]
            a = [] if output.attention is None else output.attention[row, :, : len(words)].float().tolist()  # (R, n)
            a2 = None if words2 is None else [] if output.attention2 is None else output.attention2[row, :, : len(words2)].float().tolist()  # (R, n2)
            layers = [w[row, :, : len(words), : len(words)].float().cpu() for w in output.encoder]  # (heads, n, n) each
            results.append(ClassifyResult(labels[max(range(len(p)), key=p.__getitem__)], dict(zip(labels, p)), words, a, words2, a2, layers))
        if progress is not None:
            progress(len(probs))
    return results


@torch.inference_mode()
def embed_texts(loaded: LoadedRun, texts: list[str], batch_size: int = 64, *, mean_hops: bool = False, source: str = "text") -> np.ndarray:
    """Sentence embeddings: M flattened ``(N, R * 2u)``, or its mean over hops ``(N, 2u)``.

    Without attention pooling the pooled vector ``(N, 2u)`` is the embedding (``mean_hops`` changes
    nothing). Each text is one sentence, also for a pair model.
    """
    rows = []
    for tokens, keep, _, _ in _batches(loaded, _split(loaded, texts, source, pair=False), batch_size):
        m, _, _ = loaded.model.embed(tokens, keep)  # (B, R, 2u) or (B, 2u)
        if m.dim() == 3:
            m = m.mean(dim=1) if mean_hops else m.flatten(1)  # (B, 2u) or (B, R * 2u)
        rows.append(m.float().cpu().numpy())
    return np.concatenate(rows)


def read_eval_file(loaded: LoadedRun, path: str | Path) -> list[LabelledText]:
    """Labelled examples to evaluate a run on, checked against its labels.

    SST runs read tree files (``.txt``/``.txt.gz``); SNLI runs read SNLI TSV; otherwise (and for
    ``.tsv``/``.csv``/``.jsonl`` files of SST runs) `read_labelled` with the run's column names.
    """
    d = loaded.run.data
    labels = loaded.vocabs.labels
    name = Path(path).name.removesuffix(".gz")
    if d.corpus == "sst" and name.endswith(".txt"):
        examples, _ = read_sst_trees(path, binary=d.binary)
    elif d.corpus == "snli":
        examples = read_snli(path)
    else:
        examples, _ = read_labelled(path, text_column=d.text_column, label_column=d.label_column,
                                    text2_column=d.text2_column, label_map=labels)  # fmt: skip
    for number, e in enumerate(examples, start=1):
        if e.label not in labels:
            raise DataError(f"{path}, example {number}: unknown label {shown_label(repr(e.label))} (the run knows {labels.shown()})")
    return examples


def evaluate_labelled(loaded: LoadedRun, path: str | Path, batch_size: int = 64) -> dict:
    """Accuracy, macro-F1 and the confusion matrix (rows gold, columns predicted) of a run on a file."""
    labels = loaded.vocabs.labels
    examples = read_eval_file(loaded, path)
    texts = [e.text if e.text2 is None else f"{e.text}\t{e.text2}" for e in examples]
    with counter(len(texts), "evaluating", unit="sent") as bar:
        results = classify_texts(loaded, texts, batch_size, source=f"{path}, example", progress=bar.update)
    pred = [labels.index(r.label) for r in results]
    gold = [labels.index(e.label) for e in examples]
    return {
        "examples": len(examples),
        "accuracy": accuracy(pred, gold),
        "macro_f1": macro_f1(pred, gold, len(labels)),
        "labels": list(labels.labels),
        "confusion": confusion_matrix(pred, gold, len(labels)),
        "checkpoint": str(loaded.checkpoint),
    }
