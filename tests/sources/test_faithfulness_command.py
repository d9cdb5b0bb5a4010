"""`attnkit faithfulness` end to end: a tiny sentence classifier run, a tiny random-weight BERT classifier
(`hf_tiny`), a tiny translation run; resuming; refusing another model, data file or settings.

The figures in examples.jsonl are checked against the models' own forward passes, not against the code
that wrote them: a sentence classifier's removed word is the word replaced by `<pad>` (whose embedding row
is zero: the same input as the embedding set to zero), a BERT's removed token is the token replaced by
[MASK]; the attention rows are recomputed from `output_attentions`.
"""

from __future__ import annotations

import io
import json
import math
import shutil
import sys
from pathlib import Path

import pytest
import torch

from attnkit.analysis.correlation import kendall_tau
from attnkit.analysis.faithfulness import ranking, top_k
from attnkit.cli import main
from attnkit.data.tables import read_texts
from attnkit.errors import AttnkitError
from attnkit.sources import open_source
from attnkit.sources.faithfulness import EXAMPLES, Settings, run_faithfulness

SENTENCES = ["t1 t2 t3 t4 t5", "t9 t8 t7", "t3 t3 t1 t0 t6 t2 t2 t8 t9 t1 t4"]
BERT_TEXTS = ["the cats sat on the mat .", "a dog ran", "hello world , the cat sat"]


def _data(tmp_path: Path, texts: list[str], name: str = "data.tsv") -> Path:
    path = tmp_path / name
    path.write_text("label\ttext\n" + "".join(f"pos\t{t}\n" for t in texts), encoding="utf-8")
    return path


def _lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / EXAMPLES).read_text(encoding="utf-8").splitlines()]


def _pad_probs(model, ids: list[int], replaced: list[list[int]], c: int) -> list[float]:
    """p(c) of the sentence `ids` with, per row, the positions `replaced` turned into <pad> (id 0), kept as input."""
    rows = torch.tensor([[0 if i in r else t for i, t in enumerate(ids)] for r in replaced])  # (N, n)
    with torch.no_grad():
        out = model(rows, torch.ones_like(rows, dtype=torch.bool))
    return out.logits.double().softmax(-1)[:, c].tolist()


def test_a_sentence_classifier_end_to_end(tiny_sase_run, tmp_path, capsys):
    data, out = _data(tmp_path, SENTENCES), tmp_path / "out"
    assert main(["faithfulness", str(tiny_sase_run), "--input", str(data), "--out", str(out)]) == 0
    assert "3 texts, 3 outputs, 5 rankings" in capsys.readouterr().out
    doc = json.loads((out / "faithfulness.json").read_text())
    assert list(doc["methods"]) == ["hops/layer1", "ixg", "ig", "loo", "random"]
    assert doc["unavailable"] == ["rollout", "flow"] and doc["outputs"] == 3 and doc["run"]["examples"] == 3
    assert (out / "deletion.png").stat().st_size > 0 and "| hops/layer1 |" in (out / "faithfulness.md").read_text()
    loaded = open_source(str(tiny_sase_run)).loaded
    vocab = loaded.vocabs.vocab
    records = _lines(out)[1:]
    for text, record in zip(SENTENCES, records):
        (o,) = record["outputs"]
        ids = vocab.encode(text.split())
        n = len(ids)
        with torch.no_grad():
            own = loaded.model(torch.tensor([ids]), torch.ones(1, n, dtype=torch.bool))
        probs = own.logits[0].double().softmax(-1)
        c = int(probs.argmax())
        assert o["label"] == f"class {c} ({['neg', 'pos'][c]})" and o["p"] == pytest.approx(float(probs[c]), abs=1e-6)
        assert o["scores"]["hops/layer1"] == pytest.approx(own.attention[0].mean(0).tolist(), abs=1e-6)  # the hops' mean
        assert o["scores"]["loo"] == pytest.approx([o["p"] - q for q in _pad_probs(loaded.model, ids, [[i] for i in range(n)], c)], abs=1e-6)
        order = ranking(torch.tensor(o["scores"]["ig"])).tolist()
        tops = [order[: top_k(d, n)] for d in (0.01, 0.05, 0.10, 0.20, 0.50)]
        without = _pad_probs(loaded.model, ids, tops, c)
        only = _pad_probs(loaded.model, ids, [[i for i in range(n) if i not in top] for top in tops], c)
        assert o["comprehensiveness"]["ig"] == pytest.approx([o["p"] - q for q in without], abs=1e-6)
        assert o["sufficiency"]["ig"] == pytest.approx([o["p"] - q for q in only], abs=1e-6)
        assert o["curve"]["ig"][-1] == pytest.approx(_pad_probs(loaded.model, ids, [list(range(n))], c)[0], abs=1e-6)
    ig = doc["methods"]["ig"]
    aopc = [sum(r["outputs"][0]["comprehensiveness"]["ig"]) / 5 for r in records]
    assert ig["comprehensiveness"]["aopc"]["mean"] == pytest.approx(sum(aopc) / 3, abs=1e-12) and ig["n"] == 3
    taus = [kendall_tau(torch.tensor(r["outputs"][0]["scores"]["ixg"]), torch.tensor(r["outputs"][0]["scores"]["loo"])) for r in records]
    assert doc["kendall_tau"]["ixg"]["loo"]["mean"] == pytest.approx(sum(taus) / 3, abs=1e-12)


