"""attnkit's Transformer as a CTranslate2 model, and translating with it as `attnkit translate` does.

`write` fills CTranslate2's own `TransformerSpec` from the weights (the way its fairseq and
OpenNMT-py converters do) through a `ctranslate2.converters.Converter`, whose `convert` validates,
quantises and saves it. What maps to what:

| attnkit | CTranslate2 |
|---|---|
| `norm: post` / `pre` (+ final LayerNorm per stack) | `pre_norm=False` / `True` (+ `layer_norm`) |
| q, k, v projections of self-attention | one fused `linear[0]` (q; k; v stacked) |
| cross-attention q / k, v | `linear[0]` / fused `linear[1]` |
| embedding * sqrt(d_model) + positions | `scale_embeddings=True` + `position_encodings.encodings` |
| sinusoidal positions (sin, cos interleaved) | the same table, written out (CTranslate2's own is not interleaved) |
| tied output projection | `decoder.projection` = the target embedding |
| source + EOS, decoder starts at BOS | `add_source_eos=True`, `decoder_start_token="<s>"` |
| LayerNorm eps 1e-5 | `layer_norm_epsilon=1e-5` |
| `activation: relu / swish / gelu` | `activation=RELU / SWISH / GELU` |
| `output_bias` (imported Marian models) | `decoder.projection.bias` |

Decoding (`search`, `translate`): the step limit floor(max_len_a * (source + 1) + max_len_b) is per
sentence in attnkit and per call in CTranslate2, so sentences are batched by length as attnkit
batches them and each batch gets its longest sentence's limit. CTranslate2 has no GNMT length
penalty (it divides by length ** length_penalty). Its beam search keeps candidates as attnkit's
does (top 2K by log-probability, done after K finished hypotheses) and returns K finished
hypotheses with `num_hypotheses=K` and `return_end_token`; `search` recovers each one's
log-probability from its score and ranks them by attnkit's score log P / lp(Y). One more step
makes the K the same: when more than K hypotheses finish by one step, attnkit (as fairseq) keeps
the first K to finish, best log-probability first, while CTranslate2 keeps the K best by its
normalised score. `length_penalty = -10` (`LENGTH_PENALTY`) makes that score log P * |Y|^10,
which ranks by length first (the earliest finished first) unless a shorter hypothesis' log P is
more than (L2 / L1)^10 times a longer one's (1.22 times for 50 against 51 tokens).
"""

from __future__ import annotations

import logging
import math
import os
import sys
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import torch

from attnkit.attention.positional import LearnedPositionalEmbedding, sinusoidal_encoding
from attnkit.config.schema import Decode
from attnkit.decode.hypothesis import length_penalty
from attnkit.errors import AttnkitError
from attnkit.families.translation.codec import Vocabs
from attnkit.families.translation.export.bundle import Bundle, optional
from attnkit.families.translation.translate import length_batches
from attnkit.models.transformer import Transformer
from attnkit.precision import cpu_flags, cpu_model, int8_dot_products

QUANTIZATIONS = {"int8": "int8", "int8_float32": "int8_float32", "bf16": "bfloat16"}  # --quantization -> CTranslate2's name
EOS_TOKEN = "</s>"
LENGTH_PENALTY = -10.0  # CTranslate2's cut to K keeps the earliest finished, as attnkit's does (module docstring)
log = logging.getLogger("attnkit")
# benchmarks/int8_bleu.py on m30k-small (test_2016, greedy), AMD EPYC capped at AVX2, and the toy of test_deployment.py
INT8_ONEDNN_MEASURED = "78% of m30k-small's outputs as float32's (92% on MKL or VNNI), BLEU -0.05; 16 of 60 on a toy model with larger weights"
LAYER_NORM_EPS = 1e-5  # torch.nn.LayerNorm's default, which attnkit's Transformer uses


def check_supported(model: Any) -> Transformer:
    """The model, if CTranslate2 can run it; else one error line saying why not."""
    if not isinstance(model, Transformer):
        raise AttnkitError(f"CTranslate2 export is not supported for this model ({type(model).__name__}): only Transformer runs")
    attn = model.decoder_layers[0].self_attn
    if attn.d_k != attn.d_v:
        raise AttnkitError(f"CTranslate2 export is not supported for this model: d_k ({attn.d_k}) differs from d_v ({attn.d_v})")
    return model


def position_table(model: Transformer, decode: Decode) -> torch.Tensor:
    """The position encodings CTranslate2 adds, row i for position i: (P, D)."""
    if isinstance(model.positions, LearnedPositionalEmbedding):
        return model.positions.embedding.weight.detach().float()  # (P, D)
    longest = decode.max_src_len + 1  # the source's pieces and its EOS
    positions = max(longest, math.floor(decode.max_len_a * longest + decode.max_len_b)) + 1
    return sinusoidal_encoding(positions, model.d_model)  # (P, D)


