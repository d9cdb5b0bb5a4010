"""The parsing task of the shared training loop (Vaswani et al. 2017, sec. 6.3): linearised trees
(Vinyals et al. 2015), the label-smoothed loss summed over target symbols (`families.forced`, shared
with the other encoder-decoders), and validation by loss, perplexity and EVALB labelled F1 (COLLINS.prm) of greedy
constrained parses of the dev trees.

The data is prepared once (`attnkit.artifacts.prepared`), keyed by the treebank's bytes and the
data settings: trees read, preprocessed (`trees.preprocess`), split, linearised and encoded, with
the dev sentences and their gold trees for scoring.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, fields
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from attnkit.artifacts.prepared import data_key, load_sequences, prepared, save_sequences
from attnkit.config.models import build_transformer
from attnkit.data.batching import Batch, Example, collate, pad, sequence_lengths
from attnkit.data.vocab import PAD
from attnkit.errors import ConfigError
from attnkit.families.forced import token_loss, validation_loss
from attnkit.families.parsing.codec import ParseVocabs, build_vocabs, encode_tags, encode_tree, leaf_table, vocabs_from_json, vocabs_to_json
from attnkit.families.parsing.config import ParseRun
from attnkit.families.parsing.constrained import LEAF, SymbolTables
from attnkit.families.parsing.evalb import score
from attnkit.families.parsing.evalb_params import COLLINS
from attnkit.families.parsing.infer import parse_words, tag_accuracy
from attnkit.families.parsing.model import Parser
from attnkit.families.parsing.trees import Tree, parse_trees, preprocess_treebank, read_tree_file, read_treebank, split_sample, split_wsj
from attnkit.progress import counter

log = logging.getLogger("attnkit")
PREPARE_STEPS = 4  # reading the trees, the vocabularies, encoding train, encoding valid


@dataclass
class ParseTrainData:
    vocabs: ParseVocabs
    train: list[Example]
    valid: list[Example]
    dev_gold: list[str]  # every dev tree, preprocessed, one line each (for EVALB)
    train_tags: list[list[int]] | None = None  # tag ids of each training tree's words (`model.tagger`)
    valid_tags: list[list[int]] | None = None


@dataclass
class TaggedBatch(Batch):
    """A batch with the gold tag of each source position: tags (B, S), PAD at EOS and padding."""

    tags: torch.Tensor


def build(run: ParseRun, vocabs: ParseVocabs) -> nn.Module:
    """The run's Transformer for its vocabularies (source words, target symbols: never shared),
    a `model.Parser` with `model.pointer` or `model.tagger`."""
    sizes = {"src_vocab_size": len(vocabs.words), "tgt_vocab_size": len(vocabs.symbols), "joint": False}
    if not (run.model.pointer or run.model.tagger):
        return build_transformer(run.model, **sizes)
    if run.model.tagger and vocabs.tags is None:
        raise ConfigError("model.tagger: the run's vocabularies have no tags")
    leaves = SymbolTables.build(vocabs.symbols, leaf_table(vocabs)).kind == LEAF  # (V,)
    n_tags = len(vocabs.tags) if run.model.tagger and vocabs.tags is not None else 0
    return build_transformer(run.model, **sizes, model_class=Parser, leaves=leaves.tolist(), pointer=run.model.pointer, n_tags=n_tags)


def tagged(examples: list[Example], tags: list[list[int]] | None, index: list[int]) -> Batch:
    """`collate`, plus the tags (a `TaggedBatch`) when there are any."""
    batch = collate(examples, index)
    if tags is None:
        return batch
    padded, _ = pad([tags[i] + [PAD] for i in index], PAD)  # (B, S): the source's EOS has no tag
    return TaggedBatch(**{f.name: getattr(batch, f.name) for f in fields(batch)}, tags=padded)


def treebank_files(path: Path) -> list[Path]:
    """The files whose bytes key the prepared data: the zip or file itself, or a folder's trees."""
    return sorted(p for p in path.rglob("*.mrg") if p.is_file()) if path.is_dir() else [path]


def tree_sources(run: ParseRun, data_dir: str | None) -> tuple[Path | None, list[Path]]:
    """The treebank to split (None with `split: files`) and the files whose bytes key the prepared data."""
    d = run.data
    if d.split == "files":
        return None, [Path(d.train), Path(d.valid)]  # type: ignore[arg-type]  # `ParseData._files`
    path = d.treebank_path(data_dir)
    return path, treebank_files(path)


def read_splits(run: ParseRun, path: Path | None) -> dict[str, list[Tree]]:
    """Train/dev/test trees, preprocessed: `data.split` picks the split of the treebank at `path`, or
    (`files`) reads `data.train` and `data.valid`; `data.train_fraction` keeps the first part of the
    training trees."""
    d = run.data
    if path is None:
        splits = {"train": read_tree_file(d.train), "dev": read_tree_file(d.valid), "test": []}  # type: ignore[arg-type]
    else:
        splits = (split_sample if d.split == "sample" else split_wsj)(preprocess_treebank(read_treebank(path)))
    return {**splits, "train": splits["train"][: max(1, round(len(splits["train"]) * run.data.train_fraction))]}


def load_data(run: ParseRun, run_dir: Path, data_dir: str | None) -> ParseTrainData:
    """The prepared data of `run`: read from the cache, or read, linearised and encoded into it."""
    path, files = tree_sources(run, data_dir)
    settings = run.data.model_dump(mode="json", exclude={"treebank", "train", "valid"})
    key = data_key({"family": "parsing", "data": settings, **({"tags": True} if run.model.tagger else {})}, files)
    folder = prepared(run_dir.parent / ".attnkit-cache", key, partial(_prepare, run, path))
    info = json.loads((folder / "data.json").read_text(encoding="utf-8"))
    ids = load_sequences(folder / "examples.safetensors")
    vocabs = vocabs_from_json(info["vocabs"], folder)
    train, valid = list(zip(ids["train_src"], ids["train_tgt"])), list(zip(ids["valid_src"], ids["valid_tgt"]))
    return ParseTrainData(vocabs, train, valid, info["dev_gold"], ids.get("train_tags"), ids.get("valid_tags"))


