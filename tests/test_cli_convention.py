"""The command-line convention (docs/conventions.md, "Command line"), checked over the whole parser.

The test walks `attnkit.cli.build_parser()`, so a command added anywhere (a family's verb, a new
generic one) is held to the same rules with no change here, except a new row in `MEANINGS` when it
brings an option that means something no option meant before.
"""

from __future__ import annotations

import argparse

import pytest

from attnkit.cli import build_parser, main
from attnkit.config.args import Renamed, positive_int, renamed

# Every option name, by what it means: one name per meaning, and a name means one thing everywhere.
# A new option takes the name of its meaning here; only a new meaning gets a new row.
MEANINGS: dict[str, tuple[str, ...]] = {
    "the path the command writes, a file or a folder (a second file is named for what it holds)": ("--out", "--attention"),
    "a file of input texts, one a line (beside positional TEXT, else stdin)": ("--input",),
    "one whole file as one input text (`-`: stdin)": ("--document",),
    "the long road of `attention` (summaries, pooled maps, exact rows at length)": ("--long", "--rows", "--layers", "--heads", "--window", "--max-memory"),
    "things done at once: decoding threads, batches, trained variants": ("--workers",),
    "a folder holding a training corpus": ("--data",),
    "files of a test set, by their role": ("--src", "--ref", "--labelled", "--trees", "--images", "--captions", "--split"),
    "one image file as the input": ("--image",),
    "the target text an encoder-decoder attends over": ("--target",),
    "the output an attribution explains (a class, token id or position)": ("--attribute-target",),
    "decoding": ("--beam", "--alpha", "--nbest", "--batch-size", "--max-new-tokens", "--mask-heads", "--engine", "--dtype", "--checkpoint"),
    "attention views": ("--words", "--flow", "--attribute", "--truncate", "--view", "--kind", "--layer", "--head", "--top-k", "--max-cells"),
    "configs and training": ("--set", "--resume", "--init", "--grid", "--only", "--steps", "--minutes", "--last", "--config"),
    "output formats": ("--jsonl", "--table", "--format", "--quantization", "--mean-hops"),
    "the server": ("--hf", "--host", "--port", "--max-texts", "--max-chars", "--batch-window-ms", "--max-batch"),
    "a run's training and validation data files (`init FAMILY`, `train FAMILY`)": ("--train", "--valid"),
    "the columns of a table file (TSV/CSV/JSONL)": (
        "--text-column",
        "--text2-column",
        "--label-column",
        "--src-column",
        "--tgt-column",
        "--image-column",
        "--caption-column",
    ),
    "data tools": (
        "--pair",
        "--from",
        "--max-len",
        "--max-ratio",
        "--raw",
        "--params",
        "--separators",
        "--train-size",
        "--valid-size",
        "--size",
        "--seed",
        "--limit",
    ),
    "what a page or picture shows": ("--metrics", "--methods"),
    "which heads a model needs (`heads`)": ("--importance", "--prune"),
    "the program": ("-h", "--help", "--version", "-v", "--verbose"),
}
# Positional arguments, by name: what a command works on.
POSITIONALS = {"run", "runs", "config", "source", "text", "images", "corpus", "format", "gold", "test", "src", "tgt", "command", "data_command"}
# Spellings that other tools use for the meanings above: never a live option, at most an old spelling (`Renamed`).
FOREIGN = {"--output", "-o", "--dest", "--out-dir", "--output-dir", "--outdir", "--save", "--html", "--png", "--attention-png",
           "--in", "--file", "--input-file", "--text", "--sentence", "--jobs", "-j", "--batch-workers", "--num-workers", "--threads",
           "--processes", "--data-dir", "--corpus"}  # fmt: skip


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, its parser) for every parser under `parser`, itself first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from commands(child, (*path, name))


def live(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, Renamed | argparse._SubParsersAction)]


