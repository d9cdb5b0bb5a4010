"""What a model family gives the rest of attnkit: a `Family`, and for training a `Task`.

A family package (`attnkit/families/<name>/`) holds everything that is specific to one kind of
model: its config sections, its codec (raw input <-> ids <-> batch), model construction, loss and
validation metrics, inference, its attention maps in the common format, what it stores in
`run.json`, its request/response schema for `serve`, the CLI verbs and `attnkit data` tools it
adds and its presets. The trainer, run
folders, plots, report, server and CLI take a `Family` from the one table in `attnkit.families`
and never ask which family it is. docs/architecture.md walks through adding one.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any, Protocol

import torch
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool
from torch import nn

from attnkit import extras
from attnkit.artifacts.runs import LoadedRun, load_run
from attnkit.config.args import DTYPES
from attnkit.config.own_data import OwnData
from attnkit.config.schema import Decode, RunBase
from attnkit.errors import AttnkitError
from attnkit.viz.attention_view import AttentionKind, ExplainedInput

ATTNKIT = "attnkit"  # `--engine attnkit`: attnkit's own searches (the default)


class Task(Protocol):
    """A family's training data and objective, for the shared loop (`attnkit.train.loop`).

    The task holds the prepared data (read, checked and encoded once, `attnkit.artifacts.prepared`)
    and the vocabularies stored in run.json; it builds the model, gives the lengths the batcher
    groups by, pads a batch, sums a batch's loss over its `size` items (target tokens, or
    examples) and computes validation metrics. The loop does the rest the same way for every task.
    """

    unit: str  # what `size` counts: "tokens" or "examples" (the key of a step's count in metrics.jsonl)
    vocabs: Any  # compared with == against the run's on --resume
    train_lengths: tuple[list[int], list[int]]  # per training example, for `TokenBatcher`

    def build_model(self) -> nn.Module: ...

    def collate(self, index: list[int]) -> Any:
        """The training examples `index` as a batch with a `.to(device)` method."""

    def size(self, batch: Any) -> int:
        """How many items (tokens or examples) `loss` sums over."""

    def loss(self, model: nn.Module, batch: Any, step: int) -> torch.Tensor:
        """The batch's loss summed over its `size` items, at 1-based update `step`."""

    def validate(self, model: nn.Module, device: torch.device) -> dict[str, float]:
        """Validation metrics (always "loss"); the model is already in eval mode. The loop over the
        held-out split is the shared one (`attnkit.families.validation.validation_sums`)."""


# A text with a character that is not white space (`str.isspace`), which `serve` asks of every text (an
# empty text is refused with one line, 422). The schema says so in regex syntax that JSON Schema (ECMA),
# Python's `re` and Rust's regex read alike: no `\s`, whose characters differ between them.
NOT_BLANK = r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
Text = Annotated[str, Field(json_schema_extra={"pattern": NOT_BLANK})]  # documented here, checked by serve


def _not_a_boolean(value: Any) -> Any:
    if isinstance(value, bool):  # JSON's true and false are no numbers; pydantic would read them as 1 and 0
        raise ValueError("Input should be a number, not true or false")
    return value


# A request's optional settings (the check around the union: inside it, pydantic would not write `Field(ge=...)` as a minimum).
OptionalInt = Annotated[int | None, BeforeValidator(_not_a_boolean)]  # 10.0 is an integer too, as JSON Schema says
OptionalFloat = Annotated[float | None, BeforeValidator(_not_a_boolean)]


def texts_field(description: str) -> Any:
    """The `texts` of a request: at least one, none blank (serve checks both, and its limits)."""
    return Field(description=description, json_schema_extra={"minItems": 1})


