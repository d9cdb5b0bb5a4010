"""`attnkit heads`: what each head looks at over a text file, or (`--importance`, `--prune`) which heads a
Transformer run needs (`sources.importance`); `attnkit faithfulness`: is attention an explanation, over
a data set (docs/analysis.md).

Generic over families: it reads the run's records (`sources.record.explain_inputs`, as `plot` does) and
keeps the views whose kind declares its queries and keys positions of one sequence (`AttentionKind.positions`:
a translation's or parser's `encoder` and `decoder_self`), one `HeadStats` per kind. It selects by kind, never by shape: cross attention
is square whenever the output is as long as the input, and a classifier's `hops` whenever the text
has r words, yet neither has positions to compare.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from attnkit.config.args import DTYPES, add_checkpoint, add_dtype, add_text, example, positive_int, read_texts
from attnkit.errors import AttnkitError

SEPARATORS = ("</s>", "[SEP]")


def head_statistics_of_run(loaded, lines: list[str], separators: list[str], beam: int = 1) -> dict:
    """Head statistics of each self-attention kind of `loaded`'s outputs for `lines`: kind -> HeadStats."""
    from attnkit.analysis.heads import HeadStats
    from attnkit.progress import counter
    from attnkit.sources import AttentionOptions
    from attnkit.sources.record import explain_inputs
    from attnkit.sources.source import RunSource

    options = AttentionOptions(beam=beam, nbest=1)
    stats: dict[str, HeadStats] = {}
    step = loaded.run.decode.batch_size  # the records of one batch at a time, so that the bar moves
    with counter(len(lines), "heads", unit="sent") as bar:
        for start in range(0, len(lines), step):
            for record in explain_inputs(RunSource(loaded), lines[start : start + step], options):
                for view in record.views:
                    if not view.positions:
                        continue
                    if view.kind not in stats:
                        stats[view.kind] = HeadStats(len(view.layers), view.layers[0].size(0), frozenset(separators))
                    stats[view.kind].add(view.layers, view.cols)
                bar.update(1)
    if not stats:
        raise AttnkitError(f"{loaded.folder}: the model has no self-attention over positions; head statistics need it")
    return stats


def cmd_heads(args: argparse.Namespace) -> int:
    from attnkit.families import load_run
    from attnkit.io import atomic_write_text
    from attnkit.viz.heads import plot_head_grid

    texts, source = read_texts(args)
    lines = [line for line in texts if line]
    if not lines:
        raise AttnkitError(f"{source}: no sentences")
    loaded = load_run(args.run, args.checkpoint, dtype=DTYPES[args.dtype])
    out = Path(args.out)
    if args.importance or args.prune is not None:
        return _importance(loaded, lines, source, out, args.prune)
    stats = head_statistics_of_run(loaded, lines, args.separators, args.beam)
    doc = {"run": str(args.run), "input": args.input, "kinds": {kind: s.to_json() for kind, s in stats.items()}}
    atomic_write_text(out / "heads.json", json.dumps(doc, indent=1) + "\n")
    for kind, s in stats.items():
        plot_head_grid(s.means(), out / f"heads-{kind}.png", title=f"{Path(args.run).name}: {kind}, {s.sentences} sentences")
    print(f"wrote {out / 'heads.json'} and {len(stats)} grid plots ({', '.join(stats)}) for {len(lines)} sentences")
    return 0


def _importance(loaded, lines: list[str], source: str, out: Path, prune: int | None) -> int:
    """`heads --importance [--prune [STEP]]`: OUT/importance.json (`sources.importance`; resumable, SIGTERM as SIGINT;
    split across torchrun's ranks)."""
    from attnkit.commands.ranks import ranks
    from attnkit.io import atomic_write_text, interruptible
    from attnkit.sources.importance import PROGRESS, run_importance

    with interruptible(), ranks() as shard:
        doc = run_importance(loaded, lines, source, out, prune, shard)
        if doc is not None:
            atomic_write_text(out / "importance.json", json.dumps(doc, indent=1) + "\n")
    if doc is None:  # a rank other than 0 under torchrun
        print(f"rank {shard.rank}: its pairs and steps are in {out / shard.file(PROGRESS)}; importance.json is rank 0's")
        return 0
    least = ", ".join(doc["order"][:3])
    pruned = f"; accuracy {doc['pruning'][0]['accuracy']:.1f}% with every head, {len(doc['pruning'])} pruning steps" if prune else ""
    print(f"wrote {out / 'importance.json'}: {doc['heads']} heads over {doc['pairs']} pairs, least important {least}{pruned}")
    return 0