def training_trees(run: ParseRun, path: Path | None, what: str) -> tuple[list, list]:
    """(the training trees of at most `data.max_len` words, the dev trees) of `read_splits`, logged as `what`'s data."""
    splits = read_splits(run, path)
    train = [tree for tree in splits["train"] if len(tree.words()) <= run.data.max_len]
    log.info("%s data: %d training trees (%d over %d words left out), %d dev trees",
             what, len(train), len(splits["train"]) - len(train), run.data.max_len, len(splits["dev"]))  # fmt: skip
    return train, splits["dev"]


def _prepare(run: ParseRun, path: Path | None, folder: Path) -> None:
    sequences: dict[str, list[list[int]]] = {}
    with counter(PREPARE_STEPS, "preparing data", unit="step") as bar:  # the stage it is in, in the postfix
        bar.set_postfix_str("reading trees")
        train, dev = training_trees(run, path, "parsing")
        bar.update(1)
        bar.set_postfix_str("vocabulary")
        vocabs = build_vocabs(train, keep_words=run.data.keep_words, min_freq=run.data.min_freq, signatures=run.data.unknown == "signature",
                              tags=run.model.tagger)  # fmt: skip
        bar.update(1)
        for name, trees in (("train", train), ("valid", dev)):
            bar.set_postfix_str(f"encoding {name}")
            encoded = [encode_tree(vocabs, tree) for tree in trees]
            sequences.update({f"{name}_src": [s for s, _ in encoded], f"{name}_tgt": [t for _, t in encoded]})
            if run.model.tagger:
                sequences[f"{name}_tags"] = [encode_tags(vocabs, tree) for tree in trees]
            bar.update(1)
    save_sequences(folder / "examples.safetensors", sequences)
    info = {"vocabs": vocabs_to_json(vocabs, folder), "dev_gold": [str(tree) for tree in dev]}
    (folder / "data.json").write_text(json.dumps(info, ensure_ascii=False), encoding="utf-8")


def batch_loss(model: nn.Module, batch: Batch, epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed label-smoothed loss and NLL of a teacher-forced batch (`forced.token_loss`);
    with a tagger (a `TaggedBatch`), plus the tags' summed cross-entropy in the loss."""
    memory = model.encode(batch.src, batch.src_keep)  # (B, S, D)
    features = model.decode(batch.tgt_in, memory, batch.src_keep)[0]  # (B, T, D)
    loss, nll = token_loss(features, batch, model.output_weight, epsilon)
    if isinstance(batch, TaggedBatch) and getattr(model, "tagger", None) is not None:
        tag_logits = model.tag_logits(memory).float()  # (B, S, n_tags)
        loss = loss + F.cross_entropy(tag_logits.flatten(0, 1), batch.tags.flatten(), ignore_index=PAD, reduction="sum")
    return loss, nll


def dev_f1(model: nn.Module, vocabs: ParseVocabs, gold: list[str], decode, device: torch.device) -> dict[str, float]:
    """EVALB (COLLINS.prm) F1, all lengths, of constrained parses of the gold trees' sentences.

    The parses carry the gold POS tags (COLLINS.prm drops punctuation by its tag); a model with a
    tagger also gets its tagging accuracy (`tag_acc`).
    """
    trees = [parse_trees(line)[0] for line in gold]
    with counter(len(trees), "validating", unit="sent") as bar:
        results = parse_words(model, vocabs, [t.words() for t in trees], decode, tags=[t.tags() for t in trees], progress=bar.update)
    summary = score(trees, [r.tree for r in results], COLLINS).summary()["all"]
    metrics = {"f1": summary["fmeasure"] or 0.0, "exact": summary["complete_match"] / 100, "repaired": sum(r.repaired for r in results)}
    if getattr(model, "tagger", None) is not None:
        metrics["tag_acc"] = tag_accuracy(results, [t.tags() for t in trees])
    return metrics


class ParseTask:
    """Linearised trees for the Transformer; a batch's size is its number of target symbols."""

    unit = "tokens"

    def __init__(self, run: ParseRun, data: ParseTrainData) -> None:
        self.run, self.data = run, data
        self.vocabs = data.vocabs
        self.train_lengths = sequence_lengths(data.train)

    def build_model(self) -> nn.Module:
        return build(self.run, self.vocabs)

    def collate(self, index: list[int]) -> Batch:
        return tagged(self.data.train, self.data.train_tags, index)

    def size(self, batch: Batch) -> int:
        return batch.n_tgt_tokens

    def loss(self, model: nn.Module, batch: Batch, step: int) -> torch.Tensor:
        return batch_loss(model, batch, self.run.train.label_smoothing)[0]

    @torch.inference_mode()
    def validate(self, model: nn.Module, device: torch.device) -> dict[str, float]:
        """Validation loss and perplexity, and (with `train.eval_decode`) dev F1 of greedy parses."""
        data, t = self.data, self.run.train
        collate = partial(tagged, data.valid, data.valid_tags)
        metrics = validation_loss(data.valid, collate, lambda batch: batch_loss(model, batch, t.label_smoothing), t, device)
        if t.eval_decode:
            n = t.eval_max_sentences or len(data.dev_gold)
            decode = self.run.decode.with_overrides(beam=t.eval_beam, nbest=1)
            metrics.update(dev_f1(model, self.vocabs, data.dev_gold[:n], decode, device))
        return metrics
