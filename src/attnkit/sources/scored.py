"""One output of one input, ready for the faithfulness metrics: its tokens, p(y | x), how to take tokens
away, the rows of attention it reads, and the score its attributions explain.

`scored_run` (and `sources.hf.scored.scored_hf`) give a `ScoredOutput` per output a source explains: one for a classifier
(the class it predicts), one per output token for a translation run (output t of the hypothesis the
explorer shows, teacher-forced). The attention rows come from the input's record, the one every page
and file is made from (`sources.record.explain_inputs`), through the same `Collector` as `attnkit
attention`'s npz (`compared_rows`): that output's row of each layer's head mean (`<kind>/layer<l>`), of
`rollout` and of `flow` (a classifier's hops: the mean of the hops). What re-runs the model (the score
function, the embeddings, the inputs) the metrics read from the source, not from the record.

How a token is taken away (`ScoredOutput.predict`; `attnkit faithfulness --removal`, `REMOVALS`), and why:

- attnkit runs, `pad` (their default): its embedding (what the family's `Family.attribution` score replaces) is set to zeros,
  the token itself staying in place. Zeros are the baseline integrated gradients starts from, so the
  removals and the attributions agree on what "absent" means; in a sentence classifier they are also
  the embedding of `<pad>` (its row is kept at zero), the model's own "nothing here". The families'
  scores are log-probabilities, so p(y | x') = exp f(x'). Positions stay where they were. `mask`: the
  embedding of `<unk>` instead (what a sentence classifier's word dropout trains it to read as "some word";
  models with a word embedding, `model.embedding`). `delete`: the token's row cut out, the input one
  shorter (Jain & Wallace's leave-one-out; sentence classifiers, whose score reads any length: a
  translation's reads the source at its length); an input with every token removed reads one zero row.
- Hugging Face classifiers (`sources.hf.scored`): the token is replaced by the tokenizer's mask
  token (`[MASK]`; `<unk>` when it has none), the input the model was pretrained to read as "a word is
  missing here". Deleting it instead (as ERASER's BERT pipeline does) would move every later token to
  another position and, for the whole input removed, leave `[CLS] [SEP]`, a text the classifier never
  saw; special tokens (`[CLS]`, `[SEP]`) are never ranked and never removed. `--removal delete` deletes
  them as ERASER does (`hf.scored.deleted_predict`), `pad` makes them padding (the pad token, its
  attention mask 0) in place.

Removals that keep the input's length are one batch of one shape; deletions, one padded batch too (a run's score reads
the model's padding mask, `deleted_removal`; a Hugging Face model its attention mask, `hf.scored.deleted_predict`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from attnkit.data.vocab import UNK
from attnkit.errors import AttnkitError
from attnkit.sources.collect import Collector
from attnkit.sources.options import AttentionOptions
from attnkit.viz.attention_view import ExplainedInput

ScoreFn = Callable[[Tensor], Tensor]
REMOVALS = ("delete", "mask", "pad")  # `attnkit faithfulness --removal` (module docstring)
TOKENS = 8192  # tokens per forward pass of removals: a short input's are one pass, a long one's leave-one-out (T copies) several


@dataclass
class ScoredOutput:
    """One explained output (module docstring)."""

    tokens: list[str]  # the T tokens that are ranked and removed
    label: str  # what is explained: "class 1 (pos)", "output 2 'Hund'"
    p: float  # p(y | x)
    predict: Callable[[Tensor], Tensor]  # keep (N, T) bool -> p(y | the kept tokens) (N,)
    attention: dict[str, Tensor]  # name -> (T,): the output's row of each layer, rollout, flow
    f: ScoreFn  # embeddings (N, T_x, D) -> the score attributed (N,)
    x: Tensor  # (T_x, D) the input's embeddings
    positions: list[int]  # the rows of x (and of the attention rows) that are the T tokens


class Discard:
    """A store for a `Collector` whose maps are not kept (only its `compared` rows are used)."""

    def layer(self, member: str, weights: object) -> None:
        pass

    def summary(self, member: str, weights: object) -> None:
        pass


def compared_rows(record: ExplainedInput, output: tuple[str, int | None] | None, flow: bool) -> dict[str, Tensor]:
    """The rows of the record's attention that `output` (kind, row) reads: name -> (S,) (`Collector.compared`)."""
    collector = Collector(Discard(), flow=flow, output=output)
    for view in record.views:
        if view.role != "summary":
            for weights in view.layers:  # (H, Tq, Tk)
                collector(view.kind, weights)
    collector.finish()
    return dict(collector.compared)