def cmd_faithfulness(args: argparse.Namespace) -> int:
    from attnkit.commands.ranks import ranks
    from attnkit.io import interruptible
    from attnkit.progress import counter, moves
    from attnkit.sources import open_source
    from attnkit.sources.faithfulness import EXAMPLES, METHODS, Settings, run_faithfulness

    settings = Settings(methods=tuple(m for m in METHODS if m in args.methods), seed=args.seed, truncate=args.truncate,
                        text_column=args.text_column, text2_column=args.text2_column, removal=args.removal)  # fmt: skip
    loaded = open_source(args.source, args.checkpoint)
    loaded.check_scored()  # one line before any work (nothing written to --out) if the source has nothing to explain
    with interruptible(), ranks() as shard, counter(0, "faithfulness", unit="text") as bar:
        doc = run_faithfulness(loaded, args.source, _data_set(args), args.out, settings, args.limit, moves(bar), shard)
    out = Path(args.out)
    if doc is None:  # a rank other than 0 under torchrun
        print(f"rank {shard.rank}: its texts are in {out / shard.file(EXAMPLES)}; the summary is rank 0's")
        return 0
    print(f"wrote {out / 'faithfulness.json'}, {out / 'faithfulness.md'} and {out / 'deletion.png'}: "
          f"{doc['run']['examples']} texts, {doc['outputs']} outputs, {len(doc['methods'])} rankings")  # fmt: skip
    return 0


def _data_set(args: argparse.Namespace) -> Path:
    """The file faithfulness reads: --input as it is (a table or a text file), else the TEXT arguments or stdin,
    written to OUT/texts.txt, one a line (so that a run on the same texts resumes)."""
    from attnkit.io import atomic_write_text

    if args.input and not args.text:
        return Path(args.input)
    texts, where = read_texts(args)
    if not any(text.strip() for text in texts):
        raise AttnkitError(f"{where}: no texts")
    path = Path(args.out) / "texts.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "".join(text.replace("\n", " ") + "\n" for text in texts))
    return path


def add_faithfulness(sub: argparse._SubParsersAction) -> None:
    from attnkit.sources.faithfulness import METHODS
    from attnkit.sources.scored import REMOVALS

    p = sub.add_parser(
        "faithfulness",
        help="is attention an explanation? ERASER comprehensiveness/sufficiency, deletion curves and Kendall tau over a data set",
        description="Rank each text's tokens by every layer's attention, rollout, flow, input x gradient, integrated gradients, "
        "leave-one-out and a random ranking, remove the top-ranked tokens and measure the output's probability "
        "(DeYoung et al. 2020; docs/analysis.md). Resumable: run it again with the same --out. Under torchrun the texts "
        "are split across the ranks (docs/distributed.md).",
        epilog=example("attnkit faithfulness runs/sase-sst2 --input dev.csv --out faith/ --limit 200"),
    )
    p.add_argument("source", help="an attnkit run folder (classifier or translation), or a Hugging Face sequence classifier (folder or hub id)")
    add_text(p, "texts to measure (or a TSV/CSV/JSONL table with a text column; a label column is not needed)")
    p.add_argument("--out", required=True, help="folder for examples.jsonl (the progress), faithfulness.json, faithfulness.md and deletion.png")
    p.add_argument("--limit", type=positive_int, help="the first N texts only (default: every text)")
    p.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS), help="the rankings (default: all)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random ranking (default 0)")
    p.add_argument("--text-column", default="text", help="the text's column in TSV/CSV/JSONL (default: text)")
    p.add_argument("--text2-column", help="the second text's column, for sentence pairs")
    p.add_argument("--truncate", action="store_true", help="Hugging Face models: cut a text longer than the model's positions")
    p.add_argument("--removal", choices=REMOVALS, help="how a token is taken away: delete it, mask it (<unk>, [MASK]) or pad it "
                   "(zero embedding, or the pad token outside the attention mask); default: pad for a run, mask for a Hugging Face model")  # fmt: skip
    add_checkpoint(p)
    p.set_defaults(func=cmd_faithfulness)


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "heads",
        help="per-head attention statistics over a text file (JSON and a layers x heads plot), or head importance and pruning",
        description="Per layer and head: entropy, mean attended distance, and the share of attention on the first token, "
        "the separator/end token, punctuation, the previous and the next token (Clark et al. 2019). With --importance: "
        "each head's importance, Michel et al. (2019)'s gradient proxy over source<TAB>reference lines (a source alone: "
        "scored against the run's own output); --prune also masks the least important heads STEP at a time and reports "
        "teacher-forced accuracy and loss at each step (docs/analysis.md); resumable, and under torchrun the pairs and steps "
        "are split across the ranks (docs/distributed.md).",
        epilog=example("attnkit heads runs/m30k --input test.en --out heads/", "attnkit heads runs/m30k --input pairs.tsv --out heads/ --importance --prune 8"),
    )
    p.add_argument("run", help="run folder")
    add_text(p, "sentences (--importance: source<TAB>reference lines, or sources alone)")
    p.add_argument(
        "--out",
        required=True,
        help="folder for heads.json and heads-KIND.png (--importance: importance.json, and importance.jsonl, the progress a rerun resumes from)",
    )
    p.add_argument("--importance", action="store_true", help="head importance (Michel et al. 2019) instead of the statistics")
    p.add_argument("--prune", type=positive_int, nargs="?", const=1, metavar="STEP",
                   help="with the importance, mask the least important heads STEP at a time (default 1) and report the metric at each step")  # fmt: skip
    p.add_argument("--beam", type=positive_int, default=1, help="beam size of the decoded outputs (default 1: greedy)")
    p.add_argument("--separators", nargs="+", default=list(SEPARATORS), help=f"separator/end tokens (default: {' '.join(SEPARATORS)})")
    add_checkpoint(p)
    add_dtype(p)
    p.set_defaults(func=cmd_heads)
    add_faithfulness(sub)
