"""The captioning task of the shared training loop (Show, Attend and Tell, Xu et al. 2015).

An example is one image with all its captions: a batch encodes each image once and decodes its
captions teacher-forced. The loss is the summed cross entropy of the caption words (and EOS) plus
lambda * sum_i (1 - sum_t alpha_ti)^2 per caption (eq. 14); a batch's size is its number of
caption tokens. Validation: the loss, and BLEU-4 of greedy captions of up to
`train.eval_max_sentences` validation images against all their references.

The captions are read, checked against the images and encoded once (`attnkit.artifacts.prepared`);
with a frozen Lite0 the features of every captioned image are cached too (`encoders.cached_features`)
and training never touches a pixel.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, fields, replace
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnkit.artifacts.prepared import data_key, load_sequences, prepared, save_sequences
from attnkit.data.batching import pad
from attnkit.data.vocab import BOS, EOS, PAD
from attnkit.decode.beam_state import gather_beams
from attnkit.decode.greedy import greedy
from attnkit.families.captioning import lite0
from attnkit.families.captioning.captions import read_captioned_images
from attnkit.families.captioning.codec import CaptionVocabs, build_vocab, detokenize, encode_caption, vocabs_from_json, vocabs_to_json
from attnkit.families.captioning.config import CaptionRun
from attnkit.families.captioning.encoders import cached_features, effective_encoder
from attnkit.families.captioning.images import ImageSource
from attnkit.families.captioning.model import ShowAttendTell, build, doubly_stochastic
from attnkit.families.captioning.scores import bleu4
from attnkit.families.validation import validation_sums
from attnkit.progress import Bar, counter

log = logging.getLogger("attnkit")
PREPARE_STEPS = 4  # reading the captions, the vocabulary, encoding train, encoding valid


@dataclass
class Split:
    """Captioned images of one split: names, encoded captions per image, raw references."""

    source: ImageSource
    names: list[str]
    captions: list[list[list[int]]]  # [image][caption] word ids
    references: list[list[str]]
    cells: Tensor | None = None  # cached encoder cells (N, P, C) float16, in `names` order


@dataclass
class CaptionBatch:
    """Images (or their cached cells) and their captions; ``image_of`` maps a caption to its image."""

    inputs: Tensor  # cells (B, P, C) or images (B, 3, H, W)
    image_of: Tensor  # (N,)
    tokens_in: Tensor  # (N, T): BOS y_1 .. y_L
    tokens_out: Tensor  # (N, T): y_1 .. y_L EOS

    def to(self, device: torch.device | str) -> CaptionBatch:
        return replace(self, **{f.name: getattr(self, f.name).to(device) for f in fields(self)})


def resolve(path: str, base: str | None) -> str:
    """A data path, relative ones under `base` (``attnkit train --data`` or ``data.dir``)."""
    return str(Path(base) / path) if base and not Path(path).is_absolute() else path


def _read(run: CaptionRun, data_dir: str | None) -> dict[str, tuple]:
    d, base = run.data, data_dir or run.data.dir
    splits = {}
    for name in ("train", "valid"):
        captions, images = (resolve(path, base) for path in d.split_files(name))
        captioned, source = read_captioned_images(captions, images, image_column=d.image_column, caption_column=d.caption_column,
                                                  split=name, shared=d.shared_images)  # fmt: skip
        splits[name] = (captions, captioned, source)
    return splits


def load_splits(run: CaptionRun, run_dir: Path, data_dir: str | None) -> tuple[CaptionVocabs, Split, Split]:
    """The prepared captions (and, for a frozen Lite0, the cached features) of `run`."""
    with counter(PREPARE_STEPS, "preparing data", unit="step") as bar:  # the stage it is in, in the postfix
        bar.set_postfix_str("reading captions")
        splits = _read(run, data_dir)
        bar.update(1)
        settings = run.data.model_dump(mode="json", exclude={"dir", "images", "captions", "train_images", "valid_images", "train_captions", "valid_captions"})
        key = data_key({"family": "captioning", "data": settings}, list(dict.fromkeys(splits[s][0] for s in ("train", "valid"))))
        folder = prepared(run_dir.parent / ".attnkit-cache", key, partial(_prepare, run, splits, bar))
        bar.update(PREPARE_STEPS - bar.n)  # the stages a cached copy stood in for
    info = json.loads((folder / "data.json").read_text(encoding="utf-8"))
    ids = load_sequences(folder / "captions.safetensors")
    vocab = vocabs_from_json(info["vocabs"], folder).vocab
    out = []
    for name in ("train", "valid"):
        counts, flat, cut = info[f"{name}_counts"], ids[f"{name}_ids"], 0
        grouped = []
        for n in counts:
            grouped.append(flat[cut : cut + n])
            cut += n
        out.append(Split(splits[name][2], info[f"{name}_names"], grouped, info[f"{name}_refs"]))
    return CaptionVocabs(vocab, effective_encoder(run.model.encoder)), out[0], out[1]


def _prepare(run: CaptionRun, splits: dict, bar: Bar, folder: Path) -> None:
    """Count the training words and encode every caption into `folder`, a stage of `bar` each."""
    d = run.data
    bar.set_postfix_str("vocabulary")
    vocab = build_vocab((c for item in splits["train"][1] for c in item.captions), d.min_freq)
    bar.update(1)
    info, sequences = {"vocabs": vocabs_to_json(CaptionVocabs(vocab, run.model.encoder), folder)}, {}
    for name in ("train", "valid"):
        bar.set_postfix_str(f"encoding {name}")
        captioned = splits[name][1]
        info[f"{name}_names"] = [item.image for item in captioned]
        info[f"{name}_refs"] = [list(item.captions) for item in captioned]
        info[f"{name}_counts"] = [len(item.captions) for item in captioned]
        sequences[f"{name}_ids"] = [encode_caption(vocab, c, d.max_len) for item in captioned for c in item.captions]
        bar.update(1)
    save_sequences(folder / "captions.safetensors", sequences)
    (folder / "data.json").write_text(json.dumps(info, ensure_ascii=False), encoding="utf-8")


def collate_split(split: Split, index: list[int], size: int) -> CaptionBatch:
    """The images `index` of `split` (cached cells, else decoded images) with all their captions."""
    if split.cells is not None:
        inputs = split.cells[index].float()  # (B, P, C)
    else:
        inputs = split.source.load([split.names[i] for i in index], size=size)  # (B, 3, H, W)
    captions = [(b, c) for b, i in enumerate(index) for c in split.captions[i]]
    tokens_in, _ = pad([[BOS, *c] for _, c in captions])  # (N, T)
    tokens_out, _ = pad([[*c, EOS] for _, c in captions])  # (N, T)
    return CaptionBatch(inputs, torch.tensor([b for b, _ in captions]), tokens_in, tokens_out)


def cells_of(model: ShowAttendTell, inputs: Tensor) -> Tensor:
    """Encoder cells ``(B, P, C)`` of a batch's inputs (cached cells pass through)."""
    return model.image_grid(inputs) if inputs.dim() == 4 else inputs  # (B, P, C)