def _np(t: torch.Tensor) -> Any:
    return t.detach().float().contiguous().numpy()


def _linear(spec: Any, *linears: torch.nn.Linear) -> None:
    """Set a CTranslate2 `LinearSpec` from one or more `nn.Linear` stacked on the output axis."""
    spec.weight = _np(torch.cat([lin.weight for lin in linears]))
    spec.bias = _np(torch.cat([lin.bias for lin in linears]))


def _norm(spec: Any, norm: torch.nn.LayerNorm) -> None:
    spec.gamma, spec.beta = _np(norm.weight), _np(norm.bias)


def _attention(spec: Any, attn: Any, self_attention: bool) -> None:
    if self_attention:
        _linear(spec.linear[0], attn.q_proj, attn.k_proj, attn.v_proj)
    else:
        _linear(spec.linear[0], attn.q_proj)
        _linear(spec.linear[1], attn.k_proj, attn.v_proj)
    _linear(spec.linear[-1], attn.out_proj)


def _ffn(spec: Any, ffn: Any, norm: torch.nn.LayerNorm) -> None:
    _norm(spec.layer_norm, norm)
    _linear(spec.linear_0, ffn.w_1)
    _linear(spec.linear_1, ffn.w_2)


def _stack(spec: Any, embedding: torch.nn.Embedding, positions: torch.Tensor, final_norm: Any) -> None:
    embeddings = spec.embeddings[0] if isinstance(spec.embeddings, list) else spec.embeddings
    embeddings.weight = _np(embedding.weight)
    spec.scale_embeddings = True  # * sqrt(d_model)
    spec.position_encodings.encodings = _np(positions)
    if isinstance(final_norm, torch.nn.LayerNorm):
        _norm(spec.layer_norm, final_norm)


def transformer_spec(model: Transformer, vocabs: Vocabs, decode: Decode) -> Any:
    """CTranslate2's `TransformerSpec` holding the weights of `model`."""
    ct2 = ctranslate2()
    specs = ct2.specs.transformer_spec
    attn = model.decoder_layers[0].self_attn
    pre_norm = model.decoder_layers[0].res_self.pre_norm
    activation = ct2.specs.common_spec.Activation[model.encoder_layers[0].ffn.activation.upper()]  # RELU, SWISH, GELU
    shape = {"num_heads": attn.n_heads, "pre_norm": pre_norm, "head_dim": attn.d_k, "activation": activation}
    spec = specs.TransformerSpec(
        specs.TransformerEncoderSpec(len(model.encoder_layers), **shape), specs.TransformerDecoderSpec(len(model.decoder_layers), **shape)
    )
    positions = position_table(model, decode)
    _stack(spec.encoder, model.src_embed, positions, model.encoder_norm)
    for layer_spec, layer in zip(spec.encoder.layer, model.encoder_layers):
        _attention(layer_spec.self_attention, layer.self_attn, self_attention=True)
        _norm(layer_spec.self_attention.layer_norm, layer.res_attn.norm)
        _ffn(layer_spec.ffn, layer.ffn, layer.res_ffn.norm)
    _stack(spec.decoder, model.tgt_embed, positions, model.decoder_norm)
    spec.decoder.projection.weight = _np(model.output_weight)
    if model.final_logits_bias is not None:
        spec.decoder.projection.bias = _np(model.final_logits_bias)
    for layer_spec, layer in zip(spec.decoder.layer, model.decoder_layers):
        _attention(layer_spec.self_attention, layer.self_attn, self_attention=True)
        _norm(layer_spec.self_attention.layer_norm, layer.res_self.norm)
        _attention(layer_spec.attention, layer.cross_attn, self_attention=False)
        _norm(layer_spec.attention.layer_norm, layer.res_cross.norm)
        _ffn(layer_spec.ffn, layer.ffn, layer.res_ffn.norm)
    spec.register_source_vocabulary(vocabs.src_vocab.to_json()["tokens"])
    spec.register_target_vocabulary(vocabs.tgt_vocab.to_json()["tokens"])
    spec.config.add_source_eos = True
    spec.config.decoder_start_token = "<s>"
    spec.config.layer_norm_epsilon = LAYER_NORM_EPS
    return spec


def write(model: Any, vocabs: Vocabs, decode: Decode, quantization: str | None) -> Callable[[Path], dict[str, Any]]:
    """The engine writer for `bundle.write_bundle`: converts `model` into the folder it is given."""
    model = check_supported(model)
    ct2 = ctranslate2()

    class AttnkitConverter(ct2.converters.Converter):
        def _load(self) -> Any:
            return transformer_spec(model, vocabs, decode)

    def into(folder: Path) -> dict[str, Any]:
        AttnkitConverter().convert(str(folder), quantization=QUANTIZATIONS.get(quantization or ""), force=True)
        return {"ctranslate2": ct2.__version__, "quantization": quantization or "float32"}

    return into


