"""The own-data rule (`attnkit.config.own_data`, docs/your-data.md): what it sets for the data sizes of
issue #62, and a run on a tiny data set that stops by its patience, before its budget."""

from __future__ import annotations

import json
import logging
import math
import random
from pathlib import Path

import yaml

from attnkit.cli import main
from attnkit.config.own_data import (
    EVAL_TOKENS,
    FIRST_EVAL_TOKENS,
    MAX_EPOCHS,
    MIN_BATCH_TOKENS,
    MIN_UPDATES_PER_EPOCH,
    PATIENCE,
    longer_side_tokens,
    own_data_defaults,
)

TINY_SASE = ["model.embed_dim=16", "model.u=16", "model.d_a=16", "model.r=2", "model.mlp_hidden=32"]


def test_a_small_data_set_gets_a_small_model_small_batches_and_an_evaluation_each_epoch() -> None:
    # 1,800 review sentences of ~20 words (the classification run): 36,000 tokens.
    rule = own_data_defaults(1_800, 36_000, family_max_tokens=2000, max_sentences=64)
    assert rule.size == "small"
    assert rule.max_tokens == 36_000 // MIN_UPDATES_PER_EPOCH == 720
    assert rule.updates_per_epoch == math.ceil(36_000 / 720) == 50
    assert rule.eval_every == rule.updates_per_epoch  # once an epoch
    # 900 sentence pairs of ~12 words (the translation run): the batch floor, still once an epoch.
    pairs = own_data_defaults(900, 10_800, family_max_tokens=4096)
    assert (pairs.size, pairs.max_tokens, pairs.eval_every) == ("small", MIN_BATCH_TOKENS, math.ceil(10_800 / MIN_BATCH_TOKENS))
    assert pairs.warmup(600) == MAX_EPOCHS * pairs.updates_per_epoch // 10 < 600


def test_a_large_data_set_gets_the_base_model_and_evaluates_every_200k_tokens() -> None:
    rule = own_data_defaults(200_000, 2_600_000, family_max_tokens=4096)
    assert (rule.size, rule.max_tokens) == ("base", 4096)
    assert rule.updates_per_epoch == math.ceil(2_600_000 / 4096) == 635
    assert rule.eval_every == math.ceil(EVAL_TOKENS / 4096) == 49  # every ~200,000 tokens, not once an epoch
    assert rule.eval_first == math.ceil(FIRST_EVAL_TOKENS / 4096) == 13  # the first checkpoint after ~50,000 tokens
    assert rule.warmup(600) == 600


def test_an_evaluation_once_an_epoch_is_also_the_first_when_the_epoch_is_short() -> None:
    rule = own_data_defaults(900, 10_800, family_max_tokens=4096)
    assert rule.eval_first == rule.eval_every == rule.updates_per_epoch == 43


def test_a_captioning_batch_item_is_an_image_with_its_captions() -> None:
    # 10,000 Flickr8k captions of 2,000 images, ~12 words each; batches of at most 32 images (issue #62).
    rule = own_data_defaults(10_000, 120_000, family_max_tokens=2000, max_sentences=32, items=2_000)
    assert rule.size == "base"  # the size counts the captions
    assert rule.updates_per_epoch == math.ceil(2_000 / 32) == 63  # not 10,000 / 32: the batcher counts images
    assert rule.eval_every == 63 and rule.eval_first == math.ceil(FIRST_EVAL_TOKENS / 2000) == 25


def test_tokens_are_the_longer_side() -> None:
    assert longer_side_tokens([("a b", "c d e"), ("f", "g h")]) == 5
    assert longer_side_tokens([("a b c", ""), ("d e", "")]) == 5
    assert longer_side_tokens([]) == 0


def _random_labels(path: Path, rows: int, rng: random.Random) -> Path:
    """A table whose labels have nothing to do with its sentences: training can only memorise it."""
    words = "the a film game song was is very quite great boring good bad long short fine dull".split()
    lines = ["text,label", *(f"{' '.join(rng.choices(words, k=6))},{rng.choice(['positive', 'negative'])}" for _ in range(rows))]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_tiny_data_set_stops_early_by_patience_before_its_budget(tmp_path: Path, caplog) -> None:
    rng = random.Random(1)
    train, valid, run = _random_labels(tmp_path / "train.csv", 60, rng), _random_labels(tmp_path / "valid.csv", 30, rng), tmp_path / "run"
    with caplog.at_level(logging.INFO, logger="attnkit"):
        assert main(["train", "classification", "--train", str(train), "--valid", str(valid), "--out", str(run),
                     *[word for value in TINY_SASE for word in ("--set", value)]]) == 0  # fmt: skip
    assert any(r.getMessage().startswith("own-data defaults") and "--set wins: model.embed_dim=16" in r.getMessage() for r in caplog.records)
    train_config = yaml.safe_load((run / "config.yaml").read_text())["train"]
    assert (train_config["early_stopping"], train_config["patience"], train_config["max_epochs"]) == ("loss", PATIENCE, MAX_EPOCHS)
    evals = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if json.loads(line)["kind"] == "valid"]
    best = min(range(len(evals)), key=lambda i: evals[i]["loss"])
    assert len(evals) == best + 1 + PATIENCE  # stopped right after PATIENCE evaluations without a lower loss
    assert evals[-1]["step"] == len(evals) * train_config["eval_every"]
    last = sorted((run / "checkpoints").iterdir())[-1]
    state = json.loads((last / "state.json").read_text())["train_state"]
    assert state["stopped_early"] and state["step"] == evals[-1]["step"]
    assert state["epoch"] < MAX_EPOCHS - 1  # well before the budget's last epoch
