"""attnkit's ERASER faithfulness beside ferret-xai's evaluators, on the same model, texts and explanations.

    .venv/bin/python benchmarks/vs_tools.py [--texts 50] [--cache ~/.cache/attnkit-vs] [--out benchmarks/results/vs_tools.jsonl]

Run it alone (it times both tools). ferret-xai is for this benchmark only, never an attnkit dependency:
its pins (transformers < 5, numpy < 2) clash with attnkit's, so the benchmark makes its own virtual
environment, CACHE/ferret (re-used when present): torch==2.13.0 first, then ferret-xai==0.4.2 with
transformers<5, numpy<2 and pyarrow<18 (a newer pyarrow, through datasets, needs numpy 2). The two sides meet through files: attnkit writes CACHE/cases.json (each
text, its predicted class, every method's token scores), `vs_tools_envs/ferret_eval.py` runs in the
ferret environment and writes CACHE/ferret.json.

The model: a tiny random-weight BERT classifier (`BertForSequenceClassification`, 2 layers, hidden 32,
2 classes) built here from its config (weights drawn with std 0.4, not 0.02, so that removing a word moves p(y | x)), with a word-level tokenizer built by `tokenizers`, saved as
`save_pretrained` saves them. Word-level, because ferret removes a token by decoding the ids left to a
string and tokenizing that again: with word pieces the pieces left would be read as other tokens;
with whole words the round trip gives back the same ids. The texts: --texts seeded random strings
of 4 to 14 of the vocabulary's words.

The explanations are attnkit's (`sources.faithfulness.METHODS` but flow); both tools score each
one: attnkit with `analysis.faithfulness.ferret_aopc_of_rankings` over `sources.hf.scored.deleted_predict`
(ferret's removal, bins, rationale and mean), ferret with its `AOPC_Comprehensiveness_Evaluation`
and `AOPC_Sufficiency_Evaluation` at their defaults. One JSON line per (method, metric): both
means over the texts, the largest difference on one text, each tool's seconds per text for the same
work, every method of the text together (each line's `timed`, `FERRET_TIMED`): attnkit's one forward
pass for p(y | x) and one `ferret_aopc_of_rankings` call (the inputs of every bin of every method in one
padded batch); ferret's two evaluator calls per method, each of which also runs the model on the whole
text for p(y | x); then one line per method with attnkit's own defaults (mask removal, ERASER's bins),
which are other figures.

inseq 0.7.1 (its own environment, CACHE/inseq: torch==2.13.0, then inseq `--no-deps`, since its wheel
requires the CUDA 11 `nvidia-*` wheels on Linux, then its other requirements, `INSEQ_NEEDS`) explains
the next token of --texts other texts through a tiny random GPT-2 built here; `vs_tools_envs/inseq_eval.py`
writes its input x gradient, integrated gradients (--steps points, from its [UNK] baseline, which
attnkit is given) of the token's log-probability, and the token's row of each layer's attention, head
mean. One line per method: the largest difference on one token, the largest score for scale, whether
both explained the same token, each tool's seconds per text (float32, as inseq runs it): attnkit's input x
gradient and integrated gradients come from one forward and backward pass (`input_x_gradient_and_integrated_gradients`),
timed together against inseq's two calls together (the lines' `timed`; `timed_includes` says what each
span holds, `GENERATION_TIMED`: attnkit's includes tokenizing and picking the next token, as inseq's calls do).

The model runs in float64 in both tools by default (`--dtype`): in float32 the two differ by about
1e-6 in p(y | x') because they pad their batches of shortened inputs to other lengths (ferret: 8 texts
to the longest, attnkit: every input of the text's bins), which changes the float32 rounding, not the removal.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ("the a cat dog bird sat ran on under mat rug and but not very good bad great awful film plot actor "
         "loved hated slow fast funny dull story end was is it this that").split()  # fmt: skip
METHODS = ("attention", "rollout", "ixg", "ig", "loo", "random")
PAIR = "input_x_gradient+integrated_gradients"  # attnkit computes both in one pass (input_x_gradient_and_integrated_gradients)
FERRET = ("ferret-xai==0.4.2", "transformers<5", "numpy<2", "pyarrow<18")  # pyarrow 18+ (through datasets) needs numpy 2
INSEQ = "inseq==0.7.1"  # its wheel requires the CUDA 11 nvidia-* wheels on Linux: installed --no-deps, then these
INSEQ_NEEDS = ("transformers[sentencepiece,tokenizers]>=4.53,<5", "captum>=0.7", "rich", "jaxtyping>=0.2.25", "typeguard<=2.13.3",
               "matplotlib", "tqdm", "treescope", "protobuf", "numpy<2")  # fmt: skip
DIFFERENCES = {
    "removal": "attnkit: the token replaced by [MASK] (length kept); ferret: deleted (ids decoded to text, tokenized again)",
    "bins": "attnkit: 1, 5, 10, 20, 50% of the tokens, k = ceil(d T), at least 1; ferret: 10, 20, ..., 100%, k = floor(d T), 0 skipped",
    "rationale": "attnkit: the top k tokens; ferret: those of the top k scored above 0 (only_pos)",
    "aggregation": "attnkit: the mean over every bin; ferret: over the bins whose rationale is not empty nor the previous one's "
    "(none left: comprehensiveness 0, sufficiency 1)",
    "ties": "attnkit: equal scores ranked by position, first first; ferret: numpy argsort's order, last first",
}


def build_model(folder: Path) -> Path:
    """Save the tiny random BERT classifier and its word-level tokenizer into `folder` (skipped when there)."""
    if (folder / "config.json").exists():
        return folder
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {w: i for i, w in enumerate(SPECIALS + list(WORDS))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                                sep_token="[SEP]", mask_token="[MASK]")  # fmt: skip
    config = transformers.BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=64, num_labels=2, pad_token_id=0,
                                     initializer_range=0.4)  # fmt: skip
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    model.save_pretrained(folder, safe_serialization=True)
    fast.save_pretrained(folder)
    return folder


def texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14))) for _ in range(n)]


def attnkit_cases(folder: Path, items: list[str], dtype: str = "float64") -> list[dict]:
    """Per text through the Hugging Face classifier in `folder` (`scored_cases`)."""
    import torch

    from attnkit.sources.hf.load import load
    from attnkit.sources.hf.scored import scored_hf
    from attnkit.sources.source import HfSource

    hf = load(str(folder))
    hf.model.to(getattr(torch, dtype))
    return scored_cases(items, lambda text, removal: scored_hf(HfSource(hf), text, removal=removal or "mask"))  # mask: its default


FERRET_TIMED = (
    "every method's comprehensiveness and sufficiency AOPC of one text: attnkit, one forward pass for p(y | x) and "
    "one call of ferret_aopc_of_rankings (the inputs of every bin of every method in one padded batch); ferret, "
    "its two evaluator calls per method, each of which runs the model on the whole text for p(y | x) too"
)


def scored_cases(items: list[str], scored) -> list[dict]:
    """Per text: the class, tokens, each method's scores, and attnkit's figures in ferret's mode (deletion) and with
    its own default removal (`removal=None`); `scored(text, removal)` is the source's `ScoredOutput` of the text.

    The figures in ferret's mode are timed (`FERRET_TIMED`) on an output scored afresh, whose `predict` has seen only
    the whole text (leave-one-out's removals, made for the explanations, would otherwise be known to it): one forward
    pass of the score over the whole text stands for that p(y | x), as each of ferret's calls computes it."""
    import torch

    from attnkit.analysis.faithfulness import faithfulness, ferret_aopc_of_rankings
    from attnkit.sources.faithfulness import method_scores

    cases = []
    for i, text in enumerate(items):
        e, own = scored(text, "delete"), scored(text, None)
        scores, _ = method_scores(e, METHODS, seed=i)
        fresh = scored(text, "delete")
        start = time.perf_counter()
        with torch.no_grad():
            fresh.f(fresh.x.unsqueeze(0))  # (1,): p(y | x)'s forward pass
        figures = ferret_aopc_of_rankings(fresh.predict, scores, fresh.p)
        seconds = time.perf_counter() - start
        defaults = {name: (m.comprehensiveness_aopc, m.sufficiency_aopc) for name, m in
                    ((name, faithfulness(own.predict, s, own.p)) for name, s in scores.items())}  # fmt: skip
        target = int(e.label.split()[1])  # "class 1 (LABEL_1)"
        cases.append({"text": text, "target": target, "p": e.p, "tokens": e.tokens, "scores": {k: v.tolist() for k, v in scores.items()},
                      "ferret_mode": figures, "seconds": seconds, "defaults": defaults})  # fmt: skip
    return cases


def build_gpt2(folder: Path) -> Path:
    """Save a tiny random GPT-2 (2 layers, hidden 32, weights drawn with std 0.4) and a word-level tokenizer (skipped when there)."""
    if (folder / "config.json").exists():
        return folder
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {w: i for i, w in enumerate(SPECIALS + list(WORDS))}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]")
    config = transformers.GPT2Config(vocab_size=len(vocab), n_embd=32, n_layer=2, n_head=4, n_positions=64, initializer_range=0.4,
                                     bos_token_id=2, eos_token_id=3, pad_token_id=0)  # fmt: skip
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(config).save_pretrained(folder, safe_serialization=True)
    fast.save_pretrained(folder)
    return folder


