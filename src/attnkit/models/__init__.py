"""Models: every one implements the decoding protocol of docs/conventions.md."""
