"""Hugging Face interop (docs/deployment.md): an attnkit run exported as a MarianMT folder computes
the same logits and greedy outputs in `transformers`; a random-weight MarianMT model with its own
SentencePiece models, imported, computes the same as in `transformers` and exports to CTranslate2
with the same greedy outputs; runs Marian cannot express are one error line."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
import torch

from attnkit.artifacts.runs import load_run
from attnkit.cli import main
from attnkit.data.batching import collate
from attnkit.data.vocab import BOS, EOS, PAD
from attnkit.decode.greedy import greedy
from attnkit.families import FAMILIES
from attnkit.families.translation.export import ctranslate2_model
from attnkit.families.translation.export.bundle import read_bundle
from attnkit.families.translation.translate import translate

transformers = pytest.importorskip("transformers")
spm = pytest.importorskip("sentencepiece")

FAMILY = FAMILIES["translation"]
SRC_WORDS = "a man woman dog ball runs jumps red blue green street park near the with on in small big child plays water sits".split()
TGT_WORDS = "ein mann frau hund ball rennt springt rot blau grün straße park nahe der mit auf im klein groß kind spielt wasser sitzt".split()


def _sentences(words: list[str], seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(rng.randint(2, 9))) for _ in range(n)]


def _train_spm(lines: list[str], path: Path) -> list[str]:
    """A unigram SentencePiece model as OPUS-MT's (default settings) on `lines`; returns its ordinary pieces."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model, vocab_size=48, model_type="unigram",
                                   hard_vocab_limit=False, num_threads=1, minloglevel=2)  # fmt: skip
    path.write_bytes(model.getvalue())
    sp = spm.SentencePieceProcessor(model_file=str(path))
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not sp.is_control(i) and not sp.is_unknown(i)]


def make_marian(folder: Path, activation: str = "swish") -> Path:
    """A random-weight MarianMT folder as OPUS-MT's are laid out: shared vocab.json (</s> 0, <unk> 1,
    ..., <pad> last), two SentencePiece models, swish, final_logits_bias, pad as decoder start."""
    folder.mkdir(parents=True)
    pieces = _train_spm(_sentences(SRC_WORDS, 1, 400), folder / "source.spm")
    pieces += [p for p in _train_spm(_sentences(TGT_WORDS, 2, 400), folder / "target.spm") if p not in pieces]
    vocab = {"</s>": 0, "<unk>": 1, **{p: i + 2 for i, p in enumerate(pieces)}}
    pad = vocab["<pad>"] = len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    config = transformers.MarianConfig(
        vocab_size=pad + 1, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=32, decoder_ffn_dim=32, activation_function=activation, scale_embedding=True, pad_token_id=pad,
        decoder_start_token_id=pad, eos_token_id=0, forced_eos_token_id=0, max_position_embeddings=128, init_std=0.2,
    )  # fmt: skip
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = transformers.MarianMTModel(config).eval()
        with torch.no_grad():
            model.final_logits_bias.normal_(0.0, 1.0)
            model.final_logits_bias[0, 0] += 2.0  # EOS a little likelier, so that some greedy outputs end early
    model.generation_config = transformers.GenerationConfig(decoder_start_token_id=pad, eos_token_id=0, pad_token_id=pad, forced_eos_token_id=0,
                                                            bad_words_ids=[[pad]], num_beams=3, max_length=64)  # fmt: skip
    model.save_pretrained(str(folder))
    tokenizer = transformers.MarianTokenizer(str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"),
                                             source_lang="en", target_lang="de")  # fmt: skip
    tokenizer.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def marian(tmp_path_factory) -> Path:
    return make_marian(tmp_path_factory.mktemp("hf") / "opus-mt-tiny")


