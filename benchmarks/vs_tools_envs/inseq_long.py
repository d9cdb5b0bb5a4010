"""inseq's `attention` method on long_context.py's tiny Llama; runs in the inseq environment that benchmarks/vs_tools.py makes.

    MALLOC_MMAP_THRESHOLD_=131072 CACHE/inseq/bin/python benchmarks/vs_tools_envs/inseq_long.py TOKENS

long_context.py runs it (way `inseq`). The model is built as long_context.py builds it (its config, seed 0;
eager attention, since inseq reads `output_attentions`), with a word-level tokenizer whose word `<I>` is
token I, so that inseq reads the same random ids. inseq attributes the next token (`generation_args=
{"max_new_tokens": 1}`, greedy) with `inseq.load_model(model, "attention")`, as its users run it: first at
16 tokens (the lazy imports and first calls, in the baseline), then at TOKENS. Prints one JSON line: the
peak resident size over the baseline (ru_maxrss), the seconds, the weights' hash (long_context.py checks
it against its own) and whether inseq read the ids given. Writes nothing.
"""

import json
import resource
import sys
import time
from pathlib import Path

import inseq
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from long_context import CONFIG, _mib, _model, token_ids, weights_hash  # noqa: E402  (only the standard library at its top)


def word_tokenizer() -> transformers.PreTrainedTokenizerFast:
    """Word `<I>` is token I (no word the prefix of another, as an added special token would split it)."""
    tok = Tokenizer(models.WordLevel({f"<{i}>": i for i in range(CONFIG["vocab_size"])}, unk_token="<0>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<0>", pad_token="<0>", bos_token="<1>", eos_token="<2>")


def run(n: int, tokenizer: transformers.PreTrainedTokenizerFast) -> dict:
    """inseq's attention method on the next token of n ids, the model built first and not timed."""
    model = _model(n, "eager")
    ids = token_ids(n)[0].tolist()
    explainer = inseq.load_model(model, "attention", tokenizer=tokenizer)
    start = time.perf_counter()
    result = explainer.attribute(" ".join(f"<{i}>" for i in ids), generation_args={"max_new_tokens": 1, "do_sample": False}, show_progress=False)
    seconds = round(time.perf_counter() - start, 2)
    read = [tokenizer.convert_tokens_to_ids(t.token) for t in result.sequence_attributions[0].target[:n]]
    return {"seconds": seconds, "weights": weights_hash(model), "same_ids": read == ids}


def main(n: int) -> None:
    transformers.logging.set_verbosity_error()  # its notes on the missing attention mask (there is no padding)
    tokenizer = word_tokenizer()
    run(16, tokenizer)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    extra = run(n, tokenizer)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"tokens": n, "way": "inseq", "measured": True, "peak_mib": _mib(peak - base), **extra}))


if __name__ == "__main__":
    main(int(sys.argv[1]))
