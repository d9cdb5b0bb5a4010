"""Typed, validated run configuration: the sections every model family shares.

`Train` and `Decode` are the same for every family; a family's own `data` and `model` sections and
its `RunBase` subclass live in its package (`attnkit.families.<name>.config`), and the family table
(`attnkit.families`) picks the subclass by `model.kind`. Every model is frozen and forbids unknown
keys, so a typo in a YAML file or a `--set` override is an error at the edge, never a silently
ignored setting. Field defaults are the papers' defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PositiveFloat, PositiveInt, ValidationError, model_validator

from attnkit.config.load import validation_error
from attnkit.extras import Need

DEFAULT_MODEL_KIND = "transformer"  # a config without model.kind: the paper's model


@dataclass(frozen=True)
class Metric:
    """A validation metric a family measures: its key in metrics.jsonl, its label in tables, its format."""

    key: str
    label: str
    fmt: str = "{:.2f}"

    def show(self, value: float | None) -> str:
        return "—" if value is None else self.fmt.format(value)


SHARED_METRICS = (Metric("ppl", "PPL"),)  # measured by several families, shown after theirs
LOSS = Metric("loss", "loss", "{:.3f}")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Schedule(Strict):
    """Learning rate schedule. noam: `lr` is the scale factor; inverse_sqrt, cosine: `lr` is the peak."""

    kind: Literal["noam", "inverse_sqrt", "constant", "cosine"] = "noam"
    lr: PositiveFloat = 1.0
    warmup: PositiveInt = 4000
    total: PositiveInt | None = None  # cosine: the step at which the rate reaches 0

    @model_validator(mode="after")
    def _cosine(self) -> Schedule:
        if self.kind == "cosine" and (self.total is None or self.total <= self.warmup):
            raise ValueError(f"schedule kind cosine needs total > warmup (the step where the rate reaches 0), got total={self.total}, warmup={self.warmup}")
        return self


class Train(Strict):
    seed: int = 1
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"  # auto: bf16 where the hardware has it (attnkit.precision)
    threads: PositiveInt | None = None
    kernel_cache: PositiveInt = 64  # oneDNN's primitive cache (CPU bf16 matmul kernels), once per process (attnkit.allocator)
    max_tokens: PositiveInt = 4096
    accum: PositiveInt = 1
    betas: tuple[float, float] = (0.9, 0.98)
    eps: PositiveFloat = 1e-9
    weight_decay: float = Field(0.0, ge=0.0)
    amsgrad: bool = False  # Adam's AMSGrad variant (Reddi et al. 2018): steps divided by the running maximum of the second moment
    schedule: Schedule = Schedule()
    label_smoothing: float = Field(0.1, ge=0.0, lt=1.0)
    clip_norm: float = Field(0.0, ge=0.0)
    max_steps: PositiveInt | None = None
    max_epochs: PositiveInt | None = None
    max_minutes: PositiveFloat | None = None
    eval_every: PositiveInt = 1000
    eval_first: PositiveInt | None = None  # also validate and checkpoint at this update (an early first checkpoint)
    checkpoint_minutes: PositiveFloat | None = None  # also a checkpoint (no validation) every N minutes of training (Vaswani et al.: 10)
    eval_decode: bool = True  # validation also decodes and scores (the family's metrics: BLEU, F1...); off: loss only
    eval_beam: PositiveInt = 1
    eval_max_sentences: PositiveInt | None = None
    max_sentences: PositiveInt | None = None  # also at most this many examples per batch
    early_stopping: str | None = None  # a validation metric of the run's family (`RunBase.METRICS`) or "loss"; None: the family's
    patience: PositiveInt | None = None
    keep_last: PositiveInt = 5
    log_every: PositiveInt = 100
    max_bad_steps: PositiveInt = 5

    @model_validator(mode="after")
    def _stop(self) -> Train:
        if self.max_steps is None and self.max_epochs is None and self.max_minutes is None:
            raise ValueError("set at least one of max_steps, max_epochs, max_minutes")
        return self


class Decode(Strict):
    """How a sequence is searched for: the config's `decode` section, also the type of every override.

    `with_overrides` applies the CLI's and the API's settings (None keeps the run's) and validates
    the result, so the nbest <= beam rule is checked here once. `workers` (CPU) decodes that many
    batches at once, one thread each (None: the number of threads); `max_src_len` refuses longer
    inputs (decoding time grows with the square of the length).
    """

    beam: PositiveInt = 4
    alpha: float = Field(0.6, ge=0.0)
    nbest: PositiveInt = 1
    max_len_a: float = Field(1.0, ge=0.0)
    max_len_b: int = Field(50, ge=1)
    batch_size: PositiveInt = 64
    max_src_len: PositiveInt = 1024
    workers: PositiveInt | None = None

    def with_overrides(self, **changes: Any) -> Decode:
        """These settings with `changes` applied (None values ignored), validated.

        Raises:
            ConfigError: the result breaks a rule, e.g. nbest > beam.
        """
        values = {**self.model_dump(), **{k: v for k, v in changes.items() if v is not None}}
        try:
            return Decode.model_validate(values)
        except ValidationError as e:
            raise validation_error(e, "decode") from None

    @model_validator(mode="after")
    def _nbest(self) -> Decode:
        if self.nbest > self.beam:
            raise ValueError(f"nbest ({self.nbest}) must be <= beam ({self.beam})")
        return self


class RunBase(Strict):
    """A whole run: what to read, what to build, how to train it and how to decode with it.

    Each family subclasses it with its own `data` and `model` sections, names in `METRICS` the
    validation metrics it measures (what progress bars and sweep tables show, what its
    `early_stopping` may use besides "loss") and in `EARLY_STOPPING` the default of
    `train.early_stopping`.
    """

    METRICS: ClassVar[tuple[Metric, ...]] = ()
    EARLY_STOPPING: ClassVar[str] = "loss"
    task: str | None = None  # names the family when `model.kind` alone does not (attnkit.families.family_for)
    data: Any
    model: Any
    train: Train
    decode: Decode = Decode()

    @model_validator(mode="after")
    def _early_stopping(self) -> RunBase:
        if self.train.early_stopping is None:  # the family's default (the model is frozen: set once, here)
            object.__setattr__(self, "train", self.train.model_copy(update={"early_stopping": self.EARLY_STOPPING}))
        allowed = (*(m.key for m in self.METRICS), "loss")
        if self.train.early_stopping not in allowed:
            raise ValueError(f"train.early_stopping: {self.train.early_stopping} is not measured for a {self.model.kind} model; use {' or '.join(allowed)}")
        return self

    def needs(self) -> tuple[Need, ...]:
        """The optional packages training this run will import (`attnkit.extras`): checked before any work starts.

        A family whose training imports one (captioning's validation scorers) overrides this."""
        return ()