def option_problems(where: str, parser: argparse.ArgumentParser) -> list[str]:
    """Each argument of one command: its name is its meaning's (`MEANINGS`, `POSITIONALS`), and it has help."""
    known = {name for row in MEANINGS.values() for name in row}
    found = []
    for action in live(parser):
        for flag in action.option_strings:
            if flag in FOREIGN:
                found.append(f"{where} {flag}: spelt as another tool spells it; use the name MEANINGS gives its meaning")
            elif flag not in known:
                found.append(f"{where} {flag}: not in MEANINGS; use an existing name if one means this, else add a row")
        if not action.option_strings and action.dest not in POSITIONALS:
            found.append(f"{where} {action.dest}: a positional named as none other is (POSITIONALS; an output path is --out)")
        if not action.help:
            found.append(f"{where} {action.option_strings or action.dest}: no help")
    for action in parser._actions:
        if isinstance(action, Renamed) and (action.help is not argparse.SUPPRESS or action.new not in live(parser)):
            found.append(f"{where} {action.old}: an old spelling must be hidden and stand for one of the command's options")
    return found


def required_options(parser: argparse.ArgumentParser) -> list[str]:
    """The options a command needs: required ones, and the one visible option of a required choice (its old spellings hidden)."""
    flags = [a.option_strings[0] for a in live(parser) if a.required and a.option_strings]
    for group in parser._mutually_exclusive_groups:
        shown = [a for a in group._group_actions if a.help is not argparse.SUPPRESS]
        if group.required and len(shown) == 1 and shown[0].option_strings:
            flags.append(shown[0].option_strings[0])
    return flags


def command_problems(where: str, parser: argparse.ArgumentParser, leaf: bool) -> list[str]:
    """One command as a whole: --out takes a path, --input comes with TEXT, --workers counts, an example."""
    flags, found = parser._option_string_actions, []
    if "--out" in flags and flags["--out"].nargs == 0:
        found.append(f"{where} --out: takes a path")
    if "--input" in flags and not any(a.dest == "text" and not a.option_strings for a in parser._actions):
        found.append(f"{where}: --input without a positional TEXT (texts come as arguments, --input FILE or stdin)")
    if "--workers" in flags and flags["--workers"].type is not positive_int:
        found.append(f"{where} --workers: a positive count (positive_int)")
    usage = parser.format_usage()
    for flag in required_options(parser):
        if f"[{flag}" in usage:
            found.append(f"{where} {flag}: required, but bracketed in the usage as if optional")
    if leaf and not parser.get_default("moved_to") and not (parser.epilog or "").startswith(f"example:\n  {where}"):
        found.append(f"{where}: no example of itself in its epilog (`attnkit.config.args.example`)")
    return found


def problems(root: argparse.ArgumentParser) -> list[str]:
    """Every break of the convention under `root`, one line each."""
    found = []
    for path, parser in commands(root):
        where = f"attnkit {' '.join(path)}".rstrip()
        leaf = bool(path) and not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
        found += option_problems(where, parser) + command_problems(where, parser, leaf)
    return found


def test_the_table_names_each_option_once():
    names = [name for row in MEANINGS.values() for name in row]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert not set(names) & FOREIGN


def test_every_command_keeps_the_convention():
    assert problems(build_parser()) == []


def test_a_command_that_breaks_it_is_named_for_each_break():
    root = build_parser()
    sub = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    bad = sub.add_parser("bogus", help="planted")
    bad.add_argument("out", help="a positional output")
    bad.add_argument("--output", help="a file")
    bad.add_argument("--input", help="lines")
    bad.add_argument("--threads", type=int, help="at once")
    bad.add_argument("--fancy", help="new")
    bad.add_argument("--workers", type=int, help="at once")
    attention = bad.add_mutually_exclusive_group(required=True)  # argparse brackets it: its old spelling is a positional
    attention.add_argument("--attention", help="a second file")
    renamed(attention, "attention", "--attention")
    found = "\n".join(problems(root))
    for expected in ("bogus out: a positional", "bogus --output: spelt as another tool", "bogus: --input without a positional TEXT",
                     "bogus --threads: spelt", "bogus --fancy: not in MEANINGS", "bogus --workers: a positive count", "bogus: no example",
                     "bogus --attention: required, but bracketed"):  # fmt: skip
        assert expected in found


