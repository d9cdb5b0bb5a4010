"""The family contract (issue #51): a toy family defined only in this file trains with `attnkit train`,
is scored by `attnkit evaluate`, and appears in the explorer (`report`, `serve`'s /attention, `attention`,
`plot --view`) with an attention kind of its own, without any change to the core: the test only puts it
in the family table, as a family's one line in `attnkit/families/__init__.py` would.

The toy: "glancing", a bag of words read by one learned query (additive pooling in one glance,
`masked_softmax` over the words) and classified by whether the word w7 is in it; its one map is the
kind `glance` (1 query row x the words, one layer of one head).
"""

from __future__ import annotations

import argparse
import base64
import json
import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pytest
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from attnkit import families
from attnkit.attention.masks import masked_softmax
from attnkit.cli import main
from attnkit.config.schema import Metric, RunBase, Strict
from attnkit.families.protocol import Api, Family, add_once
from attnkit.viz.attention_view import AttentionKind, ExplainedInput

WORDS = [f"w{i}" for i in range(10)]
GLANCE = AttentionKind("glance", "one glance over the words", ("words", "glance"), "readout")
DATA = re.compile(r'<script type="application/json" id="attention-data">(.*?)</script>', re.S)


class GlanceData(Strict):
    examples: int = 256


class GlanceModel(Strict):
    kind: Literal["toy_glance"] = "toy_glance"
    d: int = 16


class GlanceRun(RunBase):
    METRICS = (Metric("accuracy", "acc"),)
    data: GlanceData = GlanceData()
    model: GlanceModel


