"""The command-line convention (docs/conventions.md, "Command line"), checked over the whole parser.

The test walks `attnkit.cli.build_parser()`, so a command added anywhere (a family's verb, a new
generic one) is held to the same rules with no change here, except a new row in `MEANINGS` when it
brings an option that means something no option meant before.
"""

from __future__ import annotations

import argparse

import pytest

from attnkit.cli import OTHER_SPELLINGS, build_parser, main
from attnkit.config.args import positive_int

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
    "the server": ("--hf", "--host", "--port", "--max-texts", "--max-chars", "--batch-window-ms", "--max-batch", "--long-max-chars", "--long-cache"),
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
    "how a faithfulness metric takes a token away (delete, mask, pad)": ("--removal",),
    "which heads a model needs (`heads`)": ("--importance", "--prune"),
    "the program": ("-h", "--help", "--version", "-v", "--verbose"),
}
# Positional arguments, by name: what a command works on.
POSITIONALS = {"run", "runs", "config", "source", "text", "images", "corpus", "format", "gold", "test", "src", "tgt", "command", "data_command"}
# Spellings that other tools use for the meanings above (`cli.OTHER_SPELLINGS`, which "did you mean" answers): never a
# live option, unless the spelling means something else here (`--data`, a training corpus).
FOREIGN = set(OTHER_SPELLINGS) - {"--data"}


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, its parser) for every parser under `parser`, itself first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from commands(child, (*path, name))


def live(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._SubParsersAction)]


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
    return found


def command_problems(where: str, parser: argparse.ArgumentParser, leaf: bool) -> list[str]:
    """One command as a whole: --out takes a path, --input comes with TEXT, --workers counts, an example."""
    flags, found = parser._option_string_actions, []
    if "--out" in flags and flags["--out"].nargs == 0:
        found.append(f"{where} --out: takes a path")
    if "--input" in flags and not any(a.dest == "text" and not a.option_strings for a in parser._actions):
        found.append(f"{where}: --input without a positional TEXT (texts come as arguments, --input FILE or stdin)")
    if "--workers" in flags and flags["--workers"].type is not positive_int:
        found.append(f"{where} --workers: a positive count (positive_int)")
    if leaf and not (parser.epilog or "").startswith(f"example:\n  {where}"):
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
    found = "\n".join(problems(root))
    for expected in ("bogus out: a positional", "bogus --output: spelt as another tool", "bogus: --input without a positional TEXT",
                     "bogus --threads: spelt", "bogus --fancy: not in MEANINGS", "bogus --workers: a positive count", "bogus: no example"):  # fmt: skip
        assert expected in found


@pytest.mark.parametrize(
    ("argv", "unknown", "meant"),
    [
        (["translate", "RUN", "--output", "x.txt"], "--output", "--out"),
        (["serve", "--batch-workers", "2"], "--batch-workers", "--workers"),
        (["sweep", "c.yaml", "--out", "s", "--jobs", "3"], "--jobs", "--workers"),
        (["data", "fetch", "multi30k", "--dest", "d"], "--dest", "--out"),
        (["explain", "RUN", "t", "--html", "a.html"], "--html", "--out"),
        (["caption", "RUN", "i.png", "--attention-png", "s.png"], "--attention-png", "--out"),
        (["report", "RUN", "t", "--out", "r.html", "--output", "1"], "--output", "--out or --attribute-target"),
        (["attention", "RUN", "t", "--out", "a.npz", "--output", "2"], "--output", "--out or --attribute-target"),
        (["evaluate", "RUN", "--data", "t.tsv"], "--data", "--labelled"),
        (["faithfulness", "RUN", "--data", "t.tsv", "--out", "f"], "--data", "--input"),
        (["sweep", "c.yaml", "--out", "s", "--wrokers", "3"], "--wrokers", "--workers"),  # a typo
        (["translate", "RUN", "--beem", "3"], "--beem", "--beam"),  # a typo
    ],
)  # fmt: skip
def test_an_old_spelling_is_an_unknown_option_with_did_you_mean(argv, unknown, meant, capsys):
    """The spellings of 0.1.0 (CHANGELOG.md) get the one line any unknown option gets, naming the option meant."""
    assert main(argv) == 2
    command = " ".join(argv[: 2 if argv[0] == "data" else 1])
    assert capsys.readouterr().err == f"attnkit: error: unrecognized arguments: {unknown}; did you mean {meant}? (see `attnkit {command} --help`)\n"


def test_an_unknown_option_like_none_of_the_commands_gets_no_guess(capsys):
    assert main(["translate", "RUN", "--frobnicate", "3"]) == 2
    assert capsys.readouterr().err == "attnkit: error: unrecognized arguments: --frobnicate (see `attnkit translate --help`)\n"


def test_a_command_under_another_is_named_by_its_path(capsys):
    """`attnkit caption-shapes` (0.1.0) is `attnkit data caption-shapes`: the mistake names the command's place."""
    assert main(["caption-shapes", "--out", "shapes"]) == 2
    assert "invalid choice: 'caption-shapes'; did you mean data caption-shapes?" in capsys.readouterr().err