class ApiRequest(BaseModel):
    """What every `POST /v1/...` body has; a family's request adds its own settings."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str | None = Field(None, description="a loaded model's name (GET /v1/models); default: the first of this task")
    texts: list[Text] = texts_field("the inputs, one sentence or document each")
    attention: StrictBool = Field(False, description="also return attention matrices")


class AttentionMap(BaseModel):
    """One kind of attention map in a `POST /v1/...` answer (a record's `maps` entry, weights as floats)."""

    rows: list[str] = Field(description="query tokens")
    cols: list[str] = Field(description="key tokens")
    layers: list[list[list[list[float]]]] = Field(description="weights [layer][head][row][col]")


@dataclass(frozen=True)
class Endpoint:
    """One `POST` route of `attnkit serve`: its bodies and how a dynamic batch of texts is answered.

    `key(loaded, body, batch_size)` gives what requests must share to be batched together (the
    decoding settings, say); `run(loaded, key, texts, batch_size)` answers one batch, a JSON
    record per text.
    """

    path: str
    request: type[BaseModel]
    response: type[BaseModel]
    key: Callable[[Any, Any, int], Hashable]
    run: Callable[[Any, Hashable, list[str], int], list[dict]]


@dataclass(frozen=True)
class Page:
    """One page of `attnkit serve`: the core's template (head, the navigation built from every
    family's pages, the shared scripts) around the family's `view`, an HTML fragment (its heading
    and form; the results go to `<main id="results">`), with its `scripts` and `styles` (assets)."""

    title: str  # the page's link in the navigation, and its <title>
    view: Traversable
    scripts: tuple[str, ...] = ()
    styles: tuple[str, ...] = ()


@dataclass(frozen=True)
class Api:
    """A family's part of `attnkit serve` and `attnkit report`: its pages (path -> `Page`), assets
    (name -> file, served under /static/) and routes, and `renderer`, the asset (a script) that sets
    `AttnView.extend(card, record)` to add what its records carry besides the common card of
    viz/templates/attention.js (source, output, note, n-best list, attention maps): a tree, an image;
    and `renderer_style`, the asset (a stylesheet) with the styles of what it draws: the core's styles
    name no family."""

    pages: dict[str, Page] = field(default_factory=dict)
    assets: dict[str, Traversable] = field(default_factory=dict)
    endpoints: tuple[Endpoint, ...] = ()
    renderer: str | None = None
    renderer_style: str | None = None  # the asset (a stylesheet) for what `renderer` draws, after viz/templates/attention.css

    def renderer_script(self) -> str:
        """The text of the renderer script ("" without one)."""
        return self.assets[self.renderer].read_text(encoding="utf-8") if self.renderer else ""

    def renderer_css(self) -> str:
        """The text of the renderer's stylesheet ("" without one)."""
        return self.assets[self.renderer_style].read_text(encoding="utf-8") if self.renderer_style else ""


@dataclass(frozen=True)
class ExploreOptions:
    """What `plot`, `report` and the server ask of a family's attention view."""

    decode: Decode
    words: bool = False  # merge subword pieces into words
    target: str | None = None  # a given output to show instead of the search's (forced decoding; `Family.forced_decoding`)


@dataclass(frozen=True)
class Engine:
    """A decoding engine a family's runs can use instead of attnkit's own search (`--engine NAME`)."""

    modules: tuple[str, ...]  # the optional packages it needs (import names), checked before any work
    # (a run loaded in float32, --dtype fp32|bf16|int8) -> the run with `LoadedRun.engine` set, decoding in that precision
    attach: Callable[[LoadedRun, str], LoadedRun]


@dataclass(frozen=True)
class Starter:
    """How `attnkit init FAMILY` writes a commented config for one's own files (docs/your-data.md).

    `add_arguments` adds the family's options to its `init` parser (the core adds `--train`,
    `--valid` and `--out`); `config(args)` reads what it needs of the files (headers, line counts),
    raising a `DataError` naming the file and line for a bad one, and returns the commented YAML
    with the own-data rule it applied (`attnkit.config.own_data`: model size, batch, evaluation,
    budget, patience from the data's size), which the core prints and validates against
    `Family.run_schema` before writing it. `files` says what `--train` and `--valid` take;
    `example` is one command line for the help.
    """

    add_arguments: Callable[[argparse.ArgumentParser], None]
    config: Callable[[argparse.Namespace], tuple[str, OwnData]]
    files: str
    example: str


class WritePage(Protocol):
    """The core's report page of a run's lines, as `attnkit report` writes it (the records of the one road,
    `sources.record`, drawn by the run's renderer after its curves), handed to the family's verbs by
    `Family.add_commands`: a family's verb that writes a page (`explain --out X.html`) calls it, since a
    family may not import `attnkit.sources` and never writes a record itself."""

    def __call__(self, run: str, lines: Sequence[str], out: str | Path, *, checkpoint: str = "best", title: str | None = None) -> Path: ...


@dataclass(frozen=True)
class Family:
    """Everything the core needs from one model family (see the module docstring).

    A family's `__init__.py` builds its one `Family` from its modules' functions; nothing here is
    subclassed.
    """

    name: str  # what it does, as `GET /v1/models` and error messages name it
    kinds: tuple[str, ...]  # the `model.kind` values it builds (empty: configs name it with `task:`)
    run_schema: type[RunBase]
    api: Api
    task: Callable[[Any, Path, str | None], Task]  # (run, run_dir, data_dir): prepare the data (or reuse it)
    vocabs_to_json: Callable[[Any, Path], dict]  # what run.json stores (tokenizer files copied into the folder)
    vocabs_from_json: Callable[[dict, Path], Any]  # its inverse (KeyError/TypeError/ValueError when malformed)
    build: Callable[[Any, Any], nn.Module]  # (run, vocabs) -> the model
    commands: Callable[[argparse._SubParsersAction, Family, WritePage], None]  # add the family's CLI verbs
    evaluate_options: Callable[[argparse.ArgumentParser], list[str]]  # add `evaluate` options (add_once); their dests
    evaluate: Callable[[argparse.Namespace, Callable[[], Any]], dict]  # check the options, then load() and score
    # (loaded, lines, options) -> per line its `ExplainedInput` (viz.attention_view): the family's part of the one record
    # (output, n-best, its fields and views), which a run's `Source` completes (`sources.run`) for every output
    explain: Callable[[Any, Sequence[str], ExploreOptions], list[ExplainedInput]]
    info: Callable[[Any], dict]  # extra fields of `GET /v1/models`
    # (run, run_dir, data_dir, vocabs): the task encoding the data with another run's vocabularies
    # (`attnkit train --init RUN`); None: the family's runs cannot start from another run's weights
    init_task: Callable[[Any, Path, str | None, Any], Task] | None = None
    data_commands: Callable[[argparse._SubParsersAction, Callable[[str], Any]], None] = lambda sub, load_config: None  # `attnkit data` tools
    # (loaded, line, output[, target=]) -> (f: input embeddings (N, T, D) -> scores (N,), the line's embeddings (T, D), what
    # f scores), for `attnkit attention RUN TEXT --attribute`; None: the family's runs are not attributed. `target` (only
    # for a family with `forced_decoding`): the given output, scored in place of the search's
    attribution: Callable[[Any, str, int | None], tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor, str]] | None = None
    engines: Mapping[str, Engine] = field(default_factory=dict)  # `--engine NAME` besides attnkit's own search
    # (loaded, lines, where) -> (source ids, target ids or None: the run's own output) of each `source<TAB>target`
    # line, no EOS, for `attnkit heads --importance`; None: the family's runs have no teacher-forced pairs
    pairs: Callable[[Any, Sequence[str], str], list[tuple[list[int], list[int] | None]]] | None = None
    starter: Starter | None = None  # `attnkit init FAMILY`: a commented config for one's own files
    presets: Path | None = None  # its built-in configs (`attnkit train NAME`): NAME.yaml, and sweeps/NAME.yaml
    attention_kinds: tuple[AttentionKind, ...] = ()  # the kinds of its views, as its pages and plots name them
    forced_decoding: bool = False  # its runs take `--target`, a given output (`ExploreOptions.target`) in place of the search's

    def add_commands(self, sub: argparse._SubParsersAction, write_page: WritePage) -> None:
        self.commands(sub, self, write_page)

    def add_evaluate_arguments(self, parser: argparse.ArgumentParser) -> list[str]:
        return self.evaluate_options(parser)