@pytest.fixture(scope="module")
def imported(marian: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("imported") / "run"
    assert main(["import", "hf", str(marian), "--out", str(out)]) == 0
    return out


def _marian_ids(run: Path, marian: Path) -> torch.Tensor:
    """The Marian id of each attnkit id of an imported run (PAD and BOS: Marian's pad)."""
    tokens = json.loads((run / "run.json").read_text(encoding="utf-8"))["src_vocab"]["tokens"]
    vocab = json.loads((marian / "vocab.json").read_text(encoding="utf-8"))
    return torch.tensor([vocab[{"<s>": "<pad>"}.get(t, t)] for t in tokens])  # (V',)


def test_import_logits_match_transformers(marian: Path, imported: Path) -> None:
    hf = transformers.MarianMTModel.from_pretrained(str(marian)).eval()
    loaded = load_run(imported, FAMILY)
    rows = _marian_ids(imported, marian)  # (V',)
    rng = random.Random(3)
    examples = [([rng.randrange(4, len(rows)) for _ in range(rng.randint(2, 9))], [rng.randrange(4, len(rows)) for _ in range(rng.randint(2, 9))])
                for _ in range(12)]  # fmt: skip
    batch = collate(examples, range(12))
    pad = hf.config.pad_token_id
    src, tgt_in = rows[batch.src], rows[batch.tgt_in]  # attnkit ids -> Marian ids (PAD, BOS -> pad)
    with torch.no_grad():
        ours = loaded.model(batch.src, batch.src_keep, batch.tgt_in)  # (B, T, V')
        theirs = hf(input_ids=src, attention_mask=batch.src_keep.long(), decoder_input_ids=tgt_in).logits  # (B, T, V)
    keep = batch.tgt_keep  # positions that are not padding
    columns = [i for i in range(len(rows)) if i not in (PAD, BOS)]  # PAD and BOS: Marian's pad, banned (bias -1e4)
    assert (ours[keep][:, columns] - theirs[keep][:, rows[columns]]).abs().max() < 1e-4
    assert (ours[..., [PAD, BOS]] < -1000).all() and pad == int(rows[PAD])


def test_import_greedy_matches_generate_and_ctranslate2(marian: Path, imported: Path, tmp_path: Path) -> None:
    hf = transformers.MarianMTModel.from_pretrained(str(marian)).eval()
    tokenizer = transformers.MarianTokenizer.from_pretrained(str(marian))
    loaded = load_run(imported, FAMILY)
    lines = _sentences(SRC_WORDS, 7, 40)
    limit = 20
    decode = loaded.run.decode.with_overrides(beam=1, max_len_a=0.0, max_len_b=limit)
    ours = [nbest[0].text for nbest in translate(loaded.model, loaded.vocabs, lines, decode)]
    inputs = tokenizer(lines, return_tensors="pt", padding=True)
    with torch.no_grad():
        out = hf.generate(**inputs, num_beams=1, do_sample=False, max_new_tokens=limit, forced_eos_token_id=None)
    theirs = tokenizer.batch_decode(out, skip_special_tokens=True)
    assert ours == theirs
    assert sum(len(t.split()) < limit for t in ours) > 0  # some ended with EOS before the limit
    ct2 = tmp_path / "ct2"
    assert main(["export", str(imported), "--format", "ctranslate2", "--out", str(ct2)]) == 0
    bundle = read_bundle(ct2, "ctranslate2")
    assert ctranslate2_model.translate(bundle, ctranslate2_model.load(bundle), lines, decode) == ours


@pytest.fixture(scope="module")
def trained_post(tmp_path_factory, tiny_transformer_maker, train_to_reverse) -> Path:
    """The tiny post-norm run of test_deployment (with swish), taught to reverse (word tokenizer)."""
    return train_to_reverse(tiny_transformer_maker(tmp_path_factory.mktemp("hf-export") / "post", activation="swish"))


def test_export_logits_and_greedy_match(trained_post: Path, tmp_path: Path) -> None:
    out = tmp_path / "hf"
    assert main(["export", str(trained_post), "--format", "hf", "--out", str(out)]) == 0
    assert {"config.json", "model.safetensors", "generation_config.json", "vocab.json"} <= {p.name for p in out.iterdir()}
    hf = transformers.MarianMTModel.from_pretrained(str(out)).eval()
    loaded = load_run(trained_post, FAMILY)
    rng = random.Random(5)
    examples = [(ids, ids[::-1]) for ids in ([rng.randrange(4, 14) for _ in range(rng.randint(2, 6))] for _ in range(100))]
    batch = collate(examples, range(100))
    with torch.no_grad():
        ours = loaded.model(batch.src, batch.src_keep, batch.tgt_in)  # (B, T, V)
        theirs = hf(input_ids=batch.src, attention_mask=batch.src_keep.long(), decoder_input_ids=batch.tgt_in).logits  # (B, T, V)
        assert (ours - theirs)[batch.tgt_keep].abs().max() < 1e-4
        hyps = greedy(loaded.model, batch.src, batch.src_keep, max_len_a=0.0, max_len_b=12, bos=BOS, eos=EOS)
        generated = hf.generate(input_ids=batch.src, attention_mask=batch.src_keep.long(), num_beams=1, max_new_tokens=12)  # (B, 1 + T')
    theirs_ids = [[t for t in row[1:].tolist() if t != PAD] for row in generated]  # drop the decoder start and the padding
    ours_ids = [h.tokens + [EOS] * h.finished for h in hyps]
    assert ours_ids == theirs_ids
    assert sum(ids == src[::-1] + [EOS] for ids, (src, _) in zip(ours_ids, examples)) >= 40  # outputs of a trained model, ending in EOS


def test_export_sentencepiece_run_with_tokenizer(tmp_path: Path) -> None:
    """A run tokenized by SentencePiece exports its tokenizer: the Auto classes load MarianTokenizer and MarianMTModel, whose greedy text is attnkit's."""
    from attnkit.artifacts.checkpoint import save_checkpoint
    from attnkit.artifacts.runs import write_run
    from attnkit.config.load import validate
    from attnkit.data.tokenizers import SentencePieceTokenizer, train_sentencepiece, vocab_from_sentencepiece
    from attnkit.families.translation.codec import Vocabs, vocabs_to_json
    from attnkit.families.translation.config import TranslationRun

    text = tmp_path / "text.txt"
    text.write_text("".join(f"{s}\n" for s in _sentences(SRC_WORDS + TGT_WORDS, 3, 600)), encoding="utf-8")
    model_path = train_sentencepiece([text], vocab_size=64, cache_dir=tmp_path / "spm")
    tokenizer, vocab = SentencePieceTokenizer(model_path), vocab_from_sentencepiece(model_path)
    tree = {"data": {"corpus": "synthetic", "tokenizer": "bpe", "vocab_size": 64}, "train": {"max_steps": 1}, "decode": {"beam": 1, "max_len_b": 10},
            "model": {"kind": "transformer", "layers": 2, "d_model": 16, "n_heads": 2, "d_ff": 32, "dropout": 0.0}}  # fmt: skip
    run, vocabs, folder = validate(tree, "spm run", TranslationRun), Vocabs(tokenizer, tokenizer, vocab, vocab), tmp_path / "run"
    write_run(folder, run, vocabs_to_json(vocabs, folder))
    with torch.random.fork_rng():
        torch.manual_seed(0)
        save_checkpoint(folder, 1, FAMILY.build(run, vocabs), state={"step": 1})
    out = tmp_path / "hf"
    assert main(["export", str(folder), "--format", "hf", "--out", str(out)]) == 0
    lines = _sentences(SRC_WORDS, 9, 20)
    loaded = load_run(folder, FAMILY)
    ours = [nbest[0].text for nbest in translate(loaded.model, loaded.vocabs, lines, run.decode.with_overrides(max_len_a=0.0, max_len_b=10))]
    # transformers 5 has no pipeline("translation") (removed); the tokenizer and generate are what it ran
    tokenizer, hf = transformers.AutoTokenizer.from_pretrained(str(out)), transformers.AutoModelForSeq2SeqLM.from_pretrained(str(out))
    assert type(tokenizer).__name__ == "MarianTokenizer" and type(hf).__name__ == "MarianMTModel"
    with torch.no_grad():
        generated = hf.generate(**tokenizer(lines, return_tensors="pt", padding=True), max_new_tokens=10)
    assert [t.strip() for t in ours] == tokenizer.batch_decode(generated, skip_special_tokens=True)  # MarianTokenizer strips the ends


@pytest.mark.parametrize("change, words", [({"norm": "pre"}, "pre-norm"), ({"positions": "learned"}, "learned"), ({"d_k": 8, "d_v": 8}, "d_k")])
def test_export_refuses_what_marian_cannot_express(tiny_transformer_maker, tmp_path: Path, capsys, change: dict, words: str) -> None:
    run = tiny_transformer_maker(tmp_path / "run", **change)
    assert main(["export", str(run), "--format", "hf", "--out", str(tmp_path / "hf")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err and not (tmp_path / "hf").exists()


def test_export_refuses_rnn(tiny_rnn_run: Path, tmp_path: Path, capsys) -> None:
    assert main(["export", str(tiny_rnn_run), "--format", "hf", "--out", str(tmp_path / "hf")]) == 2
    assert "only Transformer runs" in capsys.readouterr().err


def test_import_refuses_pickles_and_offline_ids(tmp_path: Path, capsys, monkeypatch) -> None:
    folder = tmp_path / "bin-only"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "marian"}', encoding="utf-8")
    (folder / "pytorch_model.bin").write_bytes(b"not loaded")
    assert main(["import", "hf", str(folder), "--out", str(tmp_path / "a")]) == 2
    assert "only pickled weights (pytorch_model.bin)" in capsys.readouterr().err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    assert main(["import", "hf", "Helsinki-NLP/opus-mt-xx-yy", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Helsinki-NLP/opus-mt-xx-yy" in err and not (tmp_path / "b").exists()


def test_missing_transformers_is_one_line(trained_post: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers -> ImportError
    assert main(["export", str(trained_post), "--format", "hf", "--out", str(tmp_path / "hf")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "attnkit: error: attnkit export --format hf needs transformers, which is not installed: pip install 'attnkit[hf]'"
    assert not (tmp_path / "hf").exists()


def _finetune_config(tmp_path: Path, model: str = "") -> Path:
    """A config that names word-for-word English->German pairs of the test words; no model section (it comes from --init)."""
    mapping = dict(zip(SRC_WORDS, TGT_WORDS))
    for name, seed, n in (("train", 11, 400), ("valid", 12, 40)):
        src = _sentences(SRC_WORDS, seed, n)
        (tmp_path / f"{name}.en").write_text("".join(f"{s}\n" for s in src), encoding="utf-8")
        (tmp_path / f"{name}.de").write_text("".join(" ".join(mapping[w] for w in s.split()) + "\n" for s in src), encoding="utf-8")
    config = tmp_path / "finetune.yaml"
    config.write_text(
        f"""data:
  corpus: files
  train: {{src: {tmp_path}/train.en, tgt: {tmp_path}/train.de}}
  valid: {{src: {tmp_path}/valid.en, tgt: {tmp_path}/valid.de}}
{model}train: {{max_steps: 60, eval_every: 20, max_tokens: 600, schedule: {{kind: constant, lr: 0.003}}, device: cpu, precision: fp32,
         early_stopping: loss, threads: 1}}
decode: {{beam: 1, max_len_a: 1.0, max_len_b: 3}}
""",
        encoding="utf-8",
    )
    return config


def _valid_losses(run: Path, key: str = "loss") -> dict[int, float]:
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    return {r["step"]: r[key] for r in records if r["kind"] == "valid"}


def test_finetune_imported_model_with_init_and_resume(imported: Path, tmp_path: Path, capsys) -> None:
    from safetensors.torch import load_file

    config, out = _finetune_config(tmp_path), tmp_path / "tuned"
    assert main(["train", str(config), "--out", str(out), "--init", str(imported)]) == 0
    losses, ppl = _valid_losses(out), _valid_losses(out, "ppl")
    # The label-smoothed loss carries a constant eps / V * 2e4 for PAD and BOS (bias -1e4, importer.NEVER): large for V = 100,
    # 0.03 for OPUS-MT's 58k; the perplexity (NLL) has none.
    assert sorted(losses) == [20, 40, 60] and losses[20] > losses[40] > losses[60] and ppl[60] < 0.6 * ppl[20], (losses, ppl)
    assert (out / "init.json").is_file() and (out / "source.spm").is_file() and (out / "target.spm").is_file()
    tuned = load_run(out, FAMILY)
    assert tuned.run.model == load_run(imported, FAMILY).run.model  # the imported model: swish, output_bias
    bias = load_file(str(next((imported / "checkpoints").iterdir()) / "model.safetensors"))["final_logits_bias"]
    assert torch.equal(tuned.model.final_logits_bias, bias)  # a buffer, never trained: the imported one
    assert main(["train", str(config), "--out", str(out), "--resume", "--set", "train.max_steps=80"]) == 0  # no --init needed
    assert max(_valid_losses(out)) == 80
    capsys.readouterr()
    wrong = _finetune_config(tmp_path, model="model: {kind: transformer, d_model: 32}\n")
    assert main(["train", str(wrong), "--out", str(tmp_path / "wrong"), "--init", str(imported)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "model.d_model: 32" in err
