"""Run folders, checkpoints and prepared data: written and read back safely; nothing here trains."""