def engine_names(families: Iterable[Family]) -> list[str]:
    """The choices of `--engine`: attnkit, then every engine a family offers."""
    return [ATTNKIT, *sorted({name for family in families for name in family.engines})]


def check_engine(engine: str, families: Iterable[Family], what: str) -> None:
    """Check that `engine`'s optional packages are installed (`MissingExtra`, one line), before any work."""
    for family in families:
        if engine in family.engines:
            extras.require(f"{what} --engine {engine}", *family.engines[engine].modules)
            return


def load_engine_run(run_dir: str | Path, family: Family, which: str, dtype: str, engine: str = ATTNKIT) -> LoadedRun:
    """`load_run` in `dtype` (fp32, bf16, int8), or, with another engine than attnkit's, the model in float32 (what
    the engine is made from and what attention maps come from) with the engine attached, decoding in `dtype`.

    Raises:
        AttnkitError: `family` offers no such engine (before anything is loaded).
    """
    if engine == ATTNKIT:
        return load_run(run_dir, family, which, dtype=DTYPES[dtype])
    if engine not in family.engines:
        raise AttnkitError(f"{run_dir}: a {family.name} run decodes with attnkit only, not --engine {engine}")
    return family.engines[engine].attach(load_run(run_dir, family, which, pack=False), dtype)


def add_once(parser: argparse.ArgumentParser, *flags: str, **kwargs: Any) -> None:
    """`parser.add_argument` unless another family already added the option (shared verbs)."""
    if not any(flag in parser._option_string_actions for flag in flags):
        parser.add_argument(*flags, **kwargs)
