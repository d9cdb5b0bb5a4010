"""The records of an attnkit run folder's inputs (`RunSource.read`), through its family's `Family.explain`.

The run's family decodes the lines (the run's decode settings with `--beam`, `--alpha` and `--nbest`,
batched) and gives per line its `ExplainedInput`: the output, the n-best list, the family's fields and
its `AttentionView`s, one per kind (a translation's `encoder`, `decoder_self`, `cross`; a classifier's
`hops`; a captioner's `cross` attention over the image grid). Each layer then goes through the same
`Collector` as a Hugging Face model's, which keeps it as the output needs (`sources.store`) and adds
the summaries. `tokens` are the keys of the first kind, `target_tokens` the queries of the first kind
whose role is "output" (`viz.attention_view`: a decoder's cross or self-attention; the queries of other
kinds, a classifier's hops, are no output). With `--words` the family merges the pieces itself, and
rollout and flow are computed on the word maps.

With `--attribute`, a family that scores an output (`Family.attribution`: a translation's output
token t, `families.translation.attribute`) writes its attributions (`sources.attribute`) and their
agreement with the rows of attention that output reads (`sources.agreement`, `output_row`), scored on
the output the record shows (the same decode settings): row t of
each decoder layer's cross attention, of the cross rollout C R_enc and of the flow, as for a Hugging
Face encoder-decoder model; a model with no cross attention has one output for all its query rows
(a classifier's hops), whose mean is compared. Other runs refuse `--attribute` in one line, as they
do `--attribute` with `--words` (the family merges pieces into words inside its views).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from attnkit.errors import AttnkitError
from attnkit.sources.collect import Collector
from attnkit.sources.options import AttentionOptions
from attnkit.sources.store import Store
from attnkit.viz.attention_view import ExplainedInput


def output_row(views: list, output: int | None) -> tuple[str, int | None] | None:
    """(kind, query row) the explained output reads (the attributed one; flow's default rows): row t (`--attribute-target`, default 0) of the cross attention,
    else every row of the first kind (None: their mean); None when t is past the output (the family's
    score function says so in one line)."""
    cross = next((v for v in views if v.kind == "cross"), None)
    if cross is None:
        return views[0].kind, None
    t = output or 0
    return ("cross", t) if 0 <= t < len(cross.rows) else None


def _check(folder: Path, family, options: AttentionOptions) -> None:
    """One line for the options a run cannot take (module docstring)."""
    if options.target is not None and not family.forced_decoding:
        raise AttnkitError(f"{folder}: --target is for Hugging Face models and translation runs; a {family.name} run attends over its own output")
    if options.truncate:
        raise AttnkitError(f"{folder}: --truncate is for Hugging Face models; an attnkit run reads its input whole")
    if options.attribute and family.attribution is None:
        raise AttnkitError(
            f"{folder}: --attribute: a {family.name} run gives no score to attribute (translation and sentence-classifier runs do, as do Hugging Face models)"
        )
    if options.attribute and options.words:
        raise AttnkitError(f"{folder}: --attribute scores an attnkit run's pieces; leave out --words")


def _finish(loaded, e: ExplainedInput, line: str, options: AttentionOptions, store: Store) -> ExplainedInput:
    """The family's record of one line with its layers kept by `store`, the summaries and the attributions."""
    if not e.views:
        raise AttnkitError(f"{loaded.folder}: the model has no attention maps")
    collector = Collector(store, flow=options.flow, output=output_row(e.views, options.output))
    for view in e.views:
        for weights in view.layers:  # (H, Tq, Tk)
            collector(view.kind, weights)
    collector.finish()
    views = [replace(v, layers=collector.kept[v.kind]) for v in e.views]
    sequences = {"tokens": list(views[0].cols)}
    target = next((v.rows for v in views if v.role == "output"), None)
    if target is not None:
        sequences["target_tokens"] = list(target)
    if collector.flow_rows:
        sequences["flow/rows"] = np.asarray(collector.flow_rows, dtype=np.int64)
    out = replace(e, views=views + collector.summary_views(views), model=loaded.folder.name, sequences=sequences)
    if options.attribute:
        from attnkit.sources.attribute import attribution

        given = {} if options.target is None else {"target": options.target}  # a family with forced decoding scores the given output
        f, x, label = loaded.family.attribution(loaded, line, options.output, **given)
        out.attribution = attribution(f, x, label, options.attribute, sequences["tokens"], collector=collector)
    return out


def read_run(loaded, lines: list[str | None], options: AttentionOptions, store: Callable[[], Store]) -> list[ExplainedInput]:
    """The record of each line through a loaded run (`families.load_run`), as the module docstring says."""
    from attnkit.families.protocol import ExploreOptions

    folder, family = loaded.folder, loaded.family
    _check(folder, family, options)
    lines = [options.image or line for line in lines]
    if any(line is None for line in lines):
        raise AttnkitError(f"{folder}: give the input TEXT")
    decode = loaded.run.decode.with_overrides(beam=options.beam, alpha=options.alpha)
    decode = decode.with_overrides(nbest=options.nbest or decode.beam)
    explained = family.explain(loaded, lines, ExploreOptions(decode, words=options.words, target=options.target))
    if options.attribute:  # the attributions score the output the record shows
        loaded = replace(loaded, run=loaded.run.model_copy(update={"decode": decode}))
    return [_finish(loaded, e, line, options, store()) for e, line in zip(explained, lines)]
