"""`attnkit translate RUN --mask-heads SPEC`: the spec, the masked searches, the CLI's one-line errors."""

from __future__ import annotations

import pytest
import torch

from attnkit.cli import main
from attnkit.data.vocab import BOS, EOS
from attnkit.decode.beam import beam_search
from attnkit.decode.greedy import greedy
from attnkit.errors import ConfigError
from attnkit.models.head_mask import MaskedDecoding, masked, parse_head_mask
from attnkit.models.transformer import Transformer


def _model() -> Transformer:
    torch.manual_seed(0)
    return Transformer(src_vocab_size=12, tgt_vocab_size=12, d_model=16, n_heads=4, d_ff=32, encoder_layers=2, decoder_layers=3, dropout=0.0).eval()


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    src = torch.randint(4, 12, (6, 7))  # (B, S)
    return src, torch.ones_like(src, dtype=torch.bool)  # (B, S)


def test_the_spec_zeroes_the_named_heads_one_based() -> None:
    mask = parse_head_mask("encoder:1.2, decoder_self:3.4,cross:2.1", _model())
    assert mask.encoder.shape == (2, 4) and mask.decoder_self.shape == (3, 4) and mask.cross.shape == (3, 4)
    assert mask.encoder[0, 1] == 0 and mask.encoder.sum() == 7
    assert mask.decoder_self[2, 3] == 0 and mask.decoder_self.sum() == 11
    assert mask.cross[1, 0] == 0 and mask.cross.sum() == 11


def test_an_empty_spec_decodes_the_model_itself() -> None:
    model = _model()
    assert parse_head_mask(" , ", model) is None and masked(model, "") is model and masked(model, None) is model


@pytest.mark.parametrize(
    "spec, words",
    [
        ("decoder:1.1", ["unknown kind 'decoder'", "encoder, decoder_self, cross"]),
        ("encoder:3.1", ["encoder layer 3 is out of range (1..2)"]),
        ("cross:0.1", ["cross layer 0 is out of range (1..3)"]),
        ("cross:1.5", ["head 5 is out of range (1..4)"]),
        ("encoder:1", ["expected kind:layer.head"]),
        ("encoder:a.b", ["expected kind:layer.head"]),
    ],
)
def test_a_bad_spec_is_one_error_naming_the_entry(spec, words) -> None:
    with pytest.raises(ConfigError) as e:
        parse_head_mask(f"encoder:1.1,{spec}", _model())
    assert f"--mask-heads {spec}:" in str(e.value) and all(w in str(e.value) for w in words), str(e.value)


def test_a_run_without_heads_is_refused(tiny_rnn_run, tmp_path, capsys) -> None:
    source = tmp_path / "in.txt"
    source.write_text("t1 t2\n", encoding="utf-8")
    assert main(["translate", str(tiny_rnn_run), "--input", str(source), "--mask-heads", "encoder:1.1"]) == 2
    assert "only Transformer runs have attention heads to mask" in capsys.readouterr().err.strip().splitlines()[-1]


def test_a_mask_of_ones_decodes_as_the_model_greedy_and_beam() -> None:
    model, (src, keep) = _model(), _batch()
    ones = parse_head_mask("encoder:1.1", model)
    ones.encoder[0, 0] = 1.0  # every gate 1
    plain = greedy(model, src, keep, max_len_a=0.0, max_len_b=8, bos=BOS, eos=EOS)
    same = greedy(MaskedDecoding(model, ones), src, keep, max_len_a=0.0, max_len_b=8, bos=BOS, eos=EOS)
    assert [(h.tokens, h.score) for h in same] == [(h.tokens, h.score) for h in plain]
    beam = beam_search(model, src, keep, beam=3, alpha=0.6, nbest=2, max_len_a=0.0, max_len_b=8, bos=BOS, eos=EOS)
    beam_ones = beam_search(MaskedDecoding(model, ones), src, keep, beam=3, alpha=0.6, nbest=2, max_len_a=0.0, max_len_b=8, bos=BOS, eos=EOS)
    assert [[h.tokens for h in n] for n in beam_ones] == [[h.tokens for h in n] for n in beam]


def test_masked_greedy_is_the_argmax_of_the_masked_teacher_forced_logits() -> None:
    model, (src, keep) = _model(), _batch()
    mask = parse_head_mask("encoder:1.2,encoder:2.4,decoder_self:2.1,cross:1.3,cross:3.2", model)
    with torch.no_grad():
        tgt_in = torch.full((6, 5), BOS)  # (B, T)
        assert not torch.allclose(model(src, keep, tgt_in, mask), model(src, keep, tgt_in))  # masking changes the logits
    plain = greedy(model, src, keep, max_len_a=0.0, max_len_b=8, bos=BOS, eos=EOS)
    hyps = greedy(masked(model, "encoder:1.2,encoder:2.4,decoder_self:2.1,cross:1.3,cross:3.2"), src, keep, max_len_a=0.0, max_len_b=8, bos=BOS, eos=EOS)
    assert [h.tokens for h in hyps] != [h.tokens for h in plain]
    for i, h in enumerate(hyps):  # each greedy token is the argmax of the masked teacher-forced pass on its own prefix
        with torch.no_grad():
            logits = model(src[i : i + 1], keep[i : i + 1], torch.tensor([[BOS] + h.tokens]), mask)  # (1, T, V)
        expected = logits[0].argmax(-1).tolist()  # (T,)
        assert expected[: len(h.tokens)] == h.tokens and (not h.finished or expected[len(h.tokens)] == EOS)


def test_translate_mask_heads_on_a_run(tiny_transformer_run, tmp_path, capsys) -> None:
    source = tmp_path / "in.txt"
    source.write_text("t1 t2 t3\nt4 t5\nt6 t7 t8 t9\n", encoding="utf-8")
    outputs = {}
    for name, extra in {"plain": [], "empty": ["--mask-heads", ""], "masked": ["--mask-heads", "encoder:1.1,decoder_self:2.2,cross:1.2,cross:2.1"]}.items():
        out = tmp_path / f"{name}.txt"
        assert main(["translate", str(tiny_transformer_run), "--input", str(source), "--out", str(out), "--beam", "1", *extra]) == 0
        outputs[name] = out.read_text(encoding="utf-8")
    assert outputs["empty"] == outputs["plain"] and outputs["masked"] != outputs["plain"]
    assert main(["translate", str(tiny_transformer_run), "--input", str(source), "--mask-heads", "cross:3.1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "attnkit: error: --mask-heads cross:3.1: cross layer 3 is out of range (1..2)"