class Glancer(nn.Module):
    """Words (B, S) -> (logits (B, 2), weights (B, S)): one learned query attends over the word embeddings."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.embedding, self.query, self.out = nn.Embedding(len(WORDS), d), nn.Parameter(torch.randn(d) / d**0.5), nn.Linear(d, 2)

    def forward(self, words: Tensor, keep: Tensor) -> tuple[Tensor, Tensor]:
        e = self.embedding(words)  # (B, S, D)
        weights = masked_softmax(e @ self.query, keep)  # (B, S)
        return self.out((weights.unsqueeze(-1) * e).sum(1)), weights  # (B, 2), (B, S)


@dataclass
class Batch:
    words: Tensor  # (B, S)
    keep: Tensor  # (B, S)
    labels: Tensor  # (B,)

    def to(self, device: torch.device) -> Batch:
        return Batch(self.words.to(device), self.keep.to(device), self.labels.to(device))


def examples(n: int, seed: int) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, len(WORDS), (int(torch.randint(2, 7, (1,), generator=g)),), generator=g).tolist() for _ in range(n)]


def collate(rows: list[list[int]]) -> Batch:
    S = max(map(len, rows))
    words = torch.tensor([r + [0] * (S - len(r)) for r in rows])  # (B, S)
    keep = torch.tensor([[True] * len(r) + [False] * (S - len(r)) for r in rows])  # (B, S)
    return Batch(words, keep, torch.tensor([int(7 in r) for r in rows]))


def accuracy(model: nn.Module, rows: list[list[int]], device: torch.device = torch.device("cpu")) -> tuple[float, float]:
    """(summed loss, accuracy) of `rows`."""
    batch = collate(rows).to(device)
    with torch.no_grad():
        logits, _ = model(batch.words, batch.keep)
    return F.cross_entropy(logits.float(), batch.labels, reduction="sum").item(), (logits.argmax(-1) == batch.labels).float().mean().item()


class GlanceTask:
    unit = "examples"

    def __init__(self, run: GlanceRun, run_dir, data_dir) -> None:
        self.run, self.vocabs = run, WORDS
        self.train, self.valid = examples(run.data.examples, run.train.seed), examples(64, run.train.seed + 1)
        self.train_lengths = ([len(r) for r in self.train], [1] * len(self.train))

    def build_model(self) -> nn.Module:
        return build(self.run, self.vocabs)

    def collate(self, index: list[int]) -> Batch:
        return collate([self.train[i] for i in index])

    def size(self, batch: Batch) -> int:
        return batch.labels.numel()

    def loss(self, model: nn.Module, batch: Batch, step: int) -> Tensor:
        return F.cross_entropy(model(batch.words, batch.keep)[0].float(), batch.labels, reduction="sum")

    def validate(self, model: nn.Module, device: torch.device) -> dict[str, float]:
        loss, acc = accuracy(model, self.valid, device)
        return {"loss": loss / len(self.valid), "accuracy": acc}


def build(run: GlanceRun, vocabs) -> nn.Module:
    return Glancer(run.model.d)


def evaluate_options(parser: argparse.ArgumentParser) -> list[str]:
    add_once(parser, "--glances", type=int, help="toy glancing runs: how many generated examples to score")
    return ["glances"]


def evaluate(args: argparse.Namespace, load) -> dict:
    loaded = load()
    return {"accuracy": accuracy(loaded.model, examples(args.glances or 64, 99))[1]}


def explain(loaded, lines, options) -> list[ExplainedInput]:
    """Per line: its class and its one glance over the words (the family's own kind)."""
    out = []
    for line in lines:
        batch = collate([[WORDS.index(w) for w in line.split()]])
        with torch.no_grad():
            logits, weights = loaded.model(batch.words, batch.keep)  # (1, 2), (1, S)
        view = GLANCE.view(["glance"], line.split(), [weights.float()[None]])  # (H, Tq, Tk) = (1, 1, S)
        out.append(ExplainedInput(line, "has w7" if logits.argmax() == 1 else "no w7", [view], fields={"probs": logits.softmax(-1)[0].tolist()}))
    return out


FAMILY = Family(
    name="glancing", kinds=("toy_glance",), run_schema=GlanceRun, api=Api(), task=GlanceTask,
    vocabs_to_json=lambda vocabs, run_dir: {"words": vocabs}, vocabs_from_json=lambda info, run_dir: info["words"], build=build,
    commands=lambda sub, family, write_page: None, evaluate_options=evaluate_options, evaluate=evaluate, explain=explain, info=lambda loaded: {},
    attention_kinds=(GLANCE,),
)  # fmt: skip


@pytest.fixture
def table(monkeypatch):
    """The toy family in the family table (what its one line in `attnkit/families/__init__.py` would do)."""
    monkeypatch.setitem(families.FAMILIES, FAMILY.name, FAMILY)
    monkeypatch.setitem(families.MODEL_KINDS, "toy_glance", FAMILY)


def test_a_family_defined_in_a_test_trains_evaluates_and_appears_in_the_explorer(table, tmp_path, capsys):
    config = tmp_path / "glance.yaml"
    train = {"max_steps": 60, "eval_every": 60, "precision": "fp32", "device": "cpu", "schedule": {"kind": "constant", "lr": 0.05}, "log_every": 20}
    config.write_text(json.dumps({"model": {"kind": "toy_glance"}, "train": train}))
    run = tmp_path / "run"
    assert main(["train", str(config), "--out", str(run)]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(run), "--glances", "128"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] > 0.8  # it learned to look for w7 (chance: about 0.5)

    page = tmp_path / "report.html"
    assert main(["report", str(run), "w1 w7 w2", "--out", str(page)]) == 0
    (record,) = json.loads(DATA.findall(page.read_text(encoding="utf-8"))[0])
    glance = record["maps"]["glance"]
    assert (record["source"], record["text"], glance["title"], glance["cols"]) == ("w1 w7 w2", "has w7", GLANCE.title, ["w1", "w7", "w2"])
    assert int(np.argmax(np.frombuffer(base64.b64decode(glance["data"][0][0]), np.uint8))) == 1  # it glances at w7 (a page holds bytes)

    assert main(["attention", str(run), "w1 w7 w2", "--out", str(tmp_path / "a.npz")]) == 0
    assert np.load(tmp_path / "a.npz")["glance/layer1"].shape == (1, 1, 3)
    assert main(["plot", str(run), "w1 w7 w2", "--view", "heatmap", "--out", str(tmp_path / "g.png")]) == 0

    from fastapi.testclient import TestClient

    from attnkit.serve.app import create_app

    with TestClient(create_app({"toy": families.load_run(run)})) as client:
        response = client.post("/v1/attention", json={"model": "toy", "text": "w7 w3"})
        assert response.status_code == 200, response.text
        served = response.json()["record"]["maps"]
        assert list(served) == ["glance"] and served["glance"]["title"] == GLANCE.title and served["glance"]["cols"] == ["w7", "w3"]
        assert client.get("/attention").status_code == 200
