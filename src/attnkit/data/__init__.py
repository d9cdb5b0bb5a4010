"""Data pipeline: read text, tokenize, build vocabularies, batch.

Modules, each with one job:

- `text`: plain/.gz UTF-8 readers with file-and-line errors.
- `vocab`: `Vocabulary` with PAD 0, UNK 1, BOS 2, EOS 3.
- `tokenizers`: word, char and SentencePiece (BPE/unigram, trained once and cached).
- `batching`: `encode_pairs`, `TokenBatcher` (token budget, buckets, shards), `collate` -> `Batch`.

What only one model family reads (a corpus's checks, downloads or toy tasks) lives in that family's
package, e.g. `attnkit.families.translation.data.check`, `.fetch`, `.synthetic`.
"""
