"""The run's metrics: `metrics.jsonl` (one JSON object per event) and TensorBoard events when installed."""

from __future__ import annotations

import json
import logging
from pathlib import Path

log = logging.getLogger("attnkit")


class MetricsLog:
    """Append training/validation records; mirror numeric fields to TensorBoard if it is importable."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / "metrics.jsonl"
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:  # tensorboard is an optional extra: pip install attnkit[tensorboard]
            self.writer = None
        else:
            self.writer = SummaryWriter(str(run_dir / "tensorboard"))

    def write(self, record: dict) -> None:
        """`record` has `kind` ("train" or "valid") and `step`; other numeric fields are scalars."""
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record) + "\n")
        if self.writer is not None:
            for key, value in record.items():
                if key not in ("kind", "step") and isinstance(value, (int, float)):
                    self.writer.add_scalar(f"{record['kind']}/{key}", value, record["step"])
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
