"""The parsing family's CLI: `attnkit parse`, `attnkit evalb`, and its options of `attnkit evaluate`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnkit.artifacts.runs import LoadedRun, load_run
from attnkit.config.args import add_checkpoint, add_text, example, positive_int, read_texts
from attnkit.config.schema import Decode
from attnkit.errors import AttnkitError, DataError
from attnkit.families.parsing.chart.codec import ChartVocabs
from attnkit.families.parsing.chart.infer import parse
from attnkit.families.parsing.codec import tokenize
from attnkit.families.parsing.evalb import score, score_files
from attnkit.families.parsing.evalb_params import COLLINS, read_params
from attnkit.families.parsing.infer import tag_accuracy
from attnkit.families.parsing.trees import Tree, preprocess_treebank, read_treebank, split_sample, split_wsj
from attnkit.families.protocol import WritePage, add_once
from attnkit.progress import counter


def add_commands(sub: argparse._SubParsersAction, family: object, write_page: WritePage) -> None:
    p = sub.add_parser("parse", help="constituency trees of sentences (parsing runs)",
                       description="Parse sentences (one a line, tokenised PTB-style; --raw to tokenise) into one bracketed tree a line.",
                       epilog=example('attnkit parse runs/parse-ptb "The cat sat on the mat ."'))  # fmt: skip
    p.add_argument("run", help="run folder of a parsing model")
    add_text(p, "sentences (tokenised PTB-style, or --raw)")
    p.add_argument("--raw", action="store_true", help="the lines are raw text: tokenise them PTB-style first")
    add_decode_arguments(p)
    add_checkpoint(p)
    p.set_defaults(func=cmd_parse, family=family, group="use")
    e = sub.add_parser("evalb", help="score two bracketed-tree files as EVALB does (COLLINS.prm by default)",
                       description="EVALB (Sekine & Collins 1997): GOLD and TEST hold one bracketed sentence a line; prints the summary as JSON.",
                       epilog=example("attnkit evalb gold.txt parsed.txt --table"))  # fmt: skip
    e.add_argument("gold", help="gold trees, one a line")
    e.add_argument("test", help="parsed trees, one a line (a blank line is a skipped sentence)")
    e.add_argument("--params", help="an EVALB parameter file (default: COLLINS.prm's settings)")
    e.add_argument("--table", action="store_true", help="print EVALB's per-sentence table and summary instead of JSON")
    e.set_defaults(func=cmd_evalb, group="use")


def add_decode_arguments(p: argparse.ArgumentParser) -> None:
    add_once(p, "--beam", type=positive_int, help="beam size (1 = greedy); default: the run's decode.beam")
    add_once(p, "--alpha", type=float, help="length penalty; default: the run's decode.alpha")
    add_once(p, "--batch-size", type=positive_int, default=64, help="sentences per batch")


def decode_settings(loaded: LoadedRun, args: argparse.Namespace) -> Decode:
    return loaded.run.decode.with_overrides(beam=args.beam, alpha=args.alpha, nbest=1, batch_size=args.batch_size)


def cmd_parse(args: argparse.Namespace) -> int:
    lines, source = read_texts(args)
    sentences = [tokenize(line) if args.raw else line.split() for line in lines]
    loaded = load_run(args.run, args.family, args.checkpoint)
    results = parse(loaded.model, loaded.vocabs, sentences, decode_settings(loaded, args), source=source)
    for r in results:
        print(r.tree)
    return 0


def cmd_evalb(args: argparse.Namespace) -> int:
    params = read_params(args.params) if args.params else COLLINS
    report = score_files(args.gold, args.test, params)
    print(report.format_table(), end="") if args.table else print(json.dumps(report.summary(), indent=1))
    return 0


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> list[str]:
    """`attnkit evaluate` options of parsers; returns their names."""
    add_once(parser, "--trees", help="gold trees (parsers): a .mrg file, a folder or a zip; scored with EVALB (COLLINS.prm)")
    add_once(parser, "--split", choices=["dev", "test"], help="parsers: score only this part of --trees, split as the run's data.split")
    add_decode_arguments(parser)
    return ["trees", "split", "beam", "alpha"]


def gold_trees(path: str, split: str | None, run: Any) -> list[Tree]:
    """The trees of a file, folder or zip, preprocessed as for training (errors name file and tree),
    or with `split` only that part of them (`data.split` of the run: by file or by section)."""
    files = preprocess_treebank(read_treebank(path))
    if split is None:
        return [tree for trees in files.values() for tree in trees]
    if run.data.split == "files":
        raise DataError(
            f"{path}: --split dev|test splits a treebank as data.split does; this run read its own files (data.split: files), so give the test trees alone with --trees and no --split"
        )
    trees = (split_sample if run.data.split == "sample" else split_wsj)(files)[split]
    if not trees:
        raise DataError(f"{path}: no {split} trees in it (data.split: {run.data.split})")
    return trees


def evaluate(args: argparse.Namespace, load: Callable[[], LoadedRun]) -> dict:
    """Parse the gold trees' sentences (with their gold POS tags: COLLINS.prm deletes punctuation by
    its tag) and score them with EVALB; a model with a tagger also gets its tagging accuracy. A chart
    parser decodes by CKY (no beam)."""
    if not args.trees:
        raise AttnkitError(f"{args.run}: a parser: evaluate it with --trees FILE")
    if not Path(args.trees).exists():
        raise DataError(f"{args.trees}: no such file or folder")
    loaded = load()
    gold = gold_trees(args.trees, args.split, loaded.run)
    decode = decode_settings(loaded, args)
    with counter(len(gold), "evaluating", unit="sent") as bar:
        results = parse(loaded.model, loaded.vocabs, [t.words() for t in gold], decode, tags=[t.tags() for t in gold], source=args.trees,
                        progress=bar.update)  # fmt: skip
    report = score(gold, [r.tree for r in results], COLLINS).summary()
    tagger = getattr(loaded.model, "tagger", None) is not None
    if tagger:
        report["tagger_accuracy"] = tag_accuracy(results, [t.tags() for t in gold])
    return {**report, "repaired": sum(r.repaired for r in results), "sentences": len(gold), "split": args.split,
            "decode": "CKY (exact)" if isinstance(loaded.vocabs, ChartVocabs) else
                      {"beam": decode.beam, "alpha": decode.alpha, "max_len_a": decode.max_len_a, "max_len_b": decode.max_len_b},
            "params": "COLLINS.prm",
            "tags": "gold POS tags in the parses (tagger_accuracy: the model's own, every word)" if tagger else "gold POS tags (the parser predicts none)"}  # fmt: skip
