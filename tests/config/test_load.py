"""Config loading: validation errors are one line naming file, key path and what was expected."""

import pytest
import yaml

from attnkit.config import dump_config
from attnkit.config.load import apply_override
from attnkit.errors import ConfigError
from attnkit.families import load_config
from attnkit.families import validate_run as validate

MINIMAL = {"data": {"corpus": "synthetic"}, "train": {"max_steps": 10}}


def write(tmp_path, tree, name="run.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(tree))
    return path


def test_defaults_are_the_papers(tmp_path):
    run = load_config(write(tmp_path, MINIMAL))
    # Vaswani et al. 2017, Table 3 (base) and sec. 5.3/5.4.
    assert (run.model.layers, run.model.d_model, run.model.n_heads, run.model.d_ff) == (6, 512, 8, 2048)
    assert run.model.dropout == 0.1 and run.train.label_smoothing == 0.1
    assert run.train.betas == (0.9, 0.98) and run.train.eps == 1e-9
    assert run.train.schedule.kind == "noam" and run.train.schedule.warmup == 4000
    assert (run.decode.beam, run.decode.alpha) == (4, 0.6)


def test_unknown_key_names_file_and_path(tmp_path):
    path = write(tmp_path, {**MINIMAL, "model": {"kind": "transformer", "layerz": 3}})
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(e.value) == f"{path}: model.layerz: unknown key"


def test_wrong_type_and_bad_value(tmp_path):
    path = write(tmp_path, {**MINIMAL, "model": {"kind": "transformer", "d_model": "big"}})
    with pytest.raises(ConfigError, match=r"model\.d_model: Input should be a valid integer.*'big'"):
        load_config(path)
    path = write(tmp_path, {**MINIMAL, "model": {"kind": "transformer", "layers": -1}})
    with pytest.raises(ConfigError, match=r"model\.layers: Input should be greater than 0 \(got -1\)"):
        load_config(path)


def test_unknown_model_kind(tmp_path):
    path = write(tmp_path, {**MINIMAL, "model": {"kind": "lstm9000"}})
    with pytest.raises(ConfigError, match="model.kind: unknown model kind 'lstm9000' \\(known: 'transformer', 'rnn', 'sase'"):
        load_config(path)


def test_cross_field_rule(tmp_path):
    path = write(tmp_path, {**MINIMAL, "model": {"kind": "transformer", "d_model": 100, "n_heads": 8}})
    with pytest.raises(ConfigError, match=r"d_model \(100\) must be divisible by n_heads \(8\)"):
        load_config(path)


def test_set_overrides_are_validated(tmp_path):
    path = write(tmp_path, MINIMAL)
    run = load_config(path, ["model.layers=3", "train.schedule.lr=0.5", "data.joint=false"])
    assert run.model.layers == 3 and run.train.schedule.lr == 0.5 and run.data.joint is False
    with pytest.raises(ConfigError, match=r"--set model\.layers=0\): model\.layers: Input should be greater than 0"):
        load_config(path, ["model.layers=0"])
    with pytest.raises(ConfigError, match="train.nope: unknown key"):
        load_config(path, ["train.nope=1"])
    with pytest.raises(ConfigError, match="expected key.path=value"):
        load_config(path, ["model.layers"])


def test_override_into_a_value_is_an_error():
    with pytest.raises(ConfigError, match="model.layers is a value, not a section"):
        apply_override({"model": {"layers": 3}}, "model.layers.x=1")


def test_missing_and_invalid_files(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("data: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad.yaml, line \d+: invalid YAML"):
        load_config(bad)
    with pytest.raises(ConfigError, match="train: required key is missing"):
        load_config(write(tmp_path, {"data": {"corpus": "synthetic"}}))


def test_a_character_yaml_does_not_allow_is_one_line_with_its_line(tmp_path):
    """Found by tests/data/test_reader_properties.py: PyYAML's reader error spans two lines."""
    bad = tmp_path / "nul.yaml"
    bad.write_text("data:\n  corpus: synthetic\nmodel: {kind: transformer}\x00\n")
    with pytest.raises(ConfigError) as error:
        load_config(bad)
    assert str(error.value) == f"{bad}, line 3: invalid YAML (character U+0000 is not allowed)"


def test_resolved_config_round_trips(tmp_path):
    run = load_config(write(tmp_path, MINIMAL), ["model.layers=2"])
    again = validate(yaml.safe_load(dump_config(run)), "dump")
    assert again == run
    assert "d_ff: 2048" in dump_config(run)


def test_presets_are_valid():
    from attnkit.families import presets

    names = presets()
    assert {"m30k-small", "toy-reverse", "transformer-base", "transformer-big"} <= set(names)
    big = load_config(names["transformer-big"])
    assert (big.model.d_model, big.model.n_heads, big.model.d_ff, big.model.dropout) == (1024, 16, 4096, 0.3)
    small = load_config(names["m30k-small"])
    assert (small.model.layers, small.model.d_model, small.model.n_heads, small.model.d_ff) == (3, 256, 4, 1024)
    assert small.data.vocab_size == 8000 and small.data.joint


SASE = {"data": {"corpus": "sst", "phrases": True}, "model": {"kind": "sase", "r": 10}, "train": {"max_minutes": 1, "early_stopping": "accuracy"}}


def test_sase_config_paper_names_and_classification_data(tmp_path):
    run = load_config(write(tmp_path, SASE))
    assert run.model.kind == "sase" and run.data.phrases and run.model.r == 10
    # Lin et al. 2017, sec. 4.1/4.2 (Yelp): u=300, d_a=350, hidden MLP 3000, coef 1.0.
    assert (run.model.u, run.model.d_a, run.model.mlp_hidden, run.model.coef) == (300, 350, 3000, 1.0)
    assert validate(yaml.safe_load(dump_config(run)), "dump") == run


@pytest.mark.parametrize(
    "change, message",
    [
        ({"data": {"corpus": "sst", "phrase": True}}, "data.phrase: unknown key"),
        ({"model": {"kind": "sase", "hops": 3}}, "model.hops: unknown key"),
        ({"train": {"max_minutes": 1, "early_stopping": "bleu"}}, "train.early_stopping: bleu is not measured for a sase model; use accuracy or loss"),
        ({"data": {"corpus": "synthetic"}}, "data.corpus: Input should be 'sst', 'snli' or 'labelled'"),
        ({"data": {"corpus": "labelled", "train": "a.tsv"}}, "corpus 'labelled' needs data.train and data.valid"),
        ({"model": {"kind": "sase", "encoder": "none", "pooling": "last"}}, "pooling 'last' takes the bi-LSTM's final states"),
        ({"model": {"kind": "sase", "pair": "factor"}}, "model.pair needs sentence pairs"),
    ],
)
def test_sase_config_errors(tmp_path, change, message):
    with pytest.raises(ConfigError) as e:
        load_config(write(tmp_path, {**SASE, **change}))
    assert message in str(e.value)


def test_accuracy_early_stopping_is_for_classification(tmp_path):
    with pytest.raises(ConfigError, match="accuracy is not measured for a transformer model; use bleu or loss"):
        load_config(write(tmp_path, {**MINIMAL, "train": {"max_steps": 1, "early_stopping": "accuracy"}}))


@pytest.mark.parametrize("tree, expected", [({**SASE, "train": {"max_minutes": 1}}, "accuracy"), (MINIMAL, "bleu"),
                                            ({**MINIMAL, "train": {"max_steps": 1, "early_stopping": "loss"}}, "loss")])  # fmt: skip
def test_early_stopping_defaults_to_the_familys_metric(tmp_path, tree, expected):
    """Without train.early_stopping a run stops on its family's `EARLY_STOPPING` (no preset restates it)."""
    assert load_config(write(tmp_path, tree)).train.early_stopping == expected


def test_an_old_key_is_an_unknown_key(tmp_path):
    """`train.eval_bleu` (eval_decode before 0.2.0) is refused as any unknown key is (CHANGELOG.md lists the old names)."""
    with pytest.raises(ConfigError, match=r"train\.eval_bleu: unknown key"):
        load_config(write(tmp_path, {**MINIMAL, "train": {"max_steps": 1, "eval_bleu": False}}))


def test_cosine_schedule_needs_total(tmp_path):
    path = write(tmp_path, {**MINIMAL, "train": {"max_steps": 10, "schedule": {"kind": "cosine", "lr": 1e-3, "warmup": 5}}})
    with pytest.raises(ConfigError, match=r"train\.schedule: .*cosine needs total > warmup"):
        load_config(path)
    run = load_config(path, ["train.schedule.total=10"])
    assert (run.train.schedule.kind, run.train.schedule.total) == ("cosine", 10)