def caption_loss(model: ShowAttendTell, batch: CaptionBatch, lam: float, smoothing: float = 0.0) -> tuple[Tensor, Tensor]:
    """Summed cross entropy + lambda * doubly stochastic penalty, and the summed cross entropy alone."""
    annotations = model.annotate(cells_of(model, batch.inputs)).features  # (B, P, D)
    state = gather_beams(model.init_state(annotations), batch.image_of)  # one row per caption
    embedded = model.embedding(batch.tokens_in)  # (N, T, E)
    outs, alphas = [], []
    for t in range(batch.tokens_in.size(1)):
        out, state, alpha = model.advance(embedded[:, t], state)  # (N, E), state, (N, P)
        outs.append(out)
        alphas.append(alpha)
    keep = batch.tokens_out != PAD  # (N, T)
    logits = model.logits(torch.stack(outs, dim=1)[keep])  # (tokens, V)
    ce = F.cross_entropy(logits.float(), batch.tokens_out[keep], reduction="sum", label_smoothing=smoothing)  # ()
    if model.attend is None or lam == 0.0:
        return ce, ce.detach()
    return ce + lam * doubly_stochastic(torch.stack(alphas, dim=1).float(), keep).sum(), ce.detach()


class CaptionTask:
    """Captioned images for a `ShowAttendTell`; a batch's size is its number of caption tokens."""

    unit = "tokens"

    def __init__(self, run: CaptionRun, run_dir: Path, data_dir: str | None) -> None:
        self.run, self.cache = run, run_dir.parent / ".attnkit-cache"
        self.vocabs, self.train, self.valid = load_splits(run, run_dir, data_dir)
        self.encoder = None
        if run.model.cached and self.vocabs.encoder == "lite0":
            self.encoder = lite0.load_pretrained(self.cache / "lite0")
            for split in (self.train, self.valid):
                split.cells = cached_features(self.cache, split.source, split.names, run.model.input_size, self.encoder)  # (N, P, C)
        self.train_lengths = self._lengths(self.train)
        log.info("%d training images (%d captions), %d validation images, %d words", len(self.train.names),
                 sum(map(len, self.train.captions)), len(self.valid.names), len(self.vocabs.vocab))  # fmt: skip

    def _lengths(self, split: Split) -> tuple[list[int], list[int]]:
        cells = self.run.model.grid**2
        return [cells] * len(split.names), [max(len(c) for c in caps) + 1 for caps in split.captions]

    def build_model(self) -> nn.Module:
        """The captioner; a Lite0 encoder gets the ImageNet weights (frozen unless `finetune`)."""
        model = build(self.run, self.vocabs)
        if self.vocabs.encoder == "lite0":
            model.encoder.load_state_dict((self.encoder or lite0.load_pretrained(self.cache / "lite0")).state_dict())
            model.encoder.requires_grad_(self.run.model.finetune)
        return model

    def collate(self, index: list[int]) -> CaptionBatch:
        return collate_split(self.train, index, self.run.model.input_size)

    def size(self, batch: CaptionBatch) -> int:
        return int((batch.tokens_out != PAD).sum())

    def loss(self, model: nn.Module, batch: CaptionBatch, step: int) -> Tensor:
        """Summed cross entropy + lambda * sum_i (1 - sum_t alpha_ti)^2 (Xu et al. eq. 14)."""
        return caption_loss(model, batch, self.run.model.lambda_, self.run.train.label_smoothing)[0]

    @torch.inference_mode()
    def validate(self, model: nn.Module, device: torch.device) -> dict[str, float]:
        """Validation loss and per-token cross entropy; BLEU-4 (0-100) of greedy captions."""
        t, split = self.run.train, self.valid
        sums = validation_sums(self._lengths(split), lambda index: collate_split(split, index, self.run.model.input_size),
                               lambda batch: caption_loss(model, batch, self.run.model.lambda_),
                               lambda batch, out: {"loss": out[0], "ce": out[1], "tokens": self.size(batch)}, t, device)  # fmt: skip
        metrics = {"loss": sums["loss"] / sums["tokens"], "ce": sums["ce"] / sums["tokens"]}
        if t.eval_decode:
            n = min(t.eval_max_sentences or len(split.names), len(split.names))
            hyps = []
            with counter(n, "validating", unit="img") as bar:
                for start in range(0, n, 64):
                    index = list(range(start, min(start + 64, n)))
                    cells = cells_of(model, collate_split(split, index, self.run.model.input_size).inputs.to(device))  # (B, P, C)
                    keep = torch.ones(cells.shape[:2], dtype=torch.bool, device=device)  # (B, P)
                    found = greedy(model, cells, keep, max_len_a=0.0, max_len_b=self.run.data.max_len + 1, bos=BOS, eos=EOS)
                    hyps += [detokenize(self.vocabs.vocab, h.tokens) for h in found]
                    bar.update(len(index))
            metrics["bleu4"] = bleu4(hyps, split.references[:n])
        return metrics