def int8_gemm(environ: Mapping[str, str] = os.environ, loaded: str | None = None) -> tuple[str, bool, str]:
    """CTranslate2's int8 GEMM backend on this CPU, whether its int8 output is close to float32's, and why.

    CTranslate2 multiplies int8 matrices with Intel MKL on Intel CPUs and with oneDNN elsewhere
    (`CT2_USE_MKL` overrides, read once, when ctranslate2 is imported). oneDNN without VNNI sums pairs of
    u8 x s8 products in 16 bits, which saturate: measured on m30k-small (docs/deployment.md, int8), its int8
    output then loses BLEU, while MKL's stays within noise of float32. `loaded` is the backend of a
    ctranslate2 this process has already imported (`loaded_backend()`): it wins over what `environ` asks for.
    """
    if "avx2" not in cpu_flags():
        return "CTranslate2's default", True, "not an x86 CPU with AVX2: int8 not measured on this kind of CPU"
    vnni, why = int8_dot_products(environ)
    choice = environ.get("CT2_USE_MKL", "").strip().lower()
    if loaded:
        mkl = loaded == "MKL"
    else:
        mkl = choice in ("1", "true") if choice else "GenuineIntel" in cpu_model()
    if mkl:
        return "MKL", True, why
    return "oneDNN", vnni, why + ("" if vnni else ": oneDNN's int8 sums saturate in 16 bits")


def loaded_backend() -> str | None:
    """The GEMM backend of the ctranslate2 this process has imported, "MKL" or "oneDNN" (None: not imported yet).

    Read from the module itself, not from the environment, which may have changed since it was read: only
    an MKL backend offers int16 (measured with ctranslate2 4.8.5 on an AVX2 AMD EPYC: `CT2_USE_MKL=1` gives
    float32, int16, int8, int8_float32; `CT2_USE_MKL=0` the same without int16).
    """
    module = sys.modules.get("ctranslate2")
    if module is None:
        return None
    return "MKL" if "int16" in module.get_supported_compute_types("cpu") else "oneDNN"


def int8_here() -> tuple[str, bool, str]:
    """`int8_gemm` for this process: the backend of the ctranslate2 it has loaded, else the one it will load."""
    return int8_gemm(os.environ, loaded_backend())


def choose_gemm_backend(environ: MutableMapping[str, str] = os.environ) -> None:
    """Before ctranslate2 is first imported: on an x86 CPU whose oneDNN would run int8 without VNNI,
    use MKL (CTranslate2's default on Intel CPUs), unless the user set CT2_USE_MKL."""
    if "CT2_USE_MKL" in environ or int8_gemm(environ)[1]:
        return
    environ["CT2_USE_MKL"] = "1"
    log.info("CTranslate2: Intel MKL for its GEMMs (%s; set CT2_USE_MKL=0 to keep oneDNN)", int8_gemm(environ)[2])


def ctranslate2() -> Any:
    """The ctranslate2 module, imported once the GEMM backend is chosen (CTranslate2 reads CT2_USE_MKL as it loads;
    where it is already imported, the choice is too late and `warn_int8` says so)."""
    if "ctranslate2" not in sys.modules:
        choose_gemm_backend()
    return optional("ctranslate2")


def load(bundle: Bundle, compute_type: str = "default", threads: int = 0, batches: int = 1) -> Any:
    """A `ctranslate2.Translator` on the CPU for the export folder (`compute_type`: default, float32, int8, ...),
    `threads` threads per batch (0: CTranslate2's default), up to `batches` batches at once (`search` queues
    all its batches; `threads=1, batches=N` is what attnkit's own `translate` does on N threads)."""
    ct2 = ctranslate2()
    return ct2.Translator(str(bundle.folder), device="cpu", compute_type=compute_type, inter_threads=batches, intra_threads=threads)


def warn_int8(quantization: str | None, option: str = "--quantization") -> None:
    """Say so, in one line with the fix, where CTranslate2's int8 (`option quantization`) loses accuracy in this
    process: its oneDNN backend without VNNI, because the user asked for it (CT2_USE_MKL=0) or because
    ctranslate2 was imported before attnkit could choose MKL (docs/deployment.md, int8)."""
    if quantization not in ("int8", "int8_float32"):
        return
    ctranslate2()
    backend, accurate, why = int8_here()
    if accurate:
        return
    if os.environ.get("CT2_USE_MKL", "").strip().lower() in ("0", "false"):
        fix = "unset CT2_USE_MKL to let attnkit use MKL"
    else:
        fix = "ctranslate2 was imported before attnkit could choose MKL: set CT2_USE_MKL=1 before importing ctranslate2, or import attnkit first"
    log.warning(
        "%s %s: on this CPU CTranslate2 multiplies int8 with %s (%s): measured %s (docs/deployment.md, int8); %s",
        option, quantization, backend, why, INT8_ONEDNN_MEASURED, fix,
    )  # fmt: skip


