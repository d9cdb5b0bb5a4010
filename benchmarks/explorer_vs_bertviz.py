"""attnkit's report page vs bertviz 1.4.1's head_view and model_view on one BERT, at 128 and 512 tokens.

    .venv/bin/pip install -c <(echo "torch==$(.venv/bin/python -c 'import torch; print(torch.__version__)')") --no-deps bertviz==1.4.1
    .venv/bin/python benchmarks/explorer_vs_bertviz.py [--tokens 128 512] [--repeat 3]

bertviz is for this benchmark only (not a dependency of attnkit); `--no-deps` because its own
requirements (boto3, requests) are for its neuron view, which is not measured here.

The model: a tiny-width random-weight BERT built here from a config (12 layers x 12 heads, hidden
48, 512 positions, float32, eager attention) with a WordPiece tokenizer built by `tokenizers`,
saved as `save_pretrained` saves it. The input: N - 2 words, + [CLS] and [SEP] = N tokens.

Per (tool, tokens), in a fresh process per repeat, the median of --repeat runs of:
- `build_s`: from nothing loaded to the HTML written: load the model and tokenizer, the forward
  pass, the HTML. attnkit: `open_source` + `page_record` + `write_report` (what `attnkit report`
  does). bertviz: `from_pretrained` + the forward pass with `output_attentions=True` +
  `head_view(...)` or `model_view(..., html_action="return")`, as its README shows;
- `html_mb`: the HTML's size (bertviz: the returned HTML; it loads require.js, d3 and jQuery from
  cdnjs when it is opened);
- `peak_mib`: the process's peak resident memory (ru_maxrss);
- attnkit only, `first_view_ms`: the page opened from disk in headless Chromium (/usr/bin/chromium,
  Playwright), navigation start to the heatmap drawn. bertviz's pages cannot be opened here: they
  need require.js, d3 and jQuery from cdnjs.cloudflare.com, no pip package ships those files, and
  the machine has no network; so bertviz has no `first_view_ms`.

Prints one JSON line per (tool, tokens).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOLS = ("attnkit report", "bertviz head_view", "bertviz model_view")
WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "ran", "and", "."]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CHROMIUM = "/usr/bin/chromium"


def build_model(folder: Path, architecture: str = "BertModel", **config) -> Path:
    """Save a random-weight BERT (`architecture`, e.g. BertForSequenceClassification; `config` overrides
    the benchmark's 12 layers, 12 heads, hidden 48) and its WordPiece tokenizer into `folder`."""
    import torch
    import transformers
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {w: i for i, w in enumerate(SPECIALS + WORDS)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", continuing_subword_prefix="##"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                                sep_token="[SEP]", mask_token="[MASK]")  # fmt: skip
    shape = {"hidden_size": 48, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 96} | config
    bert = transformers.BertConfig(vocab_size=len(vocab), pad_token_id=0, max_position_embeddings=512, **shape)
    torch.manual_seed(0)
    getattr(transformers, architecture)(bert).save_pretrained(folder, safe_serialization=True)
    fast.save_pretrained(folder)
    return folder


def text_of(tokens: int) -> str:
    return " ".join(WORDS[i % len(WORDS)] for i in range(tokens - 2))


def child(tool: str, folder: str, tokens: int, out: str) -> dict:
    started = time.perf_counter()
    if tool == "attnkit report":
        from attnkit.sources import open_source
        from attnkit.sources.page import page_record
        from attnkit.viz.report import write_report

        record = page_record(open_source(folder), text_of(tokens))
        assert len(record["maps"]["encoder"]["rows"]) == tokens, len(record["maps"]["encoder"]["rows"])
        write_report([record], out, title=f"{tokens} tokens")
    else:
        import torch
        import transformers
        from bertviz import head_view, model_view

        tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        model = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
        ids = tokenizer(text_of(tokens), return_tensors="pt")["input_ids"]  # (1, T)
        assert ids.shape[1] == tokens, ids.shape
        with torch.inference_mode():
            attention = model(ids, output_attentions=True).attentions  # L x (1, H, T, T)
        view = head_view if tool.endswith("head_view") else model_view
        html = view(attention, tokenizer.convert_ids_to_tokens(ids[0]), html_action="return").data
        Path(out).write_text(html, encoding="utf-8")
    built = time.perf_counter() - started
    return {"build_s": built, "html_mb": Path(out).stat().st_size / 1e6, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def first_view_ms(path: Path, repeat: int) -> float:
    """Median ms from navigation start to attnkit's heatmap drawn, the page opened from disk in headless Chromium."""
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        for _ in range(repeat):
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(path.as_uri())
            page.wait_for_selector(".attn-heatmap canvas.attn-canvas")
            times.append(page.evaluate("performance.now()"))  # the page's script draws the heatmap synchronously
            page.close()
        browser.close()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[128, 512])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=4, metavar=("TOOL", "FOLDER", "TOKENS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        tool, folder, tokens, out = args.child
        print(json.dumps(child(tool, folder, int(tokens), out)))
        return
    if importlib.util.find_spec("bertviz") is None:
        sys.exit("bertviz is not installed; see the top of benchmarks/explorer_vs_bertviz.py for the pip line (it must not change torch)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_model(Path(tmp) / "bert")
        for tokens in args.tokens:
            for tool in TOOLS:
                out = Path(tmp) / f"{tool.replace(' ', '-')}-{tokens}.html"
                runs = []
                for _ in range(args.repeat):
                    cmd = [sys.executable, __file__, "--child", tool, str(folder), str(tokens), str(out)]
                    runs.append(json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]))
                result = {"tool": tool, "tokens": tokens, "repeat": args.repeat}
                result.update({k: round(statistics.median(r[k] for r in runs), 2) for k in ("build_s", "html_mb", "peak_mib")})
                if tool == "attnkit report":
                    result["first_view_ms"] = round(first_view_ms(out, args.repeat))
                print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
