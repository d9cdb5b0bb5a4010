"""A captioner through `attnkit attention` (`sources.run`): `cross/layer1` (1, words, cells) holds, row by row, the
attention alpha_t of the step that emitted each word of the caption, as the model computes it teacher-forced on
the tokens its search emitted; a step that emitted padding or BOS (an untrained model can) shows no word and no
row (`infer.word_attention`)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from attnkit.artifacts.checkpoint import save_checkpoint
from attnkit.artifacts.runs import write_run
from attnkit.cli import main
from attnkit.data.vocab import BOS, EOS, PAD, Vocabulary
from attnkit.decode.hypothesis import Hypothesis
from attnkit.families import family_of, load_run, validate_run
from attnkit.families.captioning.codec import CaptionVocabs
from attnkit.families.captioning.images import load_image
from attnkit.families.captioning.infer import search, word_attention

DATA = {"train_images": "i", "train_captions": "c.txt", "valid_images": "v", "valid_captions": "v.txt", "max_len": 6}
MODEL = {"kind": "show_attend_tell", "encoder": "small_cnn", "input_size": 16, "cnn_layers": 2, "cnn_channels": 4, "feature_dim": 8,
         "embed_dim": 8, "hidden_dim": 16, "attn_dim": 8, "dropout": 0.0, "positions": True}  # fmt: skip
SPECIAL = (PAD, BOS)


def _emitted(model, image: Path, decode) -> Hypothesis:
    with torch.no_grad():
        return search(model, model.image_grid(load_image(image, size=16)[None]), decode, DATA["max_len"])[0][0]


@pytest.fixture(scope="module")
def caption_run(tmp_path_factory):
    """(an untrained 4 x 4-cell captioner over the words w0..w5 whose greedy caption of `image` has a padding or
    BOS step between words, the image, the tokens it emitted)."""
    root = tmp_path_factory.mktemp("caption")
    image = root / "noise.png"
    with torch.random.fork_rng():
        torch.manual_seed(0)
        Image.fromarray((torch.rand(20, 24, 3) * 255).to(torch.uint8).numpy()).save(image)
        run = validate_run({"data": DATA, "model": MODEL, "train": {"max_steps": 1, "eval_decode": False}, "decode": {"beam": 1}}, "tiny caption run")
        vocabs = CaptionVocabs(Vocabulary([f"w{i}" for i in range(6)]), "small_cnn")
        family = family_of("show_attend_tell")
        for seed in range(100):
            torch.manual_seed(seed)
            model = family.build(run, vocabs).eval()
            tokens = _emitted(model, image, run.decode).tokens
            special, word = [i for i, t in enumerate(tokens) if t in SPECIAL], [i for i, t in enumerate(tokens) if t not in SPECIAL]
            if special and word and special[0] < word[-1]:
                break
        else:
            pytest.fail("no seed of 100 emits padding or BOS before a word")
    folder = root / "tiny-caption"
    write_run(folder, run, family.vocabs_to_json(vocabs, folder))
    save_checkpoint(folder, 1, model, state={"step": 1})
    return folder, image, tokens


def test_word_attention_keeps_the_rows_of_the_shown_words():
    attention = torch.arange(6.0)[:, None].expand(6, 4)  # (steps, P): row t holds t
    hyp = Hypothesis(tokens=[5, PAD, 6, BOS, 7], score=0.0, log_prob=0.0, finished=True, attention=attention)
    assert [row[0] for row in word_attention(hyp)] == [0.0, 2.0, 4.0, 5.0]  # w, w, w and the EOS step
    cut = Hypothesis(tokens=[BOS, 5, 6], score=0.0, log_prob=0.0, finished=False, attention=attention[:3])
    assert [row[0] for row in word_attention(cut)] == [1.0, 2.0]


def test_the_npz_rows_are_the_words_attention_teacher_forced(caption_run, tmp_path, capsys):
    folder, image, tokens = caption_run
    out = tmp_path / "caption.npz"
    assert main(["attention", str(folder), "--image", str(image), "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    z = np.load(out)
    loaded = load_run(folder)
    words = loaded.vocabs.vocab.decode(tokens)
    finished = len(z["cross/queries"]) == len(words) + 1
    assert list(z["cross/queries"]) == words + ["</s>"] * finished == list(z["target_tokens"])
    assert list(z["tokens"]) == list(z["cross/keys"]) == [f"r{r}c{c}" for r in range(4) for c in range(4)]
    assert summary["kinds"] == {"cross": 1} and summary["prediction"] == " ".join(z["target_tokens"])
    model = loaded.model
    with torch.no_grad():
        memory = model.encode(model.image_grid(load_image(image, size=16)[None]), None)  # (1, P, D)
        _, alphas = model(memory, torch.tensor([[BOS, *tokens]]))  # (1, steps, P): the steps the search took
    steps = [t for t, token in enumerate(tokens) if token not in SPECIAL] + [len(tokens)] * finished
    assert z["cross/layer1"].shape == (1, len(steps), 16)
    np.testing.assert_allclose(z["cross/layer1"][0], alphas[0, steps].numpy(), atol=1e-6, rtol=1e-5)
    assert EOS not in tokens


def test_the_report_shows_one_overlay_per_word(caption_run, tmp_path):
    folder, image, _ = caption_run
    page = tmp_path / "caption.html"
    assert main(["report", str(folder), str(image), "--out", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    record = json.loads(html.split('id="attention-data">', 1)[1].split("</script>", 1)[0])[0]
    assert [o["word"] for o in record["overlays"]] == record["maps"]["cross"]["rows"]
    assert "attention" not in record and len(record["maps"]["cross"]["cols"]) == record["grid"] ** 2  # the grid's cells, once
