"""Write the tiny example data sets in examples/ (docs/your-data.md): one folder per family, each
file a few KB, every one of them in a format people already have.

- translation/: aligned `train.en`/`train.de` (and valid), the same pairs as `train.tsv` (header
  `src<TAB>tgt`) and `train.jsonl` (`{"src": ..., "tgt": ...}`);
- classification/: `train.csv`/`valid.csv` (`text,label`) and sentence pairs
  `pairs-train.jsonl`/`pairs-valid.jsonl` (`premise`, `hypothesis`, `label`);
- parsing/: `train.txt`/`valid.txt`, one bracketed PTB-style tree a line;
- captioning/: `images/*.png` (48 x 48 coloured shapes), `train.txt`/`valid.txt`
  (`image<TAB>caption`) and the same captions as a Karpathy `dataset.json`.

Seeded, so a rerun writes the same bytes: `python scripts/make_examples.py [examples]`.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
from pathlib import Path

from attnkit.families.captioning.shapes import draw, random_scene

# (English, German, German gender) of the nouns; verbs and places in both languages.
NOUNS = [("dog", "Hund", "m"), ("cat", "Katze", "f"), ("horse", "Pferd", "n"), ("man", "Mann", "m"),
         ("woman", "Frau", "f"), ("child", "Kind", "n"), ("bird", "Vogel", "m")]  # fmt: skip
VERBS = [("runs", "läuft", "running"), ("sleeps", "schläft", "sleeping"), ("jumps", "springt", "jumping"),
         ("sits", "sitzt", "sitting"), ("plays", "spielt", "playing")]  # fmt: skip
PLACES = [("in the park", "im Park", "IN", "park"), ("in the garden", "im Garten", "IN", "garden"),
          ("on the street", "auf der Straße", "IN", "street"), ("in the house", "im Haus", "IN", "house"),
          ("on the beach", "am Strand", "IN", "beach")]  # fmt: skip
ARTICLES = {"the": {"m": "der", "f": "die", "n": "das"}, "a": {"m": "ein", "f": "eine", "n": "ein"}}
SUBJECTS = ["the film", "the food", "the hotel", "the service", "the book", "the game", "the music", "the room"]
ADVERBS = ["", "really ", "very ", "quite "]
POSITIVE = ["great", "wonderful", "excellent", "good", "lovely"]
NEGATIVE = ["awful", "terrible", "boring", "bad", "dull"]


def sentences(rng: random.Random, n: int) -> list[tuple[str, str, str]]:
    """n distinct (English, German, tree) triples."""
    seen: dict[str, tuple[str, str, str]] = {}
    while len(seen) < n:
        article, (noun, noun_de, gender), (verb, verb_de, _), (place, place_de, prep, where) = (
            rng.choice(list(ARTICLES)), rng.choice(NOUNS), rng.choice(VERBS), rng.choice(PLACES))  # fmt: skip
        en = f"{article} {noun} {verb} {place} ."
        de = f"{ARTICLES[article][gender]} {noun_de} {verb_de} {place_de} ."
        word = place.split()[0]
        tree = f"(S (NP (DT {article}) (NN {noun})) (VP (VBZ {verb}) (PP ({prep} {word}) (NP (DT the) (NN {where})))) (. .))"
        seen.setdefault(en, (en, de, tree))
    return list(seen.values())


def write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))


def translation_and_parsing(root: Path, rng: random.Random) -> None:
    triples = sentences(rng, 72)
    for split, part in (("train", triples[:60]), ("valid", triples[60:])):
        write(root / "translation" / f"{split}.en", "".join(f"{en}\n" for en, _, _ in part))
        write(root / "translation" / f"{split}.de", "".join(f"{de}\n" for _, de, _ in part))
        write(root / "translation" / f"{split}.tsv", "src\ttgt\n" + "".join(f"{en}\t{de}\n" for en, de, _ in part))
        write(root / "translation" / f"{split}.jsonl", "".join(json.dumps({"src": en, "tgt": de}, ensure_ascii=False) + "\n" for en, de, _ in part))
        write(root / "parsing" / f"{split}.txt", "".join(f"{tree}\n" for _, _, tree in part))


def classification(root: Path, rng: random.Random) -> None:
    for split, n in (("train", 80), ("valid", 20)):
        out = io.StringIO()
        table = csv.writer(out, lineterminator="\n")
        table.writerow(["text", "label"])
        for _ in range(n):
            label = rng.choice(["positive", "negative"])
            adjective = rng.choice(POSITIVE if label == "positive" else NEGATIVE)
            table.writerow([f"{rng.choice(SUBJECTS)} was {rng.choice(ADVERBS)}{adjective}", label])
        write(root / "classification" / f"{split}.csv", out.getvalue())
    for split, n in (("train", 60), ("valid", 15)):
        rows = []
        for _ in range(n):
            (noun, _, _), (verb, _, ing), (place, *_) = rng.choice(NOUNS), rng.choice(VERBS), rng.choice(PLACES)
            label = rng.choice(["entailment", "contradiction", "neutral"])
            other_noun = rng.choice([n for n, _, _ in NOUNS if n != noun]) if label == "neutral" else noun
            other_verb = rng.choice([i for _, _, i in VERBS if i != ing]) if label == "contradiction" else ing
            rows.append({"premise": f"the {noun} {verb} {place} .", "hypothesis": f"the {other_noun} is {other_verb} .", "label": label})
        write(root / "classification" / f"pairs-{split}.jsonl", "".join(json.dumps(row) + "\n" for row in rows))


def captioning(root: Path, rng: random.Random) -> None:
    folder = root / "captioning"
    images, lines = [], {"train": [], "valid": []}
    for i in range(24):
        scene, split = random_scene(rng, objects=1), "train" if i < 18 else "valid"
        name = f"shape{i:02d}.png"
        buffer = io.BytesIO()
        draw(scene, 48).quantize(colors=8).save(buffer, format="PNG", optimize=True)
        write(folder / "images" / name, buffer.getvalue())
        lines[split].append(f"{name}\t{scene.caption}\n")
        sentence = {"raw": scene.caption, "tokens": scene.caption.split(), "imgid": i, "sentid": i}
        images.append({"filename": name, "imgid": i, "split": "val" if split == "valid" else split, "sentids": [i], "sentences": [sentence]})
    for split, rows in lines.items():
        write(folder / f"{split}.txt", "".join(rows))
    write(folder / "dataset.json", json.dumps({"dataset": "shapes", "images": images}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", default="examples", help="the folder to write (default: examples)")
    root = Path(parser.parse_args().root)
    rng = random.Random(52)
    translation_and_parsing(root, rng)
    classification(root, rng)
    captioning(root, rng)


if __name__ == "__main__":
    main()
