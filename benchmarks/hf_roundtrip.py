"""A trained translation run through Hugging Face: export to a MarianMT folder, decode in `transformers`, compare with attnkit.

    .venv/bin/python benchmarks/hf_roundtrip.py RUN [--data ../shared/data/multi30k] [--split test_2016_flickr]
        [--threads 2] [--limit N] [--work DIR] [--ct2]

Exports RUN with `attnkit export RUN --format hf` (into --work, default a temporary folder), loads
the folder with `MarianMTModel` and `MarianTokenizer`, and prints one JSON line per figure group:

- `greedy`: `generate(num_beams=1)` + `batch_decode` against attnkit's greedy search
  (`translate(..., beam=1)`) on every sentence of the split: the share of identical output texts
  and of identical token ids, and the source ids `MarianTokenizer` gives against attnkit's.
  attnkit stops a sentence after floor(max_len_a * (source + 1) + max_len_b) tokens, `generate` at
  one `max_length`; the sentences attnkit cut at its limit are counted (`cut_by_step_limit`).
- `beam`: BLEU (sacreBLEU) of attnkit's beam search (GNMT length penalty, alpha) and of
  `generate`'s (|Y|^length_penalty, the exported generation config) at the run's beam, and the
  share of identical outputs; `generate` with length_penalty 0 (raw log-probability) beside them.
- `logits`: max |attnkit - transformers| of the fp32 logits, teacher-forced on the references of
  the first 32 sentences (one padded batch; padding positions left out).
- `ctranslate2` (with --ct2): `attnkit import hf` of the export, then `attnkit export --format
  ctranslate2` of the imported run; the share of its greedy outputs equal to the original run's.
No timing: outputs only, so it may share the machine.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path

import sacrebleu
import torch

from attnkit.cli import main as attnkit_main
from attnkit.data.batching import collate
from attnkit.data.text import read_parallel
from attnkit.data.vocab import EOS, PAD
from attnkit.families import load_run
from attnkit.families.translation.translate import detokenize, length_batches, search_ids, translate


def share(a: list, b: list) -> float:
    return round(sum(x == y for x, y in zip(a, b, strict=True)) / len(a), 4)


def hf_generate(hf, tokenizer, src: list[str], batch_size: int, decode=None, **kwargs) -> tuple[list[str], list[list[int]]]:
    """`generate` on batches of similar length; texts (batch_decode) and ids (no start, no padding, EOS kept) in input order.

    With `decode`, each batch holds sources of one length and gets attnkit's step limit for it as
    `max_new_tokens`: floor(max_len_a * (source + 1) + max_len_b), the source counted with its EOS.
    """
    texts, ids = [""] * len(src), [[] for _ in src]
    lengths = [len(tokenizer(s)["input_ids"]) for s in src]  # with EOS
    for index in length_batches(lengths, batch_size):
        groups = [index] if decode is None else [[i for i in index if lengths[i] == n] for n in sorted({lengths[i] for i in index})]
        for group in groups:
            limit = {} if decode is None else {"max_new_tokens": max(1, math.floor(decode.max_len_a * lengths[group[0]] + decode.max_len_b))}
            _generate(hf, tokenizer, src, group, texts, ids, **kwargs, **limit)
    return texts, ids


def _generate(hf, tokenizer, src: list[str], index: list[int], texts: list[str], ids: list[list[int]], **kwargs) -> None:
    inputs = tokenizer([src[i] for i in index], return_tensors="pt", padding=True)
    with torch.no_grad():
        out = hf.generate(**inputs, do_sample=False, **kwargs)  # (B, 1 + T)
    for i, row, text in zip(index, out, tokenizer.batch_decode(out, skip_special_tokens=True)):
        texts[i], ids[i] = text, [t for t in row[1:].tolist() if t != PAD]


def greedy_figures(loaded, hf, tokenizer, src: list[str], batch_size: int) -> dict:
    decode = loaded.run.decode.with_overrides(beam=1)
    src_ids = [loaded.vocabs.src_vocab.encode(loaded.vocabs.src_tokenizer.tokenize(s)) for s in src]
    hyps = [nbest[0] for nbest in search_ids(loaded.model, src_ids, decode)]
    ours = [detokenize(loaded.vocabs, h) for h in hyps]
    ours_ids = [h.tokens + [EOS] * h.finished for h in hyps]
    texts, ids = hf_generate(hf, tokenizer, src, batch_size, num_beams=1)  # the exported max_length
    limited, limited_ids = hf_generate(hf, tokenizer, src, batch_size, decode, num_beams=1)  # attnkit's limit per sentence
    marian_src = [tokenizer(s)["input_ids"][:-1] for s in src]  # without its EOS
    differ = [i for i, (a, b) in enumerate(zip(ours, texts)) if a != b]
    return {
        "figure": "greedy", "sentences": len(src), "same_text": share(ours, texts), "same_ids": share(ours_ids, ids),
        "same_text_with_attnkit_step_limit": share(ours, limited), "same_ids_with_attnkit_step_limit": share(ours_ids, limited_ids),
        "same_source_ids": share(src_ids, marian_src), "cut_by_step_limit": sum(not h.finished for h in hyps),
        "bleu_attnkit": round(sacrebleu.corpus_bleu(ours, [REF]).score, 2), "bleu_generate": round(sacrebleu.corpus_bleu(texts, [REF]).score, 2),
        "differences": [{"line": i + 1, "attnkit_words": len(ours[i].split()), "generate_words": len(texts[i].split()),
                         "same_prefix": texts[i].startswith(ours[i]), "attnkit": ours[i][:80]} for i in differ[:3]],
    }  # fmt: skip


def beam_figures(loaded, hf, tokenizer, src: list[str], batch_size: int) -> dict:
    d = loaded.run.decode
    ours = [nbest[0].text for nbest in translate(loaded.model, loaded.vocabs, src, d)]
    theirs, _ = hf_generate(hf, tokenizer, src, batch_size)  # the exported generation_config.json: num_beams, length_penalty, early_stopping
    raw, _ = hf_generate(hf, tokenizer, src, batch_size, length_penalty=0.0)
    bleu = {name: round(sacrebleu.corpus_bleu(out, [REF]).score, 2) for name, out in (("attnkit", ours), ("generate", theirs), ("generate_lp0", raw))}
    mean_len = {name: round(sum(len(t.split()) for t in out) / len(out), 2) for name, out in (("attnkit", ours), ("generate", theirs), ("generate_lp0", raw))}
    return {
        "figure": "beam", "beam": d.beam, "alpha": d.alpha, "sentences": len(src), "bleu": bleu, "mean_words": mean_len,
        "same_text": share(ours, theirs), "same_text_lp0": share(ours, raw),
    }  # fmt: skip


def logit_figures(loaded, hf, pairs: list[tuple[str, str]]) -> dict:
    v = loaded.vocabs
    examples = [(v.src_vocab.encode(v.src_tokenizer.tokenize(a)), v.tgt_vocab.encode(v.tgt_tokenizer.tokenize(b))) for a, b in pairs]
    batch = collate(examples, range(len(examples)))
    with torch.no_grad():
        ours = loaded.model(batch.src, batch.src_keep, batch.tgt_in)  # (B, T, V)
        theirs = hf(input_ids=batch.src, attention_mask=batch.src_keep.long(), decoder_input_ids=batch.tgt_in).logits  # (B, T, V)
    diff = (ours - theirs)[batch.tgt_keep].abs()  # (N, V) at real target positions
    return {"figure": "logits", "sentences": len(pairs), "positions": diff.size(0), "dtype": "float32",
            "max_abs_diff": float(diff.max()), "max_abs_logit": float(ours[batch.tgt_keep].abs().max())}  # fmt: skip


def ctranslate2_figures(run: str, export: Path, work: Path, src: list[str], ours: list[str]) -> dict:
    from attnkit.families.translation.export import ctranslate2_model
    from attnkit.families.translation.export.bundle import read_bundle

    imported, ct2 = work / "imported", work / "ct2"
    assert attnkit_main(["import", "hf", str(export), "--out", str(imported)]) == 0
    assert attnkit_main(["export", str(imported), "--format", "ctranslate2", "--out", str(ct2)]) == 0
    bundle = read_bundle(ct2, "ctranslate2")
    decode = load_run(run).run.decode.with_overrides(beam=1)
    theirs = ctranslate2_model.translate(bundle, ctranslate2_model.load(bundle, threads=torch.get_num_threads()), src, decode)
    return {"figure": "ctranslate2", "path": "attnkit run -> export hf -> import hf -> export ctranslate2", "sentences": len(src),
            "same_text_as_attnkit_greedy": share(ours, theirs), "imported_decode": {"beam": bundle.decode.beam, "alpha": bundle.decode.alpha}}  # fmt: skip


REF: list[str] = []


def main() -> None:
    import transformers

    from attnkit.precision import cpu_model

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run")
    p.add_argument("--data", default="../shared/data/multi30k")
    p.add_argument("--split", default="test_2016_flickr")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--limit", type=int)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--work")
    p.add_argument("--ct2", action="store_true", help="also import the export and export it to CTranslate2")
    p.add_argument("--skip-beam", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    work = Path(args.work or tempfile.mkdtemp(prefix="hf_roundtrip_"))
    export = work / "hf"
    if not (export / "export.json").is_file():
        assert attnkit_main(["export", args.run, "--format", "hf", "--out", str(export)]) == 0
    data = Path(args.data)
    pairs = read_parallel(data / f"{args.split}.en.gz", data / f"{args.split}.de.gz")[: args.limit]
    src = [a for a, _ in pairs]
    REF[:] = [b for _, b in pairs]
    loaded = load_run(args.run)
    loaded.model.eval()
    hf = transformers.MarianMTModel.from_pretrained(str(export)).eval()
    tokenizer = transformers.MarianTokenizer.from_pretrained(str(export))
    print(json.dumps({"run": args.run, "split": args.split, "cpu": cpu_model(), "threads": args.threads, "transformers": transformers.__version__,
                      "torch": torch.__version__, "work": str(work)}), flush=True)  # fmt: skip
    print(json.dumps(logit_figures(loaded, hf, pairs[:32])), flush=True)
    greedy = greedy_figures(loaded, hf, tokenizer, src, args.batch_size)
    print(json.dumps(greedy, ensure_ascii=False), flush=True)
    if not args.skip_beam:
        print(json.dumps(beam_figures(loaded, hf, tokenizer, src, args.batch_size)), flush=True)
    if args.ct2:
        ours = [nbest[0].text for nbest in translate(loaded.model, loaded.vocabs, src, loaded.run.decode.with_overrides(beam=1))]
        print(json.dumps(ctranslate2_figures(args.run, export, work, src, ours)), flush=True)


if __name__ == "__main__":
    main()
