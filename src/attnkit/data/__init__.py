"""Data pipeline: read and check text, tokenize, build vocabularies, batch, fetch datasets.

Modules, each with one job:

- `text`: plain/.gz UTF-8 readers with file-and-line errors.
- `check`: `attnkit data check`, a report on a parallel corpus.
- `vocab`: `Vocabulary` with PAD 0, UNK 1, BOS 2, EOS 3.
- `tokenizers`: word, char and SentencePiece (BPE/unigram, trained once and cached).
- `batching`: `encode_pairs`, `TokenBatcher` (token budget, buckets, shards), `collate` -> `Batch`.
- `synthetic`: copy / reverse / sort toy tasks.
- `fetch`: `attnkit data fetch multi30k`, with sha256 checks.
- `prepare`: `prepare_translation`, the whole path from files to encoded examples.
"""