GENERATION_TIMED = (
    "per text: attnkit, input_x_gradient+integrated_gradients: tokenizing, the forward pass that picks the next "
    "token, inseq's baseline and one forward and backward pass for both methods; attention: the text's record "
    "(explain_inputs) and its rows; inseq, its attribute call per method (tokenizing, generating the token, "
    "attributing)"
)


def attnkit_generation(folder: Path, items: list[str], steps: int) -> list[dict]:
    """Per text, `generation_case`, after one untimed warm-up case (the first call loads captum's integration points
    and allocates; inseq's environment has them loaded on import)."""
    from attnkit.sources.hf.load import load

    hf = load(str(folder))
    generation_case(hf, items[0], steps)  # warm-up
    return [generation_case(hf, text, steps) for text in items]


def generation_case(hf, text: str, steps: int) -> dict:
    """attnkit's attributions of the most likely next token's log-probability (inseq's baseline for integrated
    gradients: [UNK] everywhere) and its row of each layer's attention, head mean, as inseq_eval.py writes them, with
    the seconds of each span (`GENERATION_TIMED`)."""
    import torch

    from attnkit.analysis.attribution import input_x_gradient_and_integrated_gradients
    from attnkit.sources.hf.attribute import score_function
    from attnkit.sources.hf.inputs import prepare
    from attnkit.sources.options import AttentionOptions
    from attnkit.sources.record import explain_inputs
    from attnkit.sources.scored import compared_rows
    from attnkit.sources.source import HfSource

    seconds, start = {}, time.perf_counter()
    prep = prepare(hf, text, AttentionOptions())
    f, x, label = score_function(hf, prep, None)  # the next token: one forward pass
    with torch.no_grad():
        base = hf.model.get_input_embeddings()(torch.full_like(prep.inputs["input_ids"], hf.tokenizer.unk_token_id))[0]  # (T, D)
    ixg, ig = input_x_gradient_and_integrated_gradients(f, x, baseline=base, steps=steps)  # one forward and backward pass
    seconds[PAIR], start = time.perf_counter() - start, time.perf_counter()
    (record,) = explain_inputs(HfSource(hf), [text], AttentionOptions())  # the one road's record of the text
    compared = compared_rows(record, ("self", x.size(0) - 1), flow=False)  # the last position's rows
    rows = [compared[f"self/layer{i + 1}"].tolist() for i in range(hf.model.config.n_layer)]  # (L, T)
    seconds["attention"] = time.perf_counter() - start
    scores = {"input_x_gradient": ixg.scores.tolist(), "integrated_gradients": ig.scores.tolist(), "attention": rows}
    return {"scores": scores, "seconds": seconds, "label": label}


