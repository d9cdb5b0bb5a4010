"""A Hugging Face model in the explorer, offline (tour page 9). Two sub-commands:

    .venv/bin/python docs/tour/code/pretrained.py make runs/tiny-bert            # a tiny random BERT, as save_pretrained saves it
    .venv/bin/python docs/tour/code/pretrained.py make runs/tiny-gpt2 --gpt2     # a tiny random GPT-2
    .venv/bin/python docs/tour/code/pretrained.py compare runs/tiny-bert TEXT FILE.npz   # the npz against output_attentions

There is no hub here, so `make` builds the model from its config (random weights) with a WordPiece
tokenizer built by `tokenizers`: a folder that `attnkit attention|report|plot` open as they open
`bert-base-uncased`. `compare` runs the folder through transformers with `output_attentions=True`
and prints the largest difference from what `attnkit attention` wrote.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers, processors

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "a", "ca", "##t", "##s", "dog", "sat", "on", "mat", "ran", "to", "and", "it", "was", "red", "."]
VOCAB = {w: i for i, w in enumerate(SPECIALS + WORDS)}


def tokenizer(bert: bool) -> transformers.PreTrainedTokenizerFast:
    """WordPiece over VOCAB ("cats" -> ca ##t ##s); BERT's wraps the text in [CLS] ... [SEP]."""
    tok = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]", continuing_subword_prefix="##"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if bert:
        tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                                sep_token="[SEP]", mask_token="[MASK]")  # fmt: skip


def make(folder: Path, gpt2: bool) -> None:
    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(0)
    if gpt2:
        config = transformers.GPT2Config(vocab_size=len(VOCAB), n_embd=32, n_layer=4, n_head=4, n_positions=64, bos_token_id=2, eos_token_id=3)
        model = transformers.GPT2LMHeadModel(config)
        with torch.no_grad():  # GPT-2's small init leaves random attention near uniform; sharpen it so the maps show something
            for p in model.parameters():
                p.mul_(8.0)
    else:
        config = transformers.BertConfig(vocab_size=len(VOCAB), pad_token_id=0, hidden_size=32, num_hidden_layers=4, num_attention_heads=4,
                                         intermediate_size=64, max_position_embeddings=64)  # fmt: skip
        model = transformers.BertModel(config)
        with torch.no_grad():  # the same for BERT: larger queries and keys, sharper maps
            for name, p in model.named_parameters():
                if ".query." in name or ".key." in name:
                    p.mul_(4.0)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer(bert=not gpt2).save_pretrained(folder)
    files = sorted(p.name for p in folder.iterdir())
    print(f"{folder}: a random {type(model).__name__}, {config.num_hidden_layers} layers x {config.num_attention_heads} heads; {', '.join(files)}")


def compare(folder: Path, text: str, npz: Path) -> None:
    transformers.utils.logging.disable_progress_bar()
    model = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    ids = tok(text, return_tensors="pt")["input_ids"]  # (1, T)
    with torch.inference_mode():
        attentions = model(ids, output_attentions=True).attentions  # L x (1, H, T, T)
    z = np.load(npz)
    print("tokens:", " ".join(z["tokens"]))
    kind = "encoder" if "encoder/layer1" in z.files else "self"
    worst = 0.0
    for layer, a in enumerate(attentions, start=1):
        ours = z[f"{kind}/layer{layer}"]  # (H, T, T)
        worst = max(worst, float(np.abs(ours - a[0].numpy()).max()))
        print(f"{kind}/layer{layer} {ours.shape}: rows sum to {ours.sum(-1).mean():.4f}")
    print(f"max |npz - output_attentions| over {len(attentions)} layers = {worst:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("make", help="build a tiny random model into FOLDER")
    p.add_argument("folder", type=Path)
    p.add_argument("--gpt2", action="store_true", help="a GPT-2 (decoder-only) instead of a BERT")
    p = sub.add_parser("compare", help="an npz of `attnkit attention` against transformers' output_attentions")
    p.add_argument("folder", type=Path)
    p.add_argument("text")
    p.add_argument("npz", type=Path)
    args = parser.parse_args()
    if args.command == "make":
        make(args.folder, args.gpt2)
    else:
        compare(args.folder, args.text, args.npz)


if __name__ == "__main__":
    main()
