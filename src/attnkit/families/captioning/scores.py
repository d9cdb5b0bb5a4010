"""Caption metrics as the COCO caption evaluation computes them (``pycocoevalcap``; Chen et al.
2015, "Microsoft COCO Captions: Data Collection and Evaluation Server").

BLEU-1..4 (Papineni et al. 2002, corpus level, closest reference length), CIDEr (Vedantam et al.
2015, CIDEr-D document frequencies from the references scored), ROUGE-L (Lin 2004) are pure
Python; METEOR (Denkowski & Lavie 2014) and the PTB tokenizer run Java. `coco_scores` tokenizes
with the PTB tokenizer when ``java`` is on PATH, else with `codec.words` (noted in the result),
and adds METEOR only with Java. Scores are on the 0-100 scale.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from attnkit import extras
from attnkit.errors import AttnkitError
from attnkit.families.captioning.codec import words

FEATURE = "scoring captions"  # what needs pycocoevalcap, as the missing-package line says it (`attnkit.extras`)


def _scorers() -> dict:
    Bleu = extras.load("pycocoevalcap.bleu.bleu", FEATURE).Bleu
    Cider = extras.load("pycocoevalcap.cider.cider", FEATURE).Cider
    Rouge = extras.load("pycocoevalcap.rouge.rouge", FEATURE).Rouge
    return {"bleu": Bleu(4), "cider": Cider(), "rouge_l": Rouge()}


def bleu4(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """Corpus BLEU-4 (0-100) of tokenized hypotheses against their references (`codec.words` tokens)."""
    Bleu = extras.load("pycocoevalcap.bleu.bleu", FEATURE).Bleu
    gts, res = _tokenized(hypotheses, references)
    with contextlib.redirect_stdout(io.StringIO()):  # the scorer prints its counts
        score, _ = Bleu(4).compute_score(gts, res)
    return 100.0 * score[3]


def _tokenized(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[dict, dict]:
    gts = {i: [" ".join(words(r)) for r in refs] for i, refs in enumerate(references)}
    res = {i: [" ".join(words(h))] for i, h in enumerate(hypotheses)}
    return gts, res


def _ptb(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[dict, dict]:
    """pycocoevalcap's PTB tokenization (Stanford CoreNLP 3.4.1, lowercased, punctuation dropped),
    run as its `PTBTokenizer` runs it but with java's progress line kept off our stderr."""
    from pycocoevalcap.tokenizer import ptbtokenizer

    lines = [h for h in hypotheses] + [r for refs in references for r in refs]
    command = ["java", "-cp", ptbtokenizer.STANFORD_CORENLP_3_4_1_JAR, "edu.stanford.nlp.process.PTBTokenizer", "-preserveLines", "-lowerCase"]
    done = subprocess.run(command, input="\n".join(line.replace("\n", " ") for line in lines).encode(), capture_output=True,
                          cwd=Path(ptbtokenizer.__file__).parent, check=False)  # fmt: skip
    tokens = done.stdout.decode().split("\n")
    if done.returncode != 0 or len(tokens) < len(lines):
        raise AttnkitError(f"the PTB tokenizer (java) failed: {done.stderr.decode().strip()[:200]}")
    clean = [" ".join(w for w in t.rstrip().split(" ") if w not in ptbtokenizer.PUNCTUATIONS) for t in tokens[: len(lines)]]
    res = {i: [clean[i]] for i in range(len(hypotheses))}
    gts, at = {}, len(hypotheses)
    for i, refs in enumerate(references):
        gts[i], at = clean[at : at + len(refs)], at + len(refs)
    return gts, res


def coco_scores(hypotheses: Sequence[str], references: Sequence[Sequence[str]], *, meteor: bool = True) -> dict[str, float | str]:
    """BLEU-1..4, CIDEr, ROUGE-L (and METEOR with Java) of one hypothesis per image (0-100).

    Raises:
        MissingExtra: pycocoevalcap is not installed.
        AttnkitError: the lists differ in length.
    """
    if len(hypotheses) != len(references) or not hypotheses:
        raise AttnkitError(f"{len(hypotheses)} captions for {len(references)} images")
    scorers = _scorers()
    java = shutil.which("java") is not None
    gts, res = _ptb(hypotheses, references) if java else _tokenized(hypotheses, references)
    out: dict[str, float | str] = {"images": len(hypotheses), "tokenizer": "ptb (Stanford CoreNLP)" if java else "attnkit words (no java)"}
    with contextlib.redirect_stdout(io.StringIO()):
        bleu, _ = scorers["bleu"].compute_score(gts, res)
        out.update({f"bleu{n}": 100.0 * bleu[n - 1] for n in range(1, 5)})
        out["cider"] = 100.0 * scorers["cider"].compute_score(gts, res)[0]
        out["rouge_l"] = 100.0 * scorers["rouge_l"].compute_score(gts, res)[0]
        if meteor and java:
            out["meteor"] = 100.0 * _meteor(gts, res)
    if meteor and not java:
        out["note"] = "METEOR skipped: no java on PATH"
    return out


def _meteor(gts: Mapping, res: Mapping) -> float:
    from pycocoevalcap.meteor.meteor import Meteor

    scorer = Meteor()
    try:
        return scorer.compute_score(gts, res)[0]
    finally:
        with contextlib.suppress(Exception):
            scorer.close() if hasattr(scorer, "close") else scorer.meteor_p.kill()
