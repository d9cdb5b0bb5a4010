"""inseq's attributions of the next token of each text; runs in the inseq environment that benchmarks/vs_tools.py makes.

    CACHE/inseq/bin/python benchmarks/vs_tools_envs/inseq_eval.py MODEL_FOLDER TEXTS_JSON OUT_JSON STEPS

For each text, inseq generates one token greedily and attributes its log-probability
(`attributed_fn="probability", logprob=True`) over the text's tokens with `input_x_gradient` and
`integrated_gradients` (STEPS points; inseq's baseline: the [UNK] embedding at every position), summed
over the embedding axis; and `attention`: the generated token's row, per layer, head mean. Writes,
per text, the generated token, each method's scores (T,) and the seconds each took (after one untimed warm-up call per
method).
"""

import json
import sys
import time

import inseq
import transformers


def scores(result, method: str, n: int) -> list:
    """(T,) per method; attention: (L, T), the generated token's row of each layer, head mean."""
    t = result.sequence_attributions[0].target_attributions  # (T + 1, 1, D) or (T + 1, 1, L, H)
    if method == "attention":
        return t[:n, 0].mean(dim=-1).T.tolist()  # (L, T)
    return t[:n, 0].sum(dim=-1).tolist()  # (T,)


def main(folder: str, texts_path: str, out_path: str, steps: str) -> None:
    model = transformers.GPT2LMHeadModel.from_pretrained(folder, attn_implementation="eager").eval()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=f"{folder}/tokenizer.json", unk_token="[UNK]", pad_token="[PAD]")
    out = [{"scores": {}, "seconds": {}} for _ in json.load(open(texts_path))]
    for method in ("input_x_gradient", "integrated_gradients", "attention"):
        explainer = inseq.load_model(model, method, tokenizer=tokenizer)
        extra = {"n_steps": int(steps), "internal_batch_size": int(steps)} if method == "integrated_gradients" else {}
        explainer.attribute(
            json.load(open(texts_path))[0],
            generation_args={"max_new_tokens": 1, "do_sample": False},
            attributed_fn="probability",
            logprob=True,
            show_progress=False,
            **extra,
        )  # warm-up, untimed, as attnkit's side runs one
        for case, text in zip(out, json.load(open(texts_path))):
            start = time.perf_counter()
            result = explainer.attribute(text, generation_args={"max_new_tokens": 1, "do_sample": False}, attributed_fn="probability",
                                         logprob=True, show_progress=False, **extra)  # fmt: skip
            case["seconds"][method] = time.perf_counter() - start
            n = len(tokenizer(text)["input_ids"])
            case["scores"][method] = scores(result, method, n)
            case["generated"] = result.sequence_attributions[0].target[n].token
    json.dump(out, open(out_path, "w"))


if __name__ == "__main__":
    main(*sys.argv[1:5])
