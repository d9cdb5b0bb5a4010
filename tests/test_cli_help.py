"""`attnkit --help` (the command map and its examples), a subcommand's help (defaults, example),
`attnkit presets`, and "did you mean" for a mistyped command, choice or preset."""

from __future__ import annotations

import argparse
import re

import pytest

from attnkit.cli import GROUPS, build_parser, main
from attnkit.commands.presets import config_path, summary
from attnkit.families import FAMILIES


def registered() -> list[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [name for name, parser in sub.choices.items() if not parser.get_default("moved_to")]  # a moved command is hidden


def top_help(capsys) -> str:
    assert main(["--help"]) == 0
    return capsys.readouterr().out


def test_every_command_is_listed_once_in_its_group(capsys):
    text = top_help(capsys)
    groups = re.split(r"^(\w+):$", text.split("\noptions:")[0], flags=re.M)[1:]
    listed = {group: re.findall(r"^  (\S+)", body, flags=re.M) for group, body in zip(groups[::2], groups[1::2])}
    names = [name for names in listed.values() for name in names]
    assert sorted(names) == sorted(registered()), "each registered command exactly once"
    assert list(listed)[:5] == ["start", "train", "use", "explore", "deploy"]
    for group, members in listed.items():
        assert all(name in GROUPS.get(group, ()) or group == registered_group(name) for name in members) or group == "other"


def registered_group(name: str) -> str | None:
    """The group a family's verb names for itself (`set_defaults(group=...)`)."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name].get_default("group")


def test_a_command_missing_from_the_groups_is_listed_under_other(monkeypatch, capsys):
    monkeypatch.setitem(GROUPS, "explore", tuple(n for n in GROUPS["explore"] if n != "heads"))
    text = top_help(capsys)
    assert re.search(r"^other:\n  heads ", text, flags=re.M)
    assert re.search(r"^use:\n  evaluate .*^  translate ", text, flags=re.M | re.S)  # a family's verb in the group it names


def test_the_map_names_hugging_face_models_and_ends_with_three_examples(capsys):
    text = top_help(capsys)
    hf = re.search(r"Hugging Face models \(a hub id or a save_pretrained folder\) go into: ([^.]+)\.", " ".join(text.split()))
    assert hf and {"attention", "plot", "report", "serve", "import"} <= set(hf.group(1).split(", "))
    examples = text.split("\nexamples:\n")[1]
    commands = re.findall(r"^  attnkit .+$", examples, flags=re.M)
    assert len(commands) == 3 and any("Helsinki-NLP/" in c for c in commands)


def test_a_subcommand_shows_its_defaults_and_an_example(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "sentences per batch (default: 64)" in text
    assert "--dtype {fp32,bf16,int8}" in text and "(default: fp32)" in text
    assert "example: attnkit evaluate runs/" in text
    assert "(default: None)" not in text and "(default: False)" not in text


def test_presets_lists_each_preset_with_one_line(capsys):
    assert main(["presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines]
    folders = [family.presets for family in FAMILIES.values() if family.presets]
    assert names == sorted([*(p.stem for f in folders for p in f.glob("*.yaml")), *(f"sweeps/{p.stem}" for f in folders for p in f.glob("sweeps/*.yaml"))])
    assert len(names) >= 15
    assert next(line for line in lines if line.startswith("toy-reverse ")).endswith("in under a minute on 2 cores")
    assert summary(FAMILIES["translation"].presets / "m30k-small.yaml") == 'Transformer sized for Multi30k En->De on a CPU (PEERS.md\'s "M30K-small")'


def test_an_unknown_preset_says_did_you_mean(tmp_path, capsys):
    assert main(["train", "m30k-smal", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err == "attnkit: error: m30k-smal: no such config file, preset or family; did you mean m30k-small? (`attnkit presets` lists them)\n"
    assert not (tmp_path / "run").exists()
    assert config_path("toy-reverse") == FAMILIES["translation"].presets / "toy-reverse.yaml"


@pytest.mark.parametrize(
    ("argv", "hint"),
    [(["trian"], "did you mean train?"), (["data", "fecth"], "did you mean fetch?"), (["translate", "RUN", "--dtype", "fp23"], "did you mean fp32?")],
)
def test_an_unknown_command_or_choice_says_did_you_mean(argv, hint, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("attnkit: error: ") and hint in err


def test_an_unknown_command_with_no_near_name_lists_the_commands(capsys):
    assert main(["zzzzzz"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "choose from " in err and "translate" in err


def _help(capsys, command: str) -> str:
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_the_long_and_many_input_options_say_what_they_default_to(capsys):
    attention = _help(capsys, "attention")
    assert "(`--long` alone: all; `--long rows`: exact rows only)" in attention and "(0 is the first; default: all)" in attention
    report = _help(capsys, "report")
    assert "a Hugging Face decoder or encoder, offline" in report and "(default: a decoder's last token, an encoder's first)" in report
    assert "(a decoder: the /long page too; repeat for more)" in _help(capsys, "serve")
    heads = _help(capsys, "heads")
    assert "under torchrun the pairs and steps are split across the ranks" in heads and "--importance --prune 8" in heads
    faithfulness = _help(capsys, "faithfulness")
    assert "Under torchrun the texts are split across the ranks" in faithfulness and "(default: every text)" in faithfulness
