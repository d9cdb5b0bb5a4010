"""The run's metrics: `metrics.jsonl` (one JSON object per event) and TensorBoard events when installed."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from attnkit.io import append_text, atomic_write_text

log = logging.getLogger("attnkit")


class MetricsLog:
    """Append training/validation records; mirror numeric fields to TensorBoard if it is importable."""

    def __init__(self, run_dir: Path, enabled: bool = True) -> None:
        """`enabled=False` (ranks other than 0 of a distributed run) writes nothing."""
        self.path = run_dir / "metrics.jsonl"
        self.enabled = enabled
        if not enabled:
            self.writer = None
            return
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:  # tensorboard is an optional extra: pip install attnkit[tensorboard]
            self.writer = None
        else:
            self.writer = SummaryWriter(str(run_dir / "tensorboard"))

    def rewind(self, step: int) -> None:
        """Keep the records up to `step` (a resumed run's checkpoint) and drop the rest: the updates a
        killed run logged after its last checkpoint are done again, and its last line may be partial."""
        if not self.enabled or not self.path.exists():
            return
        kept = []
        for line in self.path.read_text(encoding="utf-8").splitlines(keepends=True):
            try:
                if line.endswith("\n") and json.loads(line)["step"] <= step:
                    kept.append(line)
            except json.JSONDecodeError:  # a line cut by the kill (and whatever was appended to it)
                continue
        atomic_write_text(self.path, "".join(kept))

    def write(self, record: dict) -> None:
        """`record` has `kind` ("train" or "valid") and `step`; other numeric fields are scalars.

        A record is appended whole or not at all (a full disk is a `WriteError`, the file unchanged)."""
        if not self.enabled:
            return
        append_text(self.path, json.dumps(record) + "\n")
        if self.writer is not None:
            for key, value in record.items():
                if key not in ("kind", "step") and isinstance(value, (int, float)):
                    self.writer.add_scalar(f"{record['kind']}/{key}", value, record["step"])
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