Ranked = list[tuple[list[str], float]]  # one sentence's hypotheses, best first: (pieces, `</s>` last if finished; log P)


def _ranked(hypotheses: Sequence[list[str]], scores: Sequence[float], penalty: float, alpha: float) -> Ranked:
    """CTranslate2's hypotheses in the order attnkit's search returns them: the finished ones (ending in
    `</s>`) by log P / lp(Y) (lp counts the EOS), then the ones cut at the step limit. log P is recovered
    from CTranslate2's score, which it divided by len ** `penalty`."""
    log_probs = [score * len(tokens) ** penalty for tokens, score in zip(hypotheses, scores)]

    def key(i: int) -> tuple[bool, float]:
        tokens = hypotheses[i]
        return not (tokens and tokens[-1] == EOS_TOKEN), -log_probs[i] / length_penalty(len(tokens), alpha)

    return [(hypotheses[i], log_probs[i]) for i in sorted(range(len(hypotheses)), key=key)]


def _submit(translator: Any, batch: list[list[str]], limit: int, decode: Decode) -> Callable[[], list[Ranked]]:
    """CTranslate2's search of `batch` with step limit `limit`, queued on the translator's workers:
    a call that waits for it and gives each sentence's hypotheses (beam: all K), `</s>` kept."""
    options = {"beam_size": decode.beam, "max_decoding_length": limit, "min_decoding_length": 0, "max_input_length": 0,
               "return_scores": True, "return_end_token": True, "asynchronous": True}  # fmt: skip
    if decode.beam == 1:  # greedy: no length normalisation, the score is log P
        penalty, alpha = 0.0, 0.0
    else:
        penalty, alpha = LENGTH_PENALTY, decode.alpha
        options["num_hypotheses"] = decode.beam
    pending = translator.translate_batch(batch, **options, length_penalty=penalty)  # one AsyncTranslationResult a sentence

    def wait() -> list[Ranked]:
        return [_ranked(r.hypotheses, r.scores, penalty, alpha) for r in (p.result() for p in pending)]

    return wait


def search(translator: Any, tokens: Sequence[list[str]], decode: Decode, progress: Callable[[int], None] | None = None) -> list[Ranked]:
    """Search each source (its pieces, no EOS) with CTranslate2 as attnkit searches with `decode` (beam 1: greedy).

    Each batch is searched with its longest sentence's step limit; a sentence with a hypothesis longer
    than its own limit (the search ran past it) is searched again with its limit. Every batch is queued
    at once, so that a translator with several workers (`load(batches=N)`) searches N batches at a time,
    as attnkit's own `translate` does with its worker threads; the results do not depend on the workers.
    """
    limits = [max(math.floor(decode.max_len_a * (len(t) + 1) + decode.max_len_b), 1) for t in tokens]
    ranked: list[Ranked] = [[] for _ in tokens]
    again: dict[int, list[int]] = {}
    queued = [(index, _submit(translator, [tokens[i] for i in index], max(limits[i] for i in index), decode))
              for index in length_batches([len(t) for t in tokens], decode.batch_size)]  # fmt: skip
    for index, wait in queued:
        done = 0
        for i, hyps in zip(index, wait()):
            ranked[i] = hyps
            if any(len(pieces) > limits[i] for pieces, _ in hyps):
                again.setdefault(limits[i], []).append(i)
            else:
                done += 1
        if progress is not None:
            progress(done)
    retry = [(part, _submit(translator, [tokens[i] for i in part], limit, decode))
             for limit, index in again.items() for part in _chunks(index, decode.batch_size)]  # fmt: skip
    for part, wait in retry:
        for i, hyps in zip(part, wait()):
            ranked[i] = hyps
        if progress is not None:
            progress(len(part))
    return ranked


def _chunks(index: list[int], size: int) -> list[list[int]]:
    """`index` in parts of at most `size`."""
    return [index[start : start + size] for start in range(0, len(index), size)]


def translate(bundle: Bundle, translator: Any, lines: Sequence[str], decode: Decode, source: str = "input") -> list[str]:
    """Translate `lines` with CTranslate2 as `attnkit translate` does with `decode` (beam 1: greedy): the best hypotheses' texts."""
    return [bundle.text_of_pieces(ranked[0][0]) for ranked in search(translator, bundle.source_tokens(lines, source), decode)]
