"""benchmarks/attention_analysis.py: decoding with a head mask (the BLEU pruning curve) and the head names."""

from __future__ import annotations

import torch

from attnkit.data.vocab import BOS, EOS
from attnkit.decode.greedy import greedy
from attnkit.models.transformer import Transformer
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
    ones = bench.split_mask(torch.ones(6, 4), 2, 2)
    same = greedy(bench.MaskedDecoding(model, ones), src, keep, max_len_a=0.0, max_len_b=8, bos=BOS, eos=EOS)
    assert [h.tokens for h in same] == [h.tokens for h in plain]
    gates = torch.ones(6, 4)
    gates[[0, 2, 4, 5], [1, 3, 0, 2]] = 0.0  # one head of each kind off
    mask = bench.split_mask(gates, 2, 2)
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