def inseq_env(cache: Path) -> Path:
    """CACHE/inseq/bin/python, made on first use: torch==2.13.0, inseq without its CUDA 11 wheels, then its other requirements."""
    python = cache / "inseq" / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(cache / "inseq")], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "torch==2.13.0"], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", INSEQ], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *INSEQ_NEEDS], check=True)
    return python


def compare_inseq(cases: list[dict], tool: list[dict], stamp: dict, same: list[bool]) -> list[dict]:
    """One line per method: the largest difference on one token, the largest score for scale, and the seconds per
    text of what computed it (`timed`), set beside inseq's calls of the same methods together: attnkit's input x
    gradient and integrated gradients come from one pass (`PAIR`); for a translation run all three methods share
    the given hypothesis, and are timed together. `stamp["timed_includes"]` says what each tool's span holds."""
    lines = []
    for method in cases[0]["scores"]:
        ours = [flat(c["scores"][method]) for c in cases]
        theirs = [flat(t["scores"][method]) for t in tool]
        timed = next(k for k in cases[0]["seconds"] if method in k.split("+"))  # what attnkit computed it with
        lines.append({**stamp, "tool": INSEQ, "method": method, "metric": "token scores",
                      "max_abs_diff": max(max(abs(a - b) for a, b in zip(o, t)) for o, t in zip(ours, theirs)),
                      "max_abs_score": max(max(abs(a) for a in o) for o in ours), "timed": timed,
                      "attnkit_s_per_text": sum(c["seconds"][timed] for c in cases) / len(cases),
                      "tool_s_per_text": sum(t["seconds"][m] for t in tool for m in timed.split("+")) / len(tool),
                      "same_outputs": all(same)})  # fmt: skip
    return lines


def flat(scores: list | float) -> list[float]:
    """A method's scores, nested lists of any depth ((T,), (L, T), (T_out, L, S) ...), as one list."""
    return [v for row in scores for v in flat(row)] if isinstance(scores, list) else [scores]


