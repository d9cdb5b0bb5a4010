"""RNN decoders through the shared trainer, search and CLI: the reverse task, and the classic
"which source word did the decoder look at" example."""

from __future__ import annotations

import json

import pytest
import torch

from attnkit.cli import main
from attnkit.data.batching import collate
from attnkit.data.vocab import Vocabulary
from attnkit.families.translation.rnn import RNNSeq2Seq
from attnkit.models.losses import label_smoothed_nll

TOY = """\
data:
  corpus: synthetic
  synthetic: {{task: reverse, vocab_size: 10, min_len: 3, max_len: 8, train_size: 5000, valid_size: 100, seed: 1234}}
  tokenizer: word
model:
  kind: rnn
  attention: {attention}
  embed_dim: 32
  hidden: 64
  dropout: 0.0
train:
  seed: 1
  max_tokens: 1024
  betas: [0.9, 0.999]
  schedule: {{kind: inverse_sqrt, lr: 0.01, warmup: 50}}
  clip_norm: 1.0
  max_steps: 250
  eval_every: 250
  log_every: 100
"""


@pytest.mark.slow
@pytest.mark.parametrize("attention", ["bahdanau", "luong"])
def test_rnn_learns_reversal_and_translates_with_attention(attention, tmp_path, capsys):
    config = tmp_path / "rnn.yaml"
    config.write_text(TOY.format(attention=attention))
    out = tmp_path / "run"
    assert main(["train", str(config), "--out", str(out)]) == 0
    valid = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if '"valid"' in line]
    assert valid[-1]["exact"] >= 0.9 and "entropy/cross0" in valid[-1]
    src = tmp_path / "src.txt"
    src.write_text("t3 t1 t4 t5 t9\n")
    capsys.readouterr()
    assert main(["translate", str(out), "--input", str(src), "--attention", str(tmp_path / "a.jsonl")]) == 0
    assert capsys.readouterr().out == "t9 t5 t4 t1 t3\n"
    record = json.loads((tmp_path / "a.jsonl").read_text())
    assert [row.index(max(row)) for row in record["attention"][:5]] == [4, 3, 2, 1, 0]  # the anti-diagonal


# The classic teaching example, as a tiny verb-final language: "i love you" -> "je toi aime". Every
# target word translates one source word, and the verb moves to the end, so the step that emits
# "aime" must find "love" in the middle of the source. (With only a handful of memorised pairs the
# attention is free to look anywhere; 75 pairs from a small grammar make alignment the easy path.
# Which source word a tiny model attends to still depends on its initialisation: the seed is fixed.)
SUBJECTS = {"i": "je", "you": "tu", "we": "nous", "they": "ils", "cats": "chats"}
VERBS = {"love": "aime", "see": "vois", "like": "apprecie"}
OBJECTS = {"me": "moi", "you": "toi", "cats": "chats", "dogs": "chiens", "it": "le"}
PAIRS = [(f"{s} {v} {o}", f"{SUBJECTS[s]} {OBJECTS[o]} {VERBS[v]}") for s in SUBJECTS for v in VERBS for o in OBJECTS]


def test_the_word_love_is_attended_when_aime_is_emitted():
    words = sorted({w for pair in PAIRS for side in pair for w in side.split()})
    vocab = Vocabulary(words)
    data = [(vocab.encode(s.split()), vocab.encode(t.split())) for s, t in PAIRS]
    torch.manual_seed(1)
    model = RNNSeq2Seq(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), attention="bahdanau",
                       embed_dim=16, hidden=32, dropout=0.0)  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    batch = collate(data, list(range(len(data))))
    keep = batch.tgt_out != 0
    for _ in range(200):
        features = model.features(batch.src, batch.src_keep, batch.tgt_in)  # (B, T, H)
        loss, _ = label_smoothed_nll(features[keep], batch.tgt_out[keep], weight=model.output_weight, epsilon=0.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() / keep.sum().item() < 0.05  # learned the pairs
    model.eval()
    with torch.no_grad():
        weights = model.attentions(batch.src, batch.src_keep, batch.tgt_in).cross[0][:, 0]  # (B, T, S)
    aime = vocab.encode(["aime"])[0]
    checked = 0
    for i, (src, _) in enumerate(PAIRS):
        steps = (batch.tgt_out[i] == aime).nonzero()
        if len(steps):
            attended = weights[i, int(steps[0])].argmax().item()
            assert (src.split() + ["</s>"])[attended] == "love", (src, weights[i, int(steps[0])])
            checked += 1
    assert checked == 25
