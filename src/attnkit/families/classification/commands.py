"""The sentence family's CLI: `attnkit classify`, `embed`, `explain`, and its options of `attnkit evaluate`."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from attnkit.artifacts.runs import LoadedRun, load_run
from attnkit.config.args import add_checkpoint, add_text, example, positive_int, read_texts
from attnkit.errors import AttnkitError
from attnkit.families.classification.explain import write_png
from attnkit.families.classification.infer import classify_texts, embed_texts, evaluate_labelled
from attnkit.families.protocol import WritePage, add_once
from attnkit.io import atomic_path

VERBS = {
    "classify": ("label and class probabilities of each sentence", 'attnkit classify runs/sst5 "a gripping, funny film"'),
    "embed": ("sentence embeddings M (r x 2u, flattened) as .npy", "attnkit embed runs/sst5 --input sentences.txt --out embeddings.npy"),
    "explain": ("HTML/PNG of the words each attention hop looked at", 'attnkit explain runs/sst5 "a gripping, funny film" --out hops.html'),
}


def add_commands(sub: argparse._SubParsersAction, family: object, write_page: WritePage) -> None:
    for name, (help, eg) in VERBS.items():
        p = sub.add_parser(
            name,
            help=help,
            description=f"Sentence classifiers (sase runs): {help}. One sentence a line (premise<TAB>hypothesis for pair models).",
            epilog=example(eg),
        )
        p.add_argument("run", help="run folder of a sase model")
        add_text(p, "sentences (premise<TAB>hypothesis for pair models)")
        if name == "explain":
            p.add_argument(
                "--out",
                action="append",
                required=True,
                metavar="FILE",
                help="OUT.html: the report page (as attnkit report); OUT.png: a PNG image (repeat for both)",
            )
            p.set_defaults(write_page=write_page)
        if name == "embed":
            p.add_argument("--out", required=True, metavar="X.npy", help="output .npy file (N rows)")
            p.add_argument("--mean-hops", action="store_true", help="the mean over the r hops (N x 2u) instead of flattened M")
        if name == "classify":
            p.add_argument("--jsonl", action="store_true", help="one JSON object a line: label, probs, tokens, attention")
        add_checkpoint(p)
        p.add_argument("--batch-size", type=positive_int, default=64, help="sentences per batch")
        p.set_defaults(func={"classify": cmd_classify, "embed": cmd_embed, "explain": cmd_explain}[name], family=family,
                       group="explore" if name == "explain" else "use")  # fmt: skip


def _texts(args: argparse.Namespace) -> tuple[list[str], str]:
    """The texts to classify (the TEXT arguments, --input or stdin) and how errors name one."""
    texts, source = read_texts(args)
    return texts, source if args.text else f"{source}, line"


def _classifier(args: argparse.Namespace) -> LoadedRun:
    return load_run(args.run, args.family, args.checkpoint)


def cmd_classify(args: argparse.Namespace) -> int:
    texts, source = _texts(args)
    results = classify_texts(_classifier(args), texts, args.batch_size, source=source)
    for r in results:
        if args.jsonl:
            print(json.dumps(asdict(r), ensure_ascii=False))
        else:
            print(r.label + "\t" + " ".join(f"{label}={p:.4f}" for label, p in r.probs.items()))
    return 0


def cmd_embed(args: argparse.Namespace) -> int:
    import numpy as np

    if Path(args.out).is_dir():
        raise AttnkitError(f"{args.out}: is a directory, expected a .npy file path")
    texts, source = _texts(args)
    matrix = embed_texts(_classifier(args), texts, args.batch_size, mean_hops=args.mean_hops, source=source)
    with atomic_path(args.out) as tmp, open(tmp, "wb") as f:
        np.save(f, matrix)
    print(f"{matrix.shape[0]} embeddings of size {matrix.shape[1]} written to {args.out}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """The PNG of the hops (`explain.write_png`) and the report page (`args.write_page`, the core's), by suffix."""
    if not args.text and not args.input:
        raise AttnkitError("give a sentence (or several) or --input FILE")
    for out in args.out:
        if Path(out).suffix.lower() not in (".html", ".htm", ".png"):
            raise AttnkitError(f"--out {out}: expected a .html or .png file")
    loaded = _classifier(args)
    if loaded.run.model.pooling != "attention":
        raise AttnkitError(f"{args.run}: model.pooling is {loaded.run.model.pooling!r}; only attention pooling has weights to show")
    texts, source = _texts(args)
    results = classify_texts(loaded, texts, args.batch_size, source=source)
    for out in args.out:
        if Path(out).suffix.lower() == ".png":
            write_png(out, results)
        else:
            args.write_page(args.run, texts, out, checkpoint=args.checkpoint, title=f"attnkit explain: {args.run}")
    print(f"wrote {' and '.join(args.out)}")
    return 0


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> list[str]:
    """`attnkit evaluate` options of sentence classifiers; returns their names."""
    add_once(
        parser, "--labelled", metavar="FILE", help="sentence classifiers: the labelled test file (SST trees, SNLI TSV, or TSV/CSV/JSONL with the run's columns)"
    )
    return ["labelled"]


def evaluate(args: argparse.Namespace, load: Callable[[], LoadedRun]) -> dict:
    """Check the options, then load the run (`load()`) and score it."""
    if not args.labelled:
        raise AttnkitError(f"{args.run}: a sentence classifier: evaluate it with --labelled FILE")
    return evaluate_labelled(load(), args.labelled, args.batch_size)
