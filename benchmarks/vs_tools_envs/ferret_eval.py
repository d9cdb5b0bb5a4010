"""ferret-xai's AOPC evaluators on attnkit's explanations; runs in the ferret environment that benchmarks/vs_tools.py makes.

    CACHE/ferret/bin/python benchmarks/vs_tools_envs/ferret_eval.py MODEL_FOLDER CASES_JSON OUT_JSON DTYPE

For each case (a text, its class, each method's scores over its tokens but [CLS] and [SEP]) an
`Explanation` over the tokens with [CLS] and [SEP] (scored 0; ferret drops their scores, as
`remove_first_last` says) is scored by `AOPC_Comprehensiveness_Evaluation` and
`AOPC_Sufficiency_Evaluation` at their defaults, for the case's class. Writes, per case, each method's
(comprehensiveness, sufficiency) and the seconds the two took.
"""

import json
import sys
import time

import numpy as np
import torch
import transformers
from ferret.evaluators.faithfulness_measures import AOPC_Comprehensiveness_Evaluation, AOPC_Sufficiency_Evaluation
from ferret.explainers.explanation import Explanation


def main(folder: str, cases_path: str, out_path: str, dtype: str) -> None:
    model = transformers.BertForSequenceClassification.from_pretrained(folder).eval().to(getattr(torch, dtype))
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_file=f"{folder}/tokenizer.json", unk_token="[UNK]", pad_token="[PAD]",
                                                     cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")  # fmt: skip
    comprehensiveness = AOPC_Comprehensiveness_Evaluation(model, tokenizer)
    sufficiency = AOPC_Sufficiency_Evaluation(model, tokenizer)
    out = []
    for case in json.load(open(cases_path)):
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
