"""The right-branching baseline on the sample's dev (or test) files, scored by the same EVALB
(COLLINS.prm) as the parser: one JSON line, and the gold and baseline trees written one a line so
`attnkit evalb GOLD TEST` gives the same figures.

.venv/bin/python benchmarks/parse_baseline.py [--treebank ZIP] [--split dev|test] [--out benchmarks/out/parse_baseline]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from attnkit.families.parsing.baseline import right_branching
from attnkit.families.parsing.evalb import score
from attnkit.families.parsing.evalb_params import COLLINS
from attnkit.families.parsing.trees import preprocess_treebank, read_treebank, split_sample


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--treebank", default="../shared/data/ptb_sample/treebank.zip")
    p.add_argument("--split", choices=["dev", "test"], default="dev")
    p.add_argument("--out", default="benchmarks/out/parse_baseline")
    args = p.parse_args()
    gold = split_sample(preprocess_treebank(read_treebank(args.treebank)))[args.split]
    test = [right_branching(tree.words(), tree.tags()) for tree in gold]
    out = Path(f"{args.out}_{args.split}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".gold.txt").write_text("".join(f"{t}\n" for t in gold))
    out.with_suffix(".right.txt").write_text("".join(f"{t}\n" for t in test))
    summary = score(gold, test, COLLINS).summary()
    figures = {k: {m: round(v, 2) if isinstance(v, float) else v for m, v in block.items()} for k, block in summary.items()}
    print(json.dumps({"benchmark": "parse_baseline", "split": args.split, "trees": len(gold), **figures}))


if __name__ == "__main__":
    main()