def ferret_env(cache: Path) -> Path:
    """CACHE/ferret/bin/python, made on first use: torch==2.13.0 first, then ferret-xai with its pins."""
    python = cache / "ferret" / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(cache / "ferret")], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "torch==2.13.0"], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *FERRET], check=True)
    return python


def compare(cases: list[dict], tool: list[dict], stamp: dict) -> list[dict]:
    """One line per (method, metric) with both tools' figures and each tool's seconds per text for every method
    together (`FERRET_TIMED`), then one per method with attnkit's defaults."""
    attnkit_s = sum(c["seconds"] for c in cases) / len(cases)
    tool_s = sum(sum(t["seconds"].values()) for t in tool) / len(tool)
    lines = []
    for method in cases[0]["scores"]:
        for j, metric in enumerate(("comprehensiveness_aopc", "sufficiency_aopc")):
            ours = [c["ferret_mode"][method][j] for c in cases]
            theirs = [t["figures"][method][j] for t in tool]
            lines.append({"tool": "ferret-xai 0.4.2", "mode": "ferret", "method": method, "metric": metric,
                          "attnkit": sum(ours) / len(ours), "tool_value": sum(theirs) / len(theirs),
                          "max_abs_diff": max(abs(a - b) for a, b in zip(ours, theirs)), "timed": FERRET_TIMED,
                          "attnkit_s_per_text": attnkit_s, "tool_s_per_text": tool_s, "speedup": tool_s / attnkit_s, **stamp})  # fmt: skip
    for method in cases[0]["scores"]:
        comp = [c["defaults"][method][0] for c in cases]
        suff = [c["defaults"][method][1] for c in cases]
        lines.append({"tool": "attnkit", "mode": "attnkit defaults", "method": method, "comprehensiveness_aopc": sum(comp) / len(comp),
                      "sufficiency_aopc": sum(suff) / len(suff), "differences": DIFFERENCES, **stamp})  # fmt: skip
    return lines


def cpu() -> str:
    """The processor's model name (/proc/cpuinfo), else the machine type."""
    info = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in info.read_text().splitlines() if line.startswith("model name")] if info.exists() else []
    return names[0] if names else platform.machine()


def inseq_lines(args: argparse.Namespace, stamp: dict) -> list[dict]:
    """attnkit's and inseq's attributions and attention of the next token of each text, compared."""
    folder = build_gpt2(args.cache / "gpt2")
    items = texts(args.texts, seed=1)
    (args.cache / "texts.json").write_text(json.dumps(items))
    subprocess.run([str(inseq_env(args.cache)), str(HERE / "vs_tools_envs" / "inseq_eval.py"), str(folder), str(args.cache / "texts.json"),
                    str(args.cache / "inseq.json"), str(args.steps)], check=True)  # fmt: skip
    tool = json.loads((args.cache / "inseq.json").read_text())
    cases = attnkit_generation(folder, items, args.steps)
    same = [f"next token {t['generated']!r}" in c["label"] for c, t in zip(cases, tool)]
    stamp = {**stamp, "dtype": "float32", "model": "tiny random GPT-2 (2 layers, hidden 32)", "timed_includes": GENERATION_TIMED}
    return compare_inseq(cases, tool, stamp, same)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=50)
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "attnkit-vs")
    ap.add_argument("--steps", type=int, default=50, help="integrated gradients' points, in both tools (inseq)")
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64", help="the model's weights, in both tools")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "vs_tools.jsonl")
    ap.add_argument("--sst", type=Path, default=HERE.parents[1] / "shared" / "data" / "sst", help="the SST trees the classifier run learns from")
    args = ap.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    folder = build_model(args.cache / "bert")
    cases = attnkit_cases(folder, texts(args.texts), args.dtype)
    (args.cache / "cases.json").write_text(json.dumps(cases))
    subprocess.run([str(ferret_env(args.cache)), str(HERE / "vs_tools_envs" / "ferret_eval.py"), str(folder), str(args.cache / "cases.json"),
                    str(args.cache / "ferret.json"), args.dtype], check=True)  # fmt: skip
    tool = json.loads((args.cache / "ferret.json").read_text())
    stamp = {"model": "tiny random BERT classifier (2 layers, hidden 32)", "dtype": args.dtype, "texts": len(cases), "cpu": cpu(),
             "date": datetime.now(timezone.utc).strftime("%Y-%m-%d")}  # fmt: skip
    from vs_tools_runs import ferret_run_lines, inseq_translation_lines  # attnkit's own runs beside the tools

    lines = compare(cases, tool, stamp) + ferret_run_lines(args, stamp) + inseq_lines(args, stamp) + inseq_translation_lines(args, stamp)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as out:
        for line in lines:
            print(json.dumps(line))
            out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