@pytest.fixture(scope="module")
def sharp_bert(hf_folder, tmp_path_factory) -> Path:
    """The tiny BERT classifier with its weights but LayerNorm's times 10: at BERT's initial scale (std 0.02) every
    text gets the same probabilities to 1e-6, and removing a token changes nothing to check."""
    import transformers

    folder = tmp_path_factory.mktemp("hf") / "sharp-bert"
    shutil.copytree(hf_folder("bert"), folder)
    model = transformers.BertForSequenceClassification.from_pretrained(folder)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" not in name:
                p.mul_(10.0)
    model.save_pretrained(folder, safe_serialization=True)
    pair_tokenizer().save_pretrained(folder)
    return folder


def pair_tokenizer():
    """`hf_tiny`'s BERT tokenizer with BERT's template for pairs too: [CLS] A [SEP] B [SEP], token types 0 then 1."""
    from hf_tiny import VOCAB
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]", continuing_subword_prefix="##"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[(s, VOCAB[s]) for s in ("[CLS]", "[SEP]")]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="<pad>", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def _bert_rows(model, ids: torch.Tensor):
    """(p (C,), each layer's head mean of row 0 (L, S)) from the model's own output_attentions."""
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
    return out.logits[0].double().softmax(-1), torch.stack([a[0].mean(0)[0] for a in out.attentions])


def test_a_random_weight_bert_classifier_end_to_end(sharp_bert, tmp_path):
    folder = sharp_bert
    data, out = tmp_path / "data.jsonl", tmp_path / "out"
    data.write_text("".join(json.dumps({"text": t}) + "\n" for t in BERT_TEXTS), encoding="utf-8")
    source = open_source(str(folder))
    hf = source.hf
    doc = run_faithfulness(source, str(folder), data, out)
    assert list(doc["methods"]) == ["encoder/layer1", "encoder/layer2", "rollout", "flow", "ixg", "ig", "loo", "random"]
    assert doc["unavailable"] == [] and doc["integrated_gradients"]["max_relative_error"] <= 0.01
    tok, mask = hf.tokenizer, hf.tokenizer.mask_token_id
    for text, record in zip(BERT_TEXTS, _lines(out)[1:]):
        (o,) = record["outputs"]
        ids = tok(text, return_tensors="pt")["input_ids"]  # (1, S): [CLS] ... [SEP]
        probs, rows = _bert_rows(hf.model, ids)
        c = int(probs.argmax())
        assert o["tokens"] == tok.convert_ids_to_tokens(ids[0].tolist())[1:-1]  # never [CLS] or [SEP]
        assert o["p"] == pytest.approx(float(probs[c]), abs=1e-6)
        for l in range(2):
            assert o["scores"][f"encoder/layer{l + 1}"] == pytest.approx(rows[l, 1:-1].tolist(), abs=1e-6)
        n = len(o["tokens"])
        order = ranking(torch.tensor(o["scores"]["flow"])).tolist()
        for j, d in enumerate((0.01, 0.05, 0.10, 0.20, 0.50)):
            masked = ids.clone()
            masked[0, [1 + i for i in order[: top_k(d, n)]]] = mask
            assert o["comprehensiveness"]["flow"][j] == pytest.approx(o["p"] - float(_bert_rows(hf.model, masked)[0][c]), abs=1e-6)
        assert max(abs(v) for v in o["scores"]["loo"]) > 1e-3  # the check above compares figures that differ