def batched(predict: Callable[[Tensor], Tensor], tokens: int = TOKENS) -> Callable[[Tensor], Tensor]:
    """`predict` over keep (N, T), each distinct mask computed once for the output (the methods share the input
    with every token and the one with none, and short inputs many more), in forward passes of at most
    max(1, tokens // T) inputs: (N,) on the CPU in float64."""
    known: dict[bytes, float] = {}

    def run(keep: Tensor) -> Tensor:
        keep = keep.detach().cpu()
        keys = [row.numpy().tobytes() for row in keep]
        first: dict[bytes, int] = {}  # each new mask's first row
        for i, k in enumerate(keys):
            if k not in known:
                first.setdefault(k, i)
        new = list(first)
        size = max(1, tokens // max(1, keep.size(1)))
        for i in range(0, len(new), size):
            rows = keep[[first[k] for k in new[i : i + size]]]  # (n, T)
            known.update(zip(new[i : i + size], predict(rows).detach().to("cpu", torch.float64).tolist()))
        return torch.tensor([known[k] for k in keys], dtype=torch.float64)  # (N,)

    return run


def embedding_removal(f: ScoreFn, x: Tensor, fill: Tensor | None = None) -> Callable[[Tensor], Tensor]:
    """keep (N, T) -> exp f(x with the rows where keep is False set to `fill` (D,), default 0) (N,): a run's `pad`
    and `mask` removals (module docstring)."""
    row = x.new_zeros(x.size(-1)) if fill is None else fill.to(x.device, x.dtype)  # (D,)

    def predict(keep: Tensor) -> Tensor:
        e = torch.where(keep.to(x.device).unsqueeze(-1), x.unsqueeze(0), row)  # (N, T, D)
        with torch.no_grad():
            return f(e).double().exp()  # (N,)

    return batched(predict)


def deleted_removal(f: Callable[..., Tensor], x: Tensor) -> Callable[[Tensor], Tensor]:
    """keep (N, T) -> exp f(x without the rows where keep is False) (N,): a run's `delete` (module docstring). The
    inputs left, of any lengths, are one padded batch: each input's rows left-aligned (its positions those of the
    shorter input), zeros after them, and f reads the padding mask (`f(e, keep)`, the model's own mask, which it was
    trained with), so each input scores as it would alone; nothing left reads one zero row."""

    def predict(keep: Tensor) -> Tensor:
        keep = keep.to(x.device)
        counts = keep.sum(dim=1, keepdim=True)  # (N, 1)
        slots = torch.arange(max(1, int(counts.max())), device=x.device)  # (W,)
        e = x.new_zeros(keep.size(0), slots.numel(), x.size(-1))  # (N, W, D)
        e[slots < counts] = x.expand(keep.size(0), -1, -1)[keep]  # each input's rows, left-aligned, in order
        with torch.no_grad():
            return f(e, slots < counts.clamp(min=1)).double().exp()  # (N,): an empty input reads its one zero row

    return batched(predict)


def run_removal(loaded, f: ScoreFn, x: Tensor, removal: str, translation: bool) -> Callable[[Tensor], Tensor]:
    """The `predict` of a run's removal (module docstring); one line for a removal the run cannot make."""
    if removal not in REMOVALS:
        raise AttnkitError(f"removal {removal!r}: one of {', '.join(REMOVALS)}")
    if removal == "delete":
        if translation:
            raise AttnkitError(f"{loaded.folder}: --removal delete: a translation's score reads the source at its length; use pad or mask")
        return deleted_removal(f, x)
    if removal == "pad":
        return embedding_removal(f, x)
    embedding = getattr(loaded.model, "embedding", None)
    if not isinstance(embedding, torch.nn.Embedding):
        raise AttnkitError(f"{loaded.folder}: --removal mask: the model has no word embedding to take <unk>'s from; use pad or delete")
    return embedding_removal(f, x, embedding.weight[UNK].detach())


def check_run(loaded) -> None:
    """One line if the run's family gives no score to explain."""
    if loaded.family.attribution is None:
        raise AttnkitError(f"{loaded.folder}: a {loaded.family.name} run gives no score to explain (classifier and translation runs do)")


def scored_run(source, text: str, flow: bool = False, removal: str | None = None) -> list[ScoredOutput]:
    """Every output of `text` through the attnkit run `source.loaded`: its class, or each output token of its hypothesis;
    tokens removed by `removal` (default pad: module docstring)."""
    from attnkit.sources.record import explain_inputs
    from attnkit.sources.run import output_row

    loaded = source.loaded
    check_run(loaded)
    (record,) = explain_inputs(source, [text], AttentionOptions(nbest=1))
    views = [v for v in record.views if v.role != "summary"]
    cross = record.view("cross")
    outputs = [None] if cross is None else list(range(len(cross.rows)))
    scored = []
    for output in outputs:
        row = output_row(views, output)
        attention = compared_rows(record, row, flow)
        tokens = next(v.cols for v in views if v.kind == row[0])
        f, x, label = loaded.family.attribution(loaded, text, output)
        if x.size(0) != len(tokens):
            raise AttnkitError(f"{loaded.folder}: the score reads {x.size(0)} input positions, the attention {len(tokens)}")
        predict = run_removal(loaded, f, x, removal or "pad", cross is not None)
        p = float(predict(torch.ones(1, len(tokens), dtype=torch.bool))[0])
        scored.append(ScoredOutput(list(tokens), label, p, predict, attention, f, x, list(range(len(tokens)))))
    return scored
