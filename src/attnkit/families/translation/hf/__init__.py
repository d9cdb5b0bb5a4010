"""Hugging Face interop: attnkit Transformer runs as MarianMT models and back (docs/deployment.md).

`marian` maps the weights (the same network, written in Marian's order of the position features),
`export` writes a folder that `MarianMTModel` / `MarianTokenizer` / `pipeline("translation")`
load (`attnkit export RUN --format hf`), and `importer` turns a MarianMT folder (OPUS-MT) into an
attnkit run folder (`attnkit import hf SOURCE --out RUN`). The hub, the safetensors-only and
no-remote-code checks and `require` (one line when `transformers` is missing) are the core's
`attnkit.artifacts.hf`, which the explorer's Hugging Face models use too; this package holds only
what is Marian's. `INTEROP` is what these commands say needs `transformers`.
"""

INTEROP = "Hugging Face interop (export --format hf, import hf)"
