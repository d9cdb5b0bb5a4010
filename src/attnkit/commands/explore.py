"""`attnkit evaluate`, `plot`, `report` and `serve`: generic verbs that hand the loaded run to its family."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from attnkit.config.args import add_checkpoint, add_dtype, example, non_negative_float, non_negative_int, port, positive_int, read_document, read_input
from attnkit.errors import AttnkitError


def cmd_evaluate(args: argparse.Namespace) -> int:
    from attnkit.families import FAMILIES, run_family
    from attnkit.families.protocol import check_engine, load_engine_run

    check_engine(args.engine, FAMILIES.values(), "attnkit evaluate")
    family = run_family(args.run)

    def load():  # once the family has checked its own options: refuse the other families' ones
        own = set(args.evaluate_options[family.name])
        for dests in args.evaluate_options.values():
            for dest in sorted(set(dests) - own):
                if getattr(args, dest) is not None:
                    raise AttnkitError(f"{args.run}: --{dest.replace('_', '-')} is not an option for a {family.name} run")
        return load_engine_run(args.run, family, args.checkpoint, args.dtype, args.engine)

    print(json.dumps(family.evaluate(args, load), indent=1))
    return 0


def _lines(args: argparse.Namespace) -> list[str | None]:
    """The inputs of `plot`/`report`: TEXT (or --image alone), --input, `report --document` or stdin."""
    if args.text is not None and args.input:
        raise AttnkitError("give a sentence or --input FILE, not both")
    if getattr(args, "document", None) is not None:
        if args.text is not None or args.input:
            raise AttnkitError(f"give a sentence, --input FILE or --document {args.document}, not two")
        return [read_document(args.document)]
    if args.text is not None or args.image is not None:
        return [args.text]
    lines = read_input(args.input)
    if not any(lines):  # an empty or blank stdin or file
        raise AttnkitError(f"{args.input or '<stdin>'}: no input: give a sentence, --input FILE (one a line) or lines on stdin")
    return lines


def _options(args: argparse.Namespace):
    """The `AttentionOptions` of `plot`/`report`, for any source: each refuses, in one line, what it cannot take."""
    from attnkit.sources import AttentionOptions

    return AttentionOptions(target=args.target, image=args.image, truncate=args.truncate, words=args.words, flow=args.flow,
                            attribute=tuple(getattr(args, "attribute", None) or ()), output=getattr(args, "attribute_target", None),
                            checkpoint=args.checkpoint, beam=args.beam, alpha=args.alpha, nbest=args.nbest)  # fmt: skip


def _plot_view(args: argparse.Namespace, source) -> int:
    """`plot SOURCE TEXT --view ...` (or --out FILE.png|.svg): one picture of one kind's maps of one input."""
    import numpy as np

    from attnkit.sources.record import explain_inputs
    from attnkit.sources.store import FloatStore
    from attnkit.viz.views import plot_view

    if args.text is None and args.image is None:
        raise AttnkitError("plot --view draws one input: give TEXT (or --image)")
    (record,) = explain_inputs(source, [args.text], _options(args), lambda: FloatStore(source.name, args.max_cells))
    maps = {v.kind: v for v in record.views}
    kind = args.kind or next(k for k in ("cross", *maps) if k in maps)
    if kind not in maps:
        raise AttnkitError(f"--kind {kind}: this model has {', '.join(maps)}")
    v = maps[kind]
    layers = np.stack([w.numpy() for w in v.layers])  # (L, H, Tq, Tk)
    path = plot_view(args.view or "heatmap", layers, v.rows, v.cols, args.out, args.layer, args.head, f"{source.name}: {kind}", args.top_k)
    print(f"wrote {path}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from attnkit.commands.curves import plot_metrics
    from attnkit.sources import open_source
    from attnkit.sources.record import explain_inputs
    from attnkit.viz.plot import plot_maps

    if args.metrics:
        return plot_metrics(args)
    if len(args.text) > 1:
        raise AttnkitError(f"plot: {len(args.text)} arguments after {args.run}; give one sentence in quotes, or --input FILE (several runs: --metrics)")
    args.text = args.text[0] if args.text else None
    if args.out is None:
        raise AttnkitError("plot: give --out (a folder for the heatmaps; with --view a .png or .svg file)")
    lines = _lines(args)
    source = open_source(args.run, args.checkpoint, args.dtype)
    if args.view is not None or Path(args.out).suffix.lower() in (".png", ".svg"):
        return _plot_view(args, source)
    records = explain_inputs(source, lines, _options(args))
    files = plot_maps([[v for v in r.views if v.role != "summary"] for r in records], args.out)
    print(f"wrote {len(files)} heatmaps to {args.out}")
    return 0


def _long_report(args: argparse.Namespace, text: str) -> int:
    """`report SOURCE --document FILE --long`: the page of a long document, offline (pooled levels, grids, --rows)."""
    from attnkit.sources.hf.long.budget import parse_size
    from attnkit.sources.hf.long.document import read_document as read_long
    from attnkit.sources.hf.long.export import open_model
    from attnkit.sources.hf.long.options import refuse_run
    from attnkit.sources.hf.long.record import long_record
    from attnkit.viz.report import template, write_report

    refuse_run(args.run)
    hf = open_model(args.run)
    budget = parse_size(args.max_memory) if args.max_memory else None
    doc = read_long(hf, text, args.window, tuple(args.rows or ()), budget, args.truncate)
    record = long_record(doc, text, args.max_cells)
    write_report([record], args.out, title=f"attnkit report: {hf.name}", renderer=template("long-view.js"), style=template("long-view.css"))
    print(f"wrote {args.out}")
    return 0


def write_page(
    run: str, lines, out, *, checkpoint: str = "best", title: str | None = None, dtype: str = "fp32", options=None, max_cells: int | None = None
) -> Path:
    """The report page of `lines` through `run` (a run folder or a Hugging Face model): the records of the one
    road (`sources.page.page_records`), drawn by the source's renderer after its training curves. `attnkit
    report` writes it; so does a family's verb that writes a page (`Family.add_commands` hands it this,
    `families.protocol.WritePage`: `explain --out X.html`)."""
    from attnkit.sources import AttentionOptions, open_source
    from attnkit.sources.page import page_records
    from attnkit.sources.store import MAX_CELLS
    from attnkit.viz.report import write_report

    source = open_source(run, checkpoint, dtype)
    curves = source.curves()  # a corrupt line: before any decoding
    records = page_records(source, lines, options or AttentionOptions(checkpoint=checkpoint), max_cells or MAX_CELLS)
    script, style = source.renderer()
    return write_report(records, out, title=title or f"attnkit report: {source.name}", renderer=script, curves=curves, style=style)


def cmd_report(args: argparse.Namespace) -> int:
    if args.long and args.document is None:  # before stdin is read
        raise AttnkitError("report --long: give the document as --document FILE")
    lines = _lines(args)
    if args.long:
        return _long_report(args, lines[0])
    if args.rows or args.max_memory:
        raise AttnkitError("--rows and --max-memory go with --long")
    write_page(args.run, lines, args.out, checkpoint=args.checkpoint, dtype=args.dtype, options=_options(args), max_cells=args.max_cells)
    print(f"wrote {args.out}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from attnkit import extras
    from attnkit.families import FAMILIES
    from attnkit.families.protocol import check_engine

    extras.require("attnkit serve", "fastapi", "uvicorn")  # before the app (it imports fastapi) and the models load
    check_engine(args.engine, FAMILIES.values(), "attnkit serve")
    import torch

    from attnkit.serve.app import Batching, Limits, serve
    from attnkit.sources.hf.long.budget import parse_size

    workers = args.workers or torch.get_num_threads()  # as `translate --workers`: a step's small operations share threads badly
    limits = Limits(args.max_texts, args.max_chars, args.max_cells, args.long_max_chars, parse_size(args.long_cache, "--long-cache"))
    serve(args.runs, host=args.host, port=args.port, limits=limits,
          batching=Batching(args.batch_window_ms, args.max_batch, workers), checkpoint=args.checkpoint, dtype=args.dtype,
          hf=args.hf or (), engine=args.engine)  # fmt: skip
    return 0


def add_evaluate(sub: argparse._SubParsersAction, families: dict) -> None:
    p = sub.add_parser(
        "evaluate",
        help="score a run on a test set, as JSON",
        description="Score a run on held-out data and print JSON; which options apply depends on the run's model family (each family adds its own).",
        epilog=example("attnkit evaluate runs/m30k --src test.en --ref test.de --beam 5"),
    )
    p.add_argument("run", help="run folder")
    add_checkpoint(p)
    p.add_argument("--batch-size", type=positive_int, default=64, help="sentences per batch")
    add_dtype(p)
    _add_engine(p, families)
    p.set_defaults(func=cmd_evaluate, evaluate_options={name: f.add_evaluate_arguments(p) for name, f in families.items()})


def _add_engine(p: argparse.ArgumentParser, families: dict) -> None:
    from attnkit.families.protocol import ATTNKIT, engine_names

    p.add_argument("--engine", choices=engine_names(families.values()), default=ATTNKIT,
                   help="what decodes: attnkit's own search (default) or an engine the run's family offers, exported once beside the run")  # fmt: skip


def _add_source_arguments(p: argparse.ArgumentParser) -> None:
    from attnkit.sources.options import FLOW_HELP, FLOWS
    from attnkit.sources.store import MAX_CELLS

    p.add_argument(
        "--target",
        help="Hugging Face encoder-decoder models and translation runs: the target to attend over (forced decoding; default: the model's own output)",
    )
    p.add_argument("--image", help="Hugging Face vision models: the image file")
    p.add_argument("--truncate", action="store_true", help="Hugging Face models: cut a text longer than the model's positions")
    p.add_argument("--flow", nargs="?", const="explained", choices=FLOWS, help=FLOW_HELP)
    p.add_argument("--max-cells", type=positive_int, default=MAX_CELLS, help=f"attention weights a page may hold (default {MAX_CELLS:,})")


def _add_view_arguments(p: argparse.ArgumentParser) -> None:
    from attnkit.viz.views import VIEWS

    p.add_argument(
        "--view",
        choices=VIEWS,
        help="one picture of one input, to --out FILE.png or .svg (default for a Hugging Face model: heatmap; "
        "hops: each query row's keys as shaded words, a classifier's hops)",
    )
    p.add_argument("--kind", help="with --view: a kind of the model's maps: encoder, decoder_self, cross, self, a family's own "
                   "(a classifier's hops), rollout, flow (default: cross, else the first)")  # fmt: skip
    p.add_argument("--layer", type=positive_int, help="with --view: the layer, from 1 (default: the last)")
    p.add_argument("--head", type=positive_int, help="with --view: the head, from 1 (default: the mean; the head view: every head)")
    p.add_argument("--top-k", type=positive_int, default=5, help="the head view: lines per query (default 5)")


def add(sub: argparse._SubParsersAction) -> None:
    from attnkit.sources.options import METHODS

    for name, help, out, eg in (
        ("plot", "PNG heatmaps of every attention map of a run's outputs or of a Hugging Face model's, or a run's training curves (--metrics)",
         "folder for the PNG files (--view, --metrics: a .png or .svg file)",
         'attnkit plot Helsinki-NLP/opus-mt-en-de "A dog runs." --view heatmap --out dog.png'),
        ("report", "a self-contained HTML report of outputs and their attention (runs and Hugging Face models; a run's training curves)",
         "the HTML file to write", 'attnkit report runs/m30k "A dog runs in the park." --out report.html'),
    ):  # fmt: skip
        p = sub.add_parser(name, help=help, description=f"{help[0].upper()}{help[1:]} (TEXT, --input or stdin; docs/explorer.md).", epilog=example(eg))
        p.add_argument("run", metavar="SOURCE", help="a run folder (`attnkit train`), a Hugging Face model folder or a hub id")
        if name == "plot":
            p.add_argument("text", nargs="*", metavar="TEXT", help="a sentence (instead of --input); with --metrics: more runs to overlay")
        else:
            p.add_argument("text", nargs="?", help="a sentence (instead of --input)")
        p.add_argument("--input", help="one sentence a line")
        p.add_argument("--out", required=name == "report", help=out)
        p.add_argument("--words", action="store_true", help="merge subword pieces into words (keys summed, queries averaged)")
        p.add_argument("--beam", type=positive_int, help="beam size (1 = greedy; default: the run's decode.beam)")
        p.add_argument("--alpha", type=non_negative_float, help="length penalty alpha (default: the run's decode.alpha)")
        if name == "report":
            p.add_argument("--nbest", type=positive_int, help="hypotheses listed per sentence (default: the beam size)")
            p.add_argument("--attribute", nargs="+", choices=METHODS, help="attributions of one output, with Kendall tau (translation runs too)")
            p.add_argument("--attribute-target", type=non_negative_int, metavar="N",
                           help="with --attribute: the output attributed: a class, next-token id or target position (default: 0)")  # fmt: skip
            _add_long_report(p)
        else:
            _add_view_arguments(p)
            p.add_argument("--metrics", action="store_true",
                           help="the training curves of the run(s), from metrics.jsonl, to --out FILE.png or .svg (default: RUN/curves.png; docs/curves.md)")  # fmt: skip
        _add_source_arguments(p)
        add_checkpoint(p)
        add_dtype(p)
        p.set_defaults(func=cmd_plot if name == "plot" else cmd_report, nbest=None)
    _add_serve(sub)


def _add_long_report(p: argparse.ArgumentParser) -> None:
    p.add_argument("--document", metavar="FILE", help="one document as one input, whole (`-`: stdin)")
    p.add_argument("--long", action="store_true", help="with --document: a long document through a Hugging Face decoder or encoder, offline: its pooled "
                   "maps (zoom to the finest level the page holds, --max-cells), the summaries' layer x head grids, and the exact rows of --rows")  # fmt: skip
    p.add_argument("--rows", nargs="+", metavar="Q", help="with --long: the query positions of exact rows: q (negative from the end) or a:b "
                   "(default: a decoder's last token, an encoder's first)")  # fmt: skip
    p.add_argument("--window", type=positive_int, default=64, help="with --long: the local window of the `local` summary, in tokens")
    p.add_argument("--max-memory", metavar="SIZE", help="with --long: the memory budget, e.g. 8G (default: half of the memory available)")


def _add_serve(sub: argparse._SubParsersAction) -> None:
    from attnkit.sources.store import MAX_CELLS

    p = sub.add_parser(
        "serve",
        help="a local web UI and JSON API for runs (and Hugging Face models on its /attention page; long documents on /long)",
        description="Serve runs on local web pages (one per model family) and a JSON API (each family's POST /v1/... route, /v1/models, /healthz, "
        "/openapi.json); --hf models on /attention and, for decoders, long documents on /long (POST /v1/long, exact tiles from "
        "POST /v1/long/tile; their queries and keys are kept in memory within --long-cache).",
        epilog=example("attnkit serve runs/m30k --hf Helsinki-NLP/opus-mt-en-de --port 8000"),
    )
    p.add_argument("runs", nargs="*", metavar="RUN", help="run folders (each served under its folder name)")
    p.add_argument("--hf", action="append", metavar="SOURCE", help="a Hugging Face model folder or hub id for the /attention page "
                   "(a decoder: the /long page too; repeat for more)")  # fmt: skip
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=port, default=8000, help="TCP port (0: any free port)")
    p.add_argument("--max-texts", type=positive_int, default=64, help="texts per request (more: 413); also sets the body limit")
    p.add_argument("--max-chars", type=positive_int, default=1000, help="characters per text (more: 413); also sets the body limit")
    p.add_argument("--max-cells", type=positive_int, default=MAX_CELLS, help=f"attention weights of one /attention page (default {MAX_CELLS:,})")
    p.add_argument("--long-max-chars", type=positive_int, default=500_000, help="characters of one document on the /long page (more: 413)")
    p.add_argument("--long-cache", metavar="SIZE", default="2G",
                   help="memory for the /long page's documents (their queries and keys, pooled maps): each is kept until the documents read "
                   "after it fill SIZE, the least recently used evicted first; a tile of an evicted one reads it again")  # fmt: skip
    p.add_argument("--batch-window-ms", type=non_negative_float, default=5.0, help="how long a batch waits for more requests")
    p.add_argument("--max-batch", type=positive_int, default=32, help="texts per model call (1 = no dynamic batching)")
    p.add_argument("--workers", type=positive_int,
                   help="batches decoded at once per model, one thread each with threads/N intra-op threads (default: the number of threads)")  # fmt: skip
    add_checkpoint(p)
    add_dtype(p)
    from attnkit.families import FAMILIES

    _add_engine(p, FAMILIES)
    p.set_defaults(func=cmd_serve)