@pytest.mark.parametrize(
    ("old", "new", "dest", "value"),
    [
        (["translate", "RUN", "--output", "x.txt"], ["translate", "RUN", "--out", "x.txt"], "out", "x.txt"),
        (["serve", "--batch-workers", "2"], ["serve", "--workers", "2"], "workers", 2),
        (["sweep", "c.yaml", "--out", "s", "--jobs", "3"], ["sweep", "c.yaml", "--out", "s", "--workers", "3"], "workers", 3),
        (["data", "fetch", "multi30k", "--dest", "d"], ["data", "fetch", "multi30k", "--out", "d"], "out", "d"),
        (["explain", "RUN", "t", "--html", "a.html", "--png", "a.png"], ["explain", "RUN", "t", "--out", "a.html", "--out", "a.png"], "out", ["a.html", "a.png"]),
        (["caption", "RUN", "i.png", "--attention-png", "s.png"], ["caption", "RUN", "i.png", "--out", "s.png"], "out", "s.png"),
        (["data", "caption-shapes", "shapes"], ["data", "caption-shapes", "--out", "shapes"], "out", "shapes"),
        (["data", "caption-shapes", "--out", "s", "--train", "5"], ["data", "caption-shapes", "--out", "s", "--train-size", "5"], "train_size", 5),
        (["report", "RUN", "t", "--out", "r.html", "--output", "1"], ["report", "RUN", "t", "--out", "r.html", "--attribute-target", "1"],
         "attribute_target", 1),
        (["attention", "RUN", "t", "--out", "a.npz", "--output", "2"], ["attention", "RUN", "t", "--out", "a.npz", "--attribute-target", "2"],
         "attribute_target", 2),
        (["evaluate", "RUN", "--data", "t.tsv"], ["evaluate", "RUN", "--labelled", "t.tsv"], "labelled", "t.tsv"),
    ],
)  # fmt: skip
def test_an_old_spelling_works_with_one_deprecation_line(old, new, dest, value, capsys):
    parsed = build_parser().parse_args(old)
    err = capsys.readouterr().err
    assert getattr(parsed, dest) == value == getattr(build_parser().parse_args(new), dest)
    assert err.count("\n") == (2 if "--png" in old else 1)  # one line per old spelling
    first = err.splitlines()[0]
    assert first.startswith("attnkit: ") and "is deprecated" in first and f"use --{dest.replace('_', '-')}" in first
    assert capsys.readouterr().err == ""  # the new spelling is quiet


def test_an_old_spelling_beside_the_new_one_is_refused():
    assert main(["data", "caption-shapes", "a", "--out", "b"]) == 2


def test_a_moved_command_works_with_one_deprecation_line(tmp_path, capsys):
    """`attnkit caption-shapes` moved to `attnkit data caption-shapes`: the old verb is hidden from the
    command list, takes the same arguments and says where the command went, in one line."""
    assert "caption-shapes" not in build_parser().description
    assert main(["caption-shapes", "--out", str(tmp_path / "old"), "--train-size", "1", "--valid-size", "1", "--size", "16"]) == 0
    err = capsys.readouterr().err
    assert err == "attnkit: caption-shapes is deprecated and will be removed; use attnkit data caption-shapes\n"
    assert main(["data", "caption-shapes", "--out", str(tmp_path / "new"), "--train-size", "1", "--valid-size", "1", "--size", "16"]) == 0
    assert capsys.readouterr().err == ""
    assert sorted(p.name for p in (tmp_path / "old").iterdir()) == sorted(p.name for p in (tmp_path / "new").iterdir())