def test_a_translation_run_explains_each_output_token(tiny_transformer_run, tmp_path):
    from attnkit.families.translation.attribute import score_function

    data, out = tmp_path / "src.txt", tmp_path / "out"
    data.write_text("t1 t2\n", encoding="utf-8")
    loaded = open_source(str(tiny_transformer_run))
    doc = run_faithfulness(loaded, str(tiny_transformer_run), data, out, Settings(methods=("attention", "rollout", "loo", "random")))
    outputs = _lines(out)[1]["outputs"]
    assert doc["outputs"] == len(outputs) >= 1 and list(doc["methods"]) == ["cross/layer1", "cross/layer2", "rollout", "loo", "random"]
    for t, o in enumerate(outputs):
        f, x, label = score_function(loaded.loaded, "t1 t2", t)
        assert o["label"] == label and o["p"] == pytest.approx(math.exp(float(f(x[None]).detach()[0])), abs=1e-6)
        assert len(o["tokens"]) == x.size(0)


def _interrupt_after(n: int):
    def progress(done: int, total: int) -> None:
        if done >= n:
            raise KeyboardInterrupt

    return progress


def test_a_run_stopped_after_two_texts_resumes_to_the_same_summary(tiny_sase_run, tmp_path):
    data = _data(tmp_path, SENTENCES)
    loaded = open_source(str(tiny_sase_run))
    settings = Settings(methods=("attention", "ig", "loo", "random"))
    fresh = run_faithfulness(loaded, "tiny", data, tmp_path / "fresh", settings)
    out = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        run_faithfulness(loaded, "tiny", data, out, settings, progress=_interrupt_after(2))
    assert [r.get("index") for r in _lines(out)] == [None, 0, 1]
    with open(out / EXAMPLES, "a", encoding="utf-8") as f:
        f.write('{"index": 2, "text": "t3 t3 t1')  # a kill during the append
    calls = []
    resumed = run_faithfulness(loaded, "tiny", data, out, settings, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(2, 3), (3, 3)]  # the two texts on file are not scored again
    assert resumed == fresh
    assert (out / "faithfulness.json").read_text() == (tmp_path / "fresh" / "faithfulness.json").read_text()
    assert [r.get("index") for r in _lines(out)] == [None, 0, 1, 2]


def test_texts_as_arguments_are_a_data_set_in_the_out_folder(tiny_sase_run, tmp_path, capsys):
    """TEXT arguments (the CLI convention) are measured as a file of them would be, and kept as OUT/texts.txt."""
    out = tmp_path / "out"
    assert main(["faithfulness", str(tiny_sase_run), *SENTENCES[:2], "--out", str(out), "--methods", "random"]) == 0
    assert "2 texts" in capsys.readouterr().out
    assert (out / "texts.txt").read_text() == "".join(t + "\n" for t in SENTENCES[:2])
    assert main(["faithfulness", str(tiny_sase_run), "--input", str(out / "texts.txt"), "--out", str(tmp_path / "b"), "--methods", "random"]) == 0
    assert (out / "faithfulness.json").read_text().replace(str(out / "texts.txt"), "") == (tmp_path / "b" / "faithfulness.json").read_text().replace(
        str(out / "texts.txt"), ""
    )


