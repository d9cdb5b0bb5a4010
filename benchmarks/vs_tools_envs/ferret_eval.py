"""ferret-xai's AOPC evaluators on attnkit's explanations; runs in the ferret environment that benchmarks/vs_tools.py makes.

    CACHE/ferret/bin/python benchmarks/vs_tools_envs/ferret_eval.py MODEL_FOLDER CASES_JSON OUT_JSON DTYPE

MODEL_FOLDER is a Hugging Face BERT classifier, or an attnkit classifier run (wrapped by `RunClassifier`; attnkit is
read from the checkout through PYTHONPATH).

For each case (a text, its class, each method's scores over its tokens but [CLS] and [SEP]) an
`Explanation` over the tokens with [CLS] and [SEP] (scored 0; ferret drops their scores, as
`remove_first_last` says) is scored by `AOPC_Comprehensiveness_Evaluation` and
`AOPC_Sufficiency_Evaluation` at their defaults, for the case's class. Writes, per case, each method's
(comprehensiveness, sufficiency) and the seconds the two took, after one untimed warm-up on the first case.
"""

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import transformers
from ferret.evaluators.faithfulness_measures import AOPC_Comprehensiveness_Evaluation, AOPC_Sufficiency_Evaluation
from ferret.explainers.explanation import Explanation
from tokenizers import Tokenizer, models, pre_tokenizers, processors


class RunClassifier(torch.nn.Module):
    """An attnkit classifier run as ferret calls a Hugging Face one: `model(input_ids, attention_mask, ...).logits`.
    The ids are the run's own (`run_tokenizer`); the wrapper takes off the [CLS] and [SEP] the tokenizer adds, and
    reads an input with no word left as one `<pad>` (a zero embedding: what attnkit's deletion reads then)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, **_: object) -> SimpleNamespace:
        keep = attention_mask[:, 1:].bool().clone()  # (B, S - 1): [CLS] cut off, so the words keep their positions
        keep[torch.arange(keep.size(0)), keep.sum(dim=1) - 1] = False  # [SEP]
        ids = input_ids[:, 1:].masked_fill(~keep, 0)  # (B, S - 1): the run's ids, <pad> (0) elsewhere
        keep[~keep.any(dim=1), 0] = True  # no word left: read one <pad> (where [SEP] was)
        return SimpleNamespace(logits=self.model(ids, keep).logits)


def run_tokenizer(loaded) -> transformers.PreTrainedTokenizerFast:
    """Words split on spaces into the run's own ids, [CLS] and [SEP] around them (ids past the run's vocabulary)."""
    vocab = {token: i for i, token in enumerate(loaded.vocabs.vocab.to_json()["tokens"])}  # specials included
    n = len(vocab)
    extra = {"[CLS]": n, "[SEP]": n + 1, "[MASK]": n + 2}
    tok = Tokenizer(models.WordLevel({**vocab, **extra}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", n), ("[SEP]", n + 1)])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", cls_token="[CLS]",
                                                sep_token="[SEP]", mask_token="[MASK]", model_input_names=["input_ids", "attention_mask"])  # fmt: skip


def load(folder: str, dtype: str) -> tuple[torch.nn.Module, transformers.PreTrainedTokenizerFast]:
    """The classifier in `folder` and its tokenizer: an attnkit run (run.json; attnkit from PYTHONPATH) or a BERT."""
    if Path(folder, "run.json").exists():
        from attnkit.families import load_run

        loaded = load_run(folder)
        return RunClassifier(loaded.model.eval()).to(getattr(torch, dtype)), run_tokenizer(loaded)
    model = transformers.BertForSequenceClassification.from_pretrained(folder).eval().to(getattr(torch, dtype))
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=f"{folder}/tokenizer.json", unk_token="[UNK]", pad_token="[PAD]",
                                                     cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")  # fmt: skip
    return model, tokenizer


def main(folder: str, cases_path: str, out_path: str, dtype: str) -> None:
    model, tokenizer = load(folder, dtype)
    comprehensiveness = AOPC_Comprehensiveness_Evaluation(model, tokenizer)
    sufficiency = AOPC_Sufficiency_Evaluation(model, tokenizer)
    out = []
    cases = json.load(open(cases_path))
    first = cases[0]
    for method, scores in first["scores"].items():  # warm-up, untimed, as attnkit's side runs one
        explanation = Explanation(first["text"], ["[CLS]", *first["tokens"], "[SEP]"], np.array([0.0, *scores, 0.0]), method, first["target"])
        comprehensiveness.compute_evaluation(explanation, target=first["target"])
        sufficiency.compute_evaluation(explanation, target=first["target"])
    for case in cases:
        tokens = ["[CLS]", *case["tokens"], "[SEP]"]
        figures, seconds = {}, {}
        for method, scores in case["scores"].items():
            explanation = Explanation(case["text"], tokens, np.array([0.0, *scores, 0.0]), method, case["target"])
            start = time.perf_counter()
            comp = comprehensiveness.compute_evaluation(explanation, target=case["target"]).score
            suff = sufficiency.compute_evaluation(explanation, target=case["target"]).score
            seconds[method] = time.perf_counter() - start
            figures[method] = (float(comp), float(suff))
        out.append({"figures": figures, "seconds": seconds})
    json.dump(out, open(out_path, "w"))


if __name__ == "__main__":
    main(*sys.argv[1:5])
