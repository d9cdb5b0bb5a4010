"""benchmarks/vs_tools.py's cases on attnkit's own runs: an attnkit classifier beside ferret-xai's evaluators, and an
attnkit translation run, exported to Hugging Face, beside inseq.

The classifier: `sst2-transformer` (two layers of self-attention over word embeddings) trained 300 updates into
CACHE/sst2-transformer, on SST from the shared data folder (`--sst`). ferret reads Hugging Face models only, so
`vs_tools_envs/ferret_eval.py` wraps the run (loaded through attnkit's checkout on PYTHONPATH, in ferret's own
environment) as a sequence classifier with `.logits`, behind a word-level tokenizer over the run's vocabulary
whose `[CLS]` and `[SEP]` the wrapper takes off again. attnkit scores the same explanations in its ferret mode:
`analysis.faithfulness.ferret_aopc_of_rankings` over `--removal delete` (`sources.scored.scored_run`: every deletion of a text in one padded batch under the run's padding mask). The texts: SST dev
sentences of 4 to 25 words, every word in the run's vocabulary (ferret removes a word by decoding ids to text and
tokenizing it again; an unknown word would come back as the literal `<unk>`).

The translation run: toy-reverse as a post-norm Transformer (Marian has no pre-norm stacks), 300 updates, exported
with `attnkit export --format hf` (`vs_tools_envs/inseq_translation.py` says what inseq is given). Both tools are
given the hypothesis the run's beam search found and attribute every output token of it (`TRANSLATION_TIMED`).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

from vs_tools import HERE, PAIR, compare, compare_inseq, ferret_env, inseq_env, scored_cases

ATTNKIT = [sys.executable, "-m", "attnkit"]
SRC = HERE.parent / "src"  # the checkout's attnkit, which ferret's environment reads through PYTHONPATH


def trained(cache: Path, name: str, preset: str, *settings: str) -> Path:
    """CACHE/NAME: `preset` trained with `settings` (made on first use)."""
    run = cache / name
    if not (run / "checkpoints").exists():
        sets = [a for s in settings for a in ("--set", s)]
        subprocess.run([*ATTNKIT, "train", preset, "--out", str(run), *sets], check=True)
    return run


def run_texts(run: Path, sst: Path, n: int) -> list[str]:
    """The first n SST dev sentences of 4 to 25 words whose words the run all knows, as the run tokenizes them."""
    from attnkit.families import load_run
    from attnkit.families.classification.data import read_sst_trees
    from attnkit.families.classification.infer import tokenize

    loaded = load_run(run)
    vocab = loaded.vocabs.vocab
    out = []
    for example in read_sst_trees(sst / "trees_dev.txt.gz")[0]:
        words = tokenize(loaded, example.text)
        if 4 <= len(words) <= 25 and all(w in vocab for w in words):
            out.append(" ".join(words))
        if len(out) == n:
            break
    return out


def attnkit_run_cases(run: Path, items: list[str]) -> list[dict]:
    """Per text, as `vs_tools.scored_cases` writes them, through the attnkit run (its only output: the class)."""
    from attnkit.sources import open_source
    from attnkit.sources.scored import scored_run

    source = open_source(str(run))
    return scored_cases(items, lambda text, removal: scored_run(source, text, removal=removal)[0])


def ferret_run_lines(args: argparse.Namespace, stamp: dict) -> list[dict]:
    """attnkit's and ferret's AOPC of the same explanations of an attnkit classifier run (module docstring)."""
    run = trained(args.cache, "sst2-transformer", "sst2-transformer", "train.max_steps=300", "train.eval_every=300", f"data.dir={args.sst}")
    cases = attnkit_run_cases(run, run_texts(run, args.sst, args.texts))
    (args.cache / "run_cases.json").write_text(json.dumps(cases))
    python = ferret_env(args.cache)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "sacrebleu"], check=True)  # what attnkit's import of a run needs beside ferret's
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    subprocess.run([str(python), str(HERE / "vs_tools_envs" / "ferret_eval.py"), str(run), str(args.cache / "run_cases.json"),
                    str(args.cache / "ferret_run.json"), "float32"], check=True, env=env)  # fmt: skip
    tool = json.loads((args.cache / "ferret_run.json").read_text())
    model = "attnkit run sst2-transformer (300 updates)"
    return compare(cases, tool, {**stamp, "model": model, "dtype": "float32", "texts": len(cases)})


def translation_run(cache: Path) -> tuple[Path, Path]:
    """CACHE/toy-reverse (toy-reverse as a post-norm Transformer, which Marian can hold, trained 300 steps) and its
    Hugging Face export CACHE/toy-reverse-hf, made on first use."""
    run, export = cache / "toy-reverse", cache / "toy-reverse-hf"
    attnkit = [sys.executable, "-m", "attnkit"]
    if not (run / "checkpoints").exists():
        subprocess.run([*attnkit, "train", "toy-reverse", "--out", str(run), "--set", "model.norm=post", "--set", "train.max_steps=300",
                        "--set", "train.eval_every=300"], check=True)  # fmt: skip
    if not (export / "config.json").exists():
        subprocess.run([*attnkit, "export", str(run), "--format", "hf", "--out", str(export)], check=True)
    return run, export


TRANSLATION_TIMED = (
    "per line, given the hypothesis: attnkit, tokenizing the line and the hypothesis, the source embeddings and inseq's "
    "baseline, input x gradient and integrated gradients of every output token in one batched forward and backward pass, "
    "and a teacher-forced pass for each layer's cross-attention; inseq, its three attribute calls (input_x_gradient, "
    "integrated_gradients, attention), each given the hypothesis (generated_texts). Not timed: the beam search "
    "that found the hypothesis"
)


def attnkit_translation(run: Path, lines: list[str], steps: int) -> list[dict]:
    """Per source line: the hypothesis the run's explorer shows (the run's beam search, not timed: inseq is handed it)
    and `translation_case` of it, timed (`TRANSLATION_TIMED`), after one untimed warm-up case (the first call loads
    captum's integration points and allocates; inseq's environment has them loaded on import)."""
    from attnkit.families import load_run
    from attnkit.families.translation.attribute import forced

    loaded = load_run(run)
    hypotheses = [" ".join(forced(loaded, line).tgt_pieces).removesuffix("</s>").strip() for line in lines]  # what the explorer shows
    translation_case(loaded, lines[0], hypotheses[0], steps)  # warm-up
    cases = []
    for line, hypothesis in zip(lines, hypotheses):
        start = time.perf_counter()
        pieces, scores = translation_case(loaded, line, hypothesis, steps)
        seconds = {f"{PAIR}+attention": time.perf_counter() - start}
        cases.append({"source": line, "hypothesis": hypothesis, "pieces": pieces, "scores": scores, "seconds": seconds})
    return cases


def translation_case(loaded, line: str, hypothesis: str, steps: int) -> tuple[list[str], dict]:
    """(the output pieces, method -> scores) of `hypothesis` teacher-forced (`families.translation.attribute.forced`
    given it: forced decoding, EOS last, as inseq's `generated_texts`): for each output token, input x gradient and
    integrated gradients of its log-probability over the source (from the [UNK] embedding, the EOS kept, as inseq),
    every output in one batched pass (`attributions_of_outputs`), and its row of each layer's cross-attention, head
    mean (`teacher_forced`, the pass the explorer's maps come from)."""
    import torch

    from attnkit.analysis.attribution import attributions_of_outputs
    from attnkit.data.vocab import EOS, UNK
    from attnkit.families.translation.attribute import forced
    from attnkit.families.translation.teacher_forced import teacher_forced

    model, vocabs = loaded.model, loaded.vocabs
    given = forced(loaded, line, target=hypothesis)
    with torch.no_grad():
        base = model.src_embed(torch.tensor([[EOS if t == "</s>" else UNK for t in given.src_pieces]]))[0]  # (S, D): inseq's baseline
    pairs = attributions_of_outputs(given.scores, range(len(given.tgt_pieces)), given.x, baseline=base, steps=steps)
    src, tgt = vocabs.src_vocab.encode(given.src_pieces[:-1]), vocabs.tgt_vocab.encode(given.tgt_pieces[:-1])
    cross = teacher_forced(model, [(src, tgt, True)])[0]["cross"]  # per layer (H, T, S)
    attention = torch.stack([w.mean(dim=0) for w in cross], dim=1)  # (T, L, S)
    scores = {"input_x_gradient": [ixg.scores.tolist() for ixg, _ in pairs], "integrated_gradients": [ig.scores.tolist() for _, ig in pairs],
              "attention": attention.tolist()}  # fmt: skip
    return given.tgt_pieces, scores


def inseq_translation_lines(args: argparse.Namespace, stamp: dict) -> list[dict]:
    """attnkit's and inseq's attributions and cross-attention of every output token of a translation run's
    hypotheses, with inseq as shipped and with its decoder embeddings scaled once (vs_tools_envs/inseq_translation.py)."""
    run, export = translation_run(args.cache)
    rng = random.Random(2)
    lines = [" ".join(f"t{rng.randrange(10)}" for _ in range(rng.randint(3, 8))) for _ in range(args.texts)]
    cases = attnkit_translation(run, lines, args.steps)
    (args.cache / "translation_cases.json").write_text(json.dumps(cases))
    out = []
    for mode in ("as-shipped", "fix-scale"):
        subprocess.run([str(inseq_env(args.cache)), str(HERE / "vs_tools_envs" / "inseq_translation.py"), str(export),
                        str(args.cache / "translation_cases.json"), str(args.cache / f"inseq_{mode}.json"), str(args.steps), mode], check=True)  # fmt: skip
        tool = json.loads((args.cache / f"inseq_{mode}.json").read_text())
        same = [t["target"][1:] == c["pieces"] for c, t in zip(cases, tool)]
        model = "attnkit run toy-reverse (post-norm, 300 steps), exported to MarianMTModel"
        out += compare_inseq(cases, tool, {**stamp, "dtype": "float32", "model": model, "inseq_mode": mode, "timed_includes": TRANSLATION_TIMED}, same)
    return out