def test_an_empty_stdin_is_refused_in_one_line_before_anything_is_written(tiny_sase_run, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\n  \n")))
    assert main(["faithfulness", str(tiny_sase_run), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == ["attnkit: error: <stdin>: no texts"]
    assert not (tmp_path / "out").exists()


def test_another_model_data_file_or_settings_is_refused_in_one_line(tiny_sase_run, tiny_rnn_run, tmp_path, capsys):
    data, out = _data(tmp_path, SENTENCES[:1]), tmp_path / "out"
    args = ["faithfulness", str(tiny_sase_run), "--input", str(data), "--out", str(out), "--methods", "random"]
    assert main(args) == 0
    capsys.readouterr()
    assert main([*args, "--seed", "1"]) == 2
    assert (
        capsys.readouterr().err.strip() == f"attnkit: error: {out / EXAMPLES}: written for other settings; cannot resume: use another --out or delete the file"
    )
    assert (
        main(["faithfulness", str(tiny_sase_run), "--input", str(_data(tmp_path, SENTENCES[1:2], "other.tsv")), "--out", str(out), "--methods", "random"]) == 2
    )
    assert "written for another data file;" in capsys.readouterr().err
    with pytest.raises(AttnkitError, match="written for another model;"):
        run_faithfulness(open_source(str(tiny_rnn_run)), "rnn", data, out, Settings(methods=("random",)))


def test_the_data_formats(tmp_path):
    plain = tmp_path / "a.txt"
    plain.write_text("first one\n\nsecond\n", encoding="utf-8")
    assert read_texts(plain) == ["first one", "second"]
    pairs = tmp_path / "p.csv"
    pairs.write_text('premise,hypothesis,label\n"a man, sleeping",nobody,neutral\n', encoding="utf-8")
    assert read_texts(pairs, "premise", "hypothesis") == ["a man, sleeping\tnobody"]


def test_the_abnar_zuidema_benchmark_on_the_bert_classifier(sharp_bert, tmp_path, monkeypatch, capsys):
    from benchmark_scripts import load_benchmark

    bench = load_benchmark("faithfulness_papers")
    data, out = tmp_path / "data.jsonl", tmp_path / "o"
    data.write_text(json.dumps({"text": BERT_TEXTS[0]}) + "\n", encoding="utf-8")
    monkeypatch.setattr("sys.argv", ["fp", "az", str(sharp_bert), "--data", str(data), "--out", str(out)])
    bench.main()
    doc = json.loads(capsys.readouterr().out)
    (o,) = _lines(out / "faithfulness")[1]["outputs"]
    assert doc["raw_attention"] == "encoder/layer2" and doc["outputs"] == 1
    rho = bench.spearman(o["scores"]["flow"], [abs(v) for v in o["scores"]["ixg"]])
    assert doc["spearman"]["flow vs ixg"] == {"mean": round(rho, 4), "std": 0.0, "n": 1}
    assert doc["kendall_tau"]["rollout vs loo"]["mean"] == round(kendall_tau(torch.tensor(o["scores"]["rollout"]), torch.tensor(o["scores"]["loo"])), 4)


def test_removals_are_predicted_once_each_in_batches_of_a_bounded_size():
    from attnkit.sources.scored import batched

    shapes = []

    def predict(keep: torch.Tensor) -> torch.Tensor:
        shapes.append(tuple(keep.shape))
        return keep.sum(-1).float() + 0.5 * keep[:, 0]  # (N,)

    rows = torch.tensor([[1, 1, 1], [0, 1, 1], [1, 0, 1], [1, 1, 0], [0, 0, 1]], dtype=torch.bool)  # (5, 3), all distinct
    want = (rows.sum(-1) + 0.5 * rows[:, 0]).tolist()
    run = batched(predict, tokens=7)  # 7 // 3 tokens: 2 inputs a pass
    got = run(rows)
    assert shapes == [(2, 3), (2, 3), (1, 3)] and got.dtype == torch.float64 and got.tolist() == want
    again = run(torch.cat([rows[[4, 0]], torch.zeros(2, 3, dtype=torch.bool)]))  # two known masks, one new one twice
    assert shapes[3:] == [(1, 3)] and again.tolist() == [want[4], want[0], 0.0, 0.0]


@pytest.mark.parametrize("given", ["--input", "text"])
@pytest.mark.parametrize("name", ["distilbert", "gpt2"])
def test_a_model_without_a_class_to_explain_is_refused_in_one_line(hf_folder, tmp_path, capsys, name, given):
    data = tmp_path / "a.txt"
    data.write_text("the cat sat\n", encoding="utf-8")
    folder = hf_folder(name)
    texts = ["--input", str(data)] if given == "--input" else ["the cat sat"]  # a TEXT argument is written to OUT/texts.txt
    assert main(["faithfulness", str(folder), *texts, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    want = "has no sequence-classification head" if name == "distilbert" else "this is a decoder model"
    assert len(err) == 1 and err[0].startswith(f"attnkit: error: {folder}: ") and want in err[0]
    assert not (tmp_path / "o").exists()  # refused before any text, and before the progress file


def test_a_sentence_pair_is_encoded_as_a_pair_and_both_texts_are_ranked(sharp_bert, tmp_path):
    data, out = tmp_path / "pairs.csv", tmp_path / "out"
    data.write_text("premise,hypothesis,label\nthe cats sat,a dog ran,x\n", encoding="utf-8")
    source = open_source(str(sharp_bert))
    hf = source.hf
    run_faithfulness(source, str(sharp_bert), data, out, Settings(methods=("loo",), text_column="premise", text2_column="hypothesis"))
    (o,) = _lines(out)[1]["outputs"]
    enc = hf.tokenizer("the cats sat", "a dog ran", return_tensors="pt")
    assert hf.tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist()) == ["[CLS]", "the", "ca", "##t", "##s", "sat", "[SEP]", "a", "dog", "ran", "[SEP]"]
    assert o["tokens"] == ["the", "ca", "##t", "##s", "sat", "a", "dog", "ran"]
    with torch.no_grad():
        probs = hf.model(**enc).logits[0].double().softmax(-1)  # with the token types of the pair
        c = int(probs.argmax())
        masked = enc["input_ids"].clone()
        masked[0, 8] = hf.tokenizer.mask_token_id  # "dog", the 7th ranked token
        without = float(hf.model(**{**enc, "input_ids": masked}).logits[0].double().softmax(-1)[c])
    assert o["p"] == pytest.approx(float(probs[c]), abs=1e-6) and o["scores"]["loo"][6] == pytest.approx(o["p"] - without, abs=1e-6)


def test_a_text_the_model_cannot_take_is_named_by_file_and_number(hf_folder, tmp_path, capsys):
    data = tmp_path / "a.txt"
    data.write_text("the cat sat\n" + "the dog ran " * 20 + "\n", encoding="utf-8")  # 60 words: over the 32 positions
    folder = hf_folder("bert")
    assert main(["faithfulness", str(folder), "--input", str(data), "--out", str(tmp_path / "o"), "--methods", "random"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"attnkit: error: {data}, text 2: {folder}: the text is 62 tokens, the model takes at most 32 (--truncate cuts it)"
    assert len(_lines(tmp_path / "o")) == 2  # the header and the first text, done before the error


def test_the_bert_classifiers_figures_are_the_per_input_paths_in_five_passes_a_text(sharp_bert, tmp_path):
    """The batched run (input x gradient and integrated gradients from one pass, the removals of every ranking in
    one call) against the old per-input path: captum's InputXGradient and IntegratedGradients each on its own,
    leave-one-out one masked forward pass per token, comprehensiveness one per bin."""
    from attnkit.analysis.attribution import input_x_gradient, integrated_gradients
    from attnkit.sources.faithfulness import scored_outputs

    data, out = tmp_path / "data.jsonl", tmp_path / "out"
    data.write_text("".join(json.dumps({"text": t}) + "\n" for t in BERT_TEXTS), encoding="utf-8")
    source = open_source(str(sharp_bert))
    hf, settings = source.hf, Settings(methods=("attention", "ixg", "ig", "loo", "random"))
    passes = []
    handle = hf.model.register_forward_hook(lambda module, args, output: passes.append(args))
    try:
        run_faithfulness(source, str(sharp_bert), data, out, settings)
    finally:
        handle.remove()
    records = _lines(out)[1:]
    steps = [r["outputs"][0]["ig"]["steps"] for r in records]
    # per text: the record's pass (its attention, through the one builder), the forward pass scored (its logits),
    # the gradient pass (one more per doubling of the steps), leave-one-out's removals, every ranking's other removals
    assert len(passes) == sum(5 + int(math.log2(s // 50)) for s in steps)
    for text, record in zip(BERT_TEXTS, records):
        (o,) = record["outputs"]
        (e,) = scored_outputs(source, text, settings)
        assert o["scores"]["ixg"] == pytest.approx(input_x_gradient(e.f, e.x).scores[e.positions].tolist(), abs=1e-6)
        ig = integrated_gradients(e.f, e.x, check=False)
        assert o["scores"]["ig"] == pytest.approx(ig.scores[e.positions].tolist(), abs=1e-6) and o["ig"]["steps"] == ig.steps
        ids = hf.tokenizer(text, return_tensors="pt")["input_ids"]  # (1, S)
        probs, _ = _bert_rows(hf.model, ids)
        c = int(probs.argmax())
        for i, position in enumerate(e.positions):
            masked = ids.clone()
            masked[0, position] = hf.tokenizer.mask_token_id
            assert o["scores"]["loo"][i] == pytest.approx(o["p"] - float(_bert_rows(hf.model, masked)[0][c]), abs=1e-6)
        order = ranking(torch.tensor(o["scores"]["ig"])).tolist()
        for j, d in enumerate((0.01, 0.05, 0.10, 0.20, 0.50)):
            kept = ids.clone()
            kept[0, [e.positions[i] for i in order[top_k(d, len(order)) :]]] = hf.tokenizer.mask_token_id
            assert o["sufficiency"]["ig"][j] == pytest.approx(o["p"] - float(_bert_rows(hf.model, kept)[0][c]), abs=1e-6)
