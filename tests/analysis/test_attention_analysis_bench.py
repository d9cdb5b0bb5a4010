"""benchmarks/attention_analysis.py: decoding with a head mask (the BLEU pruning curve) and the head names."""

from __future__ import annotations

import torch

from attnkit.data.vocab import BOS, EOS
from attnkit.decode.greedy import greedy
from attnkit.models.transformer import Transformer
from attnkit.sources.importance import Layout, split_mask
from benchmark_scripts import load_benchmark

bench = load_benchmark("attention_analysis")


def _model() -> Transformer:
    torch.manual_seed(0)
    return Transformer(src_vocab_size=12, tgt_vocab_size=12, d_model=16, n_heads=4, d_ff=32, encoder_layers=2, decoder_layers=2, dropout=0.0).eval()


def test_masked_decoding_with_ones_is_plain_decoding_and_a_mask_changes_it_consistently() -> None:
    model = _model()
    src = torch.randint(4, 12, (6, 7))  # (B, S)
    keep = torch.ones_like(src, dtype=torch.bool)  # (B, S)
    plain = greedy(model, src, keep, max_len_a=0.0, max_len_b=8, bos=BOS, eos=EOS)
    ones = split_mask(torch.ones(6, 4), Layout(2, 2, 4))
    same = greedy(bench.MaskedDecoding(model, ones), src, keep, max_len_a=0.0, max_len_b=8, bos=BOS, eos=EOS)
    assert [h.tokens for h in same] == [h.tokens for h in plain]
    gates = torch.ones(6, 4)
    gates[[0, 2, 4, 5], [1, 3, 0, 2]] = 0.0  # one head of each kind off
    mask = split_mask(gates, Layout(2, 2, 4))
    hyps = greedy(bench.MaskedDecoding(model, mask), src, keep, max_len_a=0.0, max_len_b=8, bos=BOS, eos=EOS)
    assert [h.tokens for h in hyps] != [h.tokens for h in plain]
    for i, h in enumerate(hyps):  # each greedy token is the argmax of the teacher-forced masked pass on its own prefix
        tgt_in = torch.tensor([[BOS] + h.tokens])  # (1, T)
        with torch.no_grad():
            logits = model(src[i : i + 1], keep[i : i + 1], tgt_in, mask)  # (1, T, V)
        expected = logits[0].argmax(-1).tolist()  # (T,)
        assert expected[: len(h.tokens)] == h.tokens and (not h.finished or expected[len(h.tokens)] == EOS)


def test_head_names_follow_the_mask_rows() -> None:
    names = [bench.head_name(layer, 1, 2, 3) for layer in range(8)]
    assert names == ["enc0.h1", "enc1.h1", "self0.h1", "self1.h1", "self2.h1", "cross0.h1", "cross1.h1", "cross2.h1"]


def test_seeds_give_one_random_curve_each_and_the_first_is_the_old_one(tmp_path) -> None:
    from attnkit.analysis.importance import pruning_curve, random_order

    assert bench.parser().parse_args(["runs/m30k"]).seeds == [0]
    assert bench.parser().parse_args(["runs/m30k", "--seeds", "0", "1", "2"]).seeds == [0, 1, 2]
    shape, weights = (3, 4), torch.arange(12.0).reshape(3, 4)  # a metric that some heads matter more to than others

    def metric(mask):
        return float((mask * weights).sum())

    curves = bench.random_curves(metric, shape, [0, 1, 2])
    assert list(curves) == [0, 1, 2] and curves[0] == pruning_curve(metric, random_order(shape, seed=0), shape)
    assert curves[1] != curves[0] and all(c[0][1] == 66.0 and c[-1][1] == 0.0 for c in curves.values())
    figures = bench.random_figures(curves)
    assert figures["seeds"] == [0, 1, 2] and figures["curve_random"] == [round(a, 2) for _, a in curves[0]]
    assert figures["curves_random"]["2"] == [round(a, 2) for _, a in curves[2]]
    assert figures["curve_random_mean"][5] == round(sum(c[5][1] for c in curves.values()) / 3, 2)
    assert figures["heads_before_1pt_drop_random"]["1"] == bench.heads_before_drop(curves[1], 1.0)
    bench.plot(str(tmp_path / "curves.png"), pruning_curve(metric, random_order(shape, seed=9), shape), curves, "metric", "three seeds")
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"


def test_the_script_runs_with_two_seeds_on_a_tiny_run(tiny_transformer_run, tmp_path, monkeypatch, capsys) -> None:
    import json

    (tmp_path / "src.txt").write_text("t1 t2 t3\nt4 t5\nt6 t7 t8 t9\n")
    (tmp_path / "ref.txt").write_text("t3 t2 t1\nt5 t4\nt9 t8 t7 t6\n")
    argv = [str(tiny_transformer_run), "--src", str(tmp_path / "src.txt"), "--ref", str(tmp_path / "ref.txt"), "--attr", "0", "--seeds", "3", "4"]
    monkeypatch.setattr("sys.argv", ["attention_analysis.py", *argv, "--plot", str(tmp_path / "p.png")])
    bench.main()
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["seeds"] == [3, 4] and set(result["curves_random"]) == {"3", "4"} and result["curve_random"] == result["curves_random"]["3"]
    assert len(result["curve_random_mean"]) == result["heads"] + 1 == len(result["curve_importance"])
    assert result["heads_before_1pt_drop"]["random"] == result["heads_before_1pt_drop_random"]["3"]
    assert (tmp_path / "p.png").is_file()
