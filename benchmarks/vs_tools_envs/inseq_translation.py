"""inseq's attributions of an attnkit translation run exported to Hugging Face (`attnkit export --format hf`), for each
output token of a given translation; runs in the inseq environment that benchmarks/vs_tools.py makes.

    CACHE/inseq/bin/python benchmarks/vs_tools_envs/inseq_translation.py EXPORT_FOLDER CASES_JSON OUT_JSON STEPS {as-shipped,fix-scale}

The export of a word-tokenized run holds the model and vocab.json (ids) only; this script builds the word-level
tokenizer those ids mean (whitespace split, `</s>` after every text, as attnkit's batches end a source). For each
case (a source line and the hypothesis attnkit decoded), inseq is given the hypothesis (`generated_texts`: forced
decoding, the decoder reading `<s>` and the tokens before each step, as attnkit's teacher-forced scores do) and
attributes the log-probability of each output token (`attributed_fn="probability", logprob=True`) over the source
tokens with `input_x_gradient` and `integrated_gradients` (STEPS points, inseq's `[UNK]`-embedding baseline), summed
over the embedding axis; and `attention`: each output's row of each layer's cross-attention, head mean.
Writes, per case and method, the scores (T, S) (attention (T, L, S)) and the seconds each call took (after one
untimed warm-up call per method).

`as-shipped` runs inseq as it is. There, inseq 0.7.1 hands the decoder the target embeddings already multiplied
by the model's `embed_scale` (sqrt(d_model)), and transformers 4.x's `MarianDecoder` multiplies `inputs_embeds`
by it again, so the forced decoding inseq attributes reads other inputs than the model's own (p(y_t) moves). With
`fix-scale` the decoder's `embed_scale` is set to 1 after inseq has read it, so each embedding is scaled once.
"""

import json
import sys
import time

import inseq
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers, processors


def tokenizer(folder: str) -> transformers.PreTrainedTokenizerFast:
    vocab = json.load(open(f"{folder}/vocab.json"))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", vocab["</s>"])])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="</s>", bos_token="<s>")


def scores(result, method: str) -> list:
    """(T, S) per method; attention: (T, L, S), each output's row of each layer's cross-attention, head mean."""
    s = result.sequence_attributions[0].source_attributions  # (S, T, D) or (S, T, L, H)
    if method == "attention":
        return s.mean(dim=-1).permute(1, 2, 0).tolist()  # (T, L, S)
    return s.sum(dim=-1).T.tolist()  # (T, S)


def main(folder: str, cases_path: str, out_path: str, steps: str, fix: str) -> None:
    fix_scale = fix == "fix-scale"
    model = transformers.MarianMTModel.from_pretrained(folder, attn_implementation="eager").eval()
    tok = tokenizer(folder)
    cases = json.load(open(cases_path))
    out = [{"scores": {}, "seconds": {}} for _ in cases]
    for method in ("input_x_gradient", "integrated_gradients", "attention"):
        model.get_decoder().embed_scale = model.get_encoder().embed_scale  # as loaded: inseq refuses two scales
        explainer = inseq.load_model(model, method, tokenizer=tok)
        if fix_scale:  # inseq hands the decoder embeddings it scaled; transformers 4.x's Marian decoder scales them again
            explainer.model.get_decoder().embed_scale = 1.0
        extra = {"n_steps": int(steps), "internal_batch_size": int(steps)} if method == "integrated_gradients" else {}
        explainer.attribute(
            cases[0]["source"], generated_texts=cases[0]["hypothesis"], attributed_fn="probability", logprob=True, show_progress=False, **extra
        )  # warm-up, untimed, as attnkit's side runs one
        for result_case, case in zip(out, cases):
            start = time.perf_counter()
            result = explainer.attribute(case["source"], generated_texts=case["hypothesis"], attributed_fn="probability", logprob=True,
                                         show_progress=False, **extra)  # fmt: skip
            result_case["seconds"][method] = time.perf_counter() - start
            result_case["scores"][method] = scores(result, method)
            result_case["target"] = [t.token for t in result.sequence_attributions[0].target]
    json.dump(out, open(out_path, "w"))


if __name__ == "__main__":
    main(*sys.argv[1:6])
