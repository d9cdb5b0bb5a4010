"""Shared fixtures: tiny untrained run folders on disk, built in well under a second; `tiny_trained_run`,
a shrunk toy-reverse that `attnkit train` trains for 6 updates (its metrics.jsonl for curves); and
`full_disk`, which makes chosen writes fail as on a full (or read-only) disk; `train_to_reverse`, which
teaches a tiny Transformer run to reverse its input in a few seconds; `toy_tour`, the docs tour's scratch
repository with its toy-reverse run trained (250 updates), shared by the tour and the end-to-end tests; and
`block`, which makes chosen packages unimportable for one test, as uninstalled ones look.

Plots, reports and the web app need a run folder (config.yaml, run.json, a checkpoint) but not a
model that translates well; training even a tiny one takes tens of seconds on 2 cores. These runs
hold seeded random weights over the toy vocabulary t0..t9 (word tokenizer); the sentence
classifier has the labels neg and pos.
"""

from __future__ import annotations

import os

# OpenMP's idle threads sleep, as under the attnkit command (attnkit.openmp): the tests call the CLI in this process,
# and threads that spin on a busy machine slow training many times over. Set before torch is first imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import errno
import gzip
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from safetensors import SafetensorError

from attnkit.artifacts.checkpoint import save_checkpoint
from attnkit.artifacts.runs import load_run, write_run
from attnkit.data.batching import collate
from attnkit.data.tokenizers import WordTokenizer
from attnkit.data.vocab import Vocabulary
from attnkit.families import family_of, validate_run
from attnkit.families.classification.codec import SentenceVocabs
from attnkit.families.classification.data import LabelMap
from attnkit.families.translation.codec import Vocabs
from attnkit.families.translation.export.ctranslate2_model import choose_gemm_backend

# CTranslate2 reads CT2_USE_MKL once, when it is imported: attnkit's choice (MKL where oneDNN's int8 would
# saturate) is made here, before any test module can import ctranslate2, so that the int8 tests meet the same
# backend whatever order they run in (test_int8_isa.py imports it first on purpose, in a child process).
choose_gemm_backend()

# The shared data folder beside the checkout (CI lays a copy of shared/ there too).
MULTI30K = Path(os.environ.get("ATTNKIT_MULTI30K", Path(__file__).resolve().parents[2] / "shared/data/multi30k"))


# `make test` runs pytest on 2 pytest-xdist workers with `--dist loadscope`: a test module runs whole on one worker, so
# that its module-scoped fixtures (a toy-reverse training, the deployment runs) are built once. Modules that share an
# expensive session fixture are one scope here, so that one worker builds it (docs/conventions.md, Tests).
SHARED_SCOPES = {
    "tests/families/captioning/test_shapes.py": "shapes_run",  # the captioner trained on shapes (captioning/conftest.py)
    "tests/families/captioning/test_caption_api.py": "shapes_run",
    "tests/docs/test_tour.py": "toy_tour",  # the tour's toy-reverse training (`toy_tour` below)
    "tests/e2e/test_toy_reverse.py": "toy_tour",
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return SHARED_SCOPES.get(module, module)

    return ModuleScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker, the modules that hold a slow test first (each module's tests stay together, in order), so
    that the long ones start early and the workers end together; a serial run keeps the usual order."""
    if not hasattr(config, "workerinput"):
        return
    slow = {item.nodeid.split("::", 1)[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in slow)


@pytest.fixture(autouse=True)
def _torch_threads_as_they_were():
    """Every test leaves torch's thread count as it found it: results of later tests depend on it (summation
    order), e.g. toy-reverse's exact match on an AMD EPYC with AVX-512 is 100% with 2 threads and 38% with 1."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def multi30k() -> Path:
    """The staged Multi30k folder (shared/data/README.md, section 1); skip if it is not here."""
    if not MULTI30K.is_dir():
        pytest.skip(f"{MULTI30K} not available")
    return MULTI30K


TINY = {
    "data": {"corpus": "synthetic", "tokenizer": "word", "joint": True},
    "train": {"max_steps": 1},
    "decode": {"beam": 3, "alpha": 0.6, "max_len_a": 1.0, "max_len_b": 3},
}
TINY_TRANSFORMER = {"kind": "transformer", "layers": 2, "d_model": 32, "n_heads": 2, "d_ff": 64, "dropout": 0.0}
TINY_RNN = {"kind": "rnn", "attention": "bahdanau", "embed_dim": 16, "hidden": 32, "dropout": 0.0}
TINY_SASE = {"kind": "sase", "embed_dim": 16, "u": 16, "d_a": 16, "r": 2, "mlp_hidden": 16, "dropout": 0.0}
# A classifier's config names its (never read) training files; labels neg/pos.
CLASSIFY = {"data": {"corpus": "labelled", "train": "train.tsv", "valid": "valid.tsv"}, "train": {"max_steps": 1, "early_stopping": "accuracy"}}


def make_tiny_run(folder: Path, model: dict, seed: int = 0) -> Path:
    """Write a run folder with one checkpoint of a seeded, untrained `model` config."""
    vocab, tokenizer = Vocabulary([f"t{i}" for i in range(10)]), WordTokenizer()
    family = family_of(model["kind"])
    if model["kind"] == "sase":
        run, vocabs = validate_run({**CLASSIFY, "model": dict(model)}, "tiny run"), SentenceVocabs(vocab, LabelMap(["neg", "pos"]))
    else:
        run, vocabs = validate_run({**TINY, "model": dict(model)}, "tiny run"), Vocabs(tokenizer, tokenizer, vocab, vocab)
    write_run(folder, run, family.vocabs_to_json(vocabs, folder))
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        save_checkpoint(folder, 1, family.build(run, vocabs), state={"step": 1})
    return folder


@pytest.fixture(scope="session")
def tiny_transformer_maker():
    """`make(folder, **changes)`: a tiny Transformer run folder with `changes` to its model section (e.g. norm="pre")."""
    return lambda folder, **changes: make_tiny_run(folder, {**TINY_TRANSFORMER, **changes})


@pytest.fixture(scope="session")
def tiny_transformer_run(tmp_path_factory) -> Path:
    return make_tiny_run(tmp_path_factory.mktemp("runs") / "tiny-transformer", TINY_TRANSFORMER)


@pytest.fixture(scope="session")
def tiny_rnn_run(tmp_path_factory) -> Path:
    return make_tiny_run(tmp_path_factory.mktemp("runs") / "tiny-rnn", TINY_RNN)


@pytest.fixture(scope="session")
def tiny_sase_maker():
    """`make(folder, **changes)`: a tiny sentence classifier run folder with `changes` to its model section (e.g. r=1)."""
    return lambda folder, **changes: make_tiny_run(folder, {**TINY_SASE, **changes})


@pytest.fixture(scope="session")
def tiny_sase_run(tmp_path_factory) -> Path:
    return make_tiny_run(tmp_path_factory.mktemp("runs") / "tiny-sase", TINY_SASE)


# toy-reverse shrunk to train in seconds: a train line every update, a valid line (loss, BLEU) every 3.
TINY_TRAINING = {"train.max_steps": 6, "train.eval_every": 3, "train.log_every": 1, "train.max_tokens": 128, "model.d_model": 32,
                 "model.d_ff": 64, "model.n_heads": 2, "data.synthetic.train_size": 200, "data.synthetic.valid_size": 8}  # fmt: skip


@pytest.fixture(scope="session")
def tiny_trained_run(tmp_path_factory) -> Path:
    """A run folder that `attnkit train` wrote (toy-reverse, `TINY_TRAINING`): a real metrics.jsonl with 6
    train lines and 2 valid lines. Tests that write into a run folder copy it first."""
    from attnkit.cli import main

    out = tmp_path_factory.mktemp("trained") / "toy"
    assert main(["train", "toy-reverse", "--out", str(out), *(a for k, v in TINY_TRAINING.items() for a in ("--set", f"{k}={v}"))]) == 0
    return out


@dataclass(frozen=True)
class ToyTour:
    repo: Path  # the tour's scratch repository (benchmarks/tour.py's `scratch`)
    line: str  # page 8's training command, as the page shows it
    command: str  # as the tour test runs it (its budget appended)
    result: object  # what running it gave (benchmarks/tour.py's `Result`)
    run: Path  # the run folder it trained


@pytest.fixture(scope="session")
def toy_tour(tmp_path_factory) -> ToyTour:
    """The docs tour's scratch repository with page 8's `attnkit train toy-reverse` already run in it, as the tour runs
    it (at its `(tour test: ...)` budget, 250 updates, one thread): tests/docs/test_tour.py runs the pages there, and
    tests/e2e/test_toy_reverse.py takes the run as its trained toy-reverse. One training for both (SHARED_SCOPES puts
    the two modules on one worker). Tests that write into the run folder copy it first."""
    from benchmark_scripts import BENCHMARKS

    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))  # as tests/docs/test_tour.py imports it: one `tour` module, one `Result`
    import tour

    repo = tour.scratch(tmp_path_factory.mktemp("tour"))
    [command] = [c for c in tour.commands(tour.TOUR / "8-explanation.md") if c.name == "attnkit train toy-reverse"]
    result = tour.run(command.run, repo, timeout=600)
    assert result.rc == 0, f"{command.run}: exit status {result.rc}\n{result.out[-3000:]}"
    return ToyTour(repo, command.line, command.run, result, repo / re.search(r"--out (\S+)", command.run).group(1))


def reversals(rng: random.Random, n: int) -> list[tuple[list[int], list[int]]]:
    """Sequences of 2-6 of the toy ids 4..13 (t0..t9) and their reversals."""
    pairs = []
    for _ in range(n):
        ids = [rng.randrange(4, 14) for _ in range(rng.randint(2, 6))]
        pairs.append((ids, ids[::-1]))
    return pairs


def train_reversal(folder: Path, steps: int = 150) -> Path:
    """Teach a tiny Transformer run's model to reverse (a few seconds, on 1 thread), so that its searches end
    with EOS as a trained model's do; its checkpoint is overwritten."""
    loaded = load_run(folder, family_of("transformer"))
    model = loaded.model.train()
    examples = reversals(random.Random(0), 2000)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            for step in range(steps):
                batch = collate(examples, range(step * 13 % 1900, step * 13 % 1900 + 64))
                logits = model(batch.src, batch.src_keep, batch.tgt_in)  # (B, T, V)
                loss = F.cross_entropy(logits[batch.tgt_keep], batch.tgt_out[batch.tgt_keep])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    finally:
        torch.set_num_threads(threads)
    save_checkpoint(folder, 1, model.eval(), state={"step": 1})
    return folder


@pytest.fixture(scope="session")
def train_to_reverse():
    """`train(folder, steps=150)`: teach the tiny Transformer run in `folder` to reverse (`train_reversal`)."""
    return train_reversal


class FullDisk:
    """Make the writes to files whose path contains `fragment` fail with `code` (ENOSPC: "No space
    left on device"), after `skip` such writes went through, at one of three places:
    - `at_fsync`: `os.fsync` (every atomic write and checkpoint file is fsynced);
    - `at_write`: `os.write` (appends): half the bytes are written, then the next write fails;
    - `at_safetensors`: safetensors' `save_file`/`save_model` in checkpoints: a partial file, then the
      `SafetensorError` safetensors raises on a full disk.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.failed: list[str] = []  # the paths whose write failed

    def _due(self, path: str, fragment: str, counter: list[int], skip: int) -> bool:
        if fragment not in path:
            return False
        counter[0] += 1
        return counter[0] > skip

    def at_fsync(self, fragment: str, skip: int = 0, code: int = errno.ENOSPC) -> None:
        real, seen = os.fsync, [0]

        def fsync(fd: int) -> None:
            path = os.readlink(f"/proc/self/fd/{fd}")
            if self._due(path, fragment, seen, skip):
                self.failed.append(path)
                raise OSError(code, os.strerror(code))
            real(fd)

        self.monkeypatch.setattr(os, "fsync", fsync)

    def at_write(self, fragment: str, skip: int = 0, code: int = errno.ENOSPC) -> None:
        real, seen = os.write, [0]

        def write(fd: int, data: bytes) -> int:
            path = os.readlink(f"/proc/self/fd/{fd}")
            if not self._due(path, fragment, seen, skip):
                return real(fd, data)
            if path not in self.failed:  # the disk fills in the middle of this write
                self.failed.append(path)
                return real(fd, data[: max(len(data) // 2, 1)])
            raise OSError(code, os.strerror(code))

        self.monkeypatch.setattr(os, "write", write)

    def at_safetensors(self, name: str, skip: int = 0) -> None:
        from attnkit.artifacts import checkpoint

        seen = [0]
        for function in ("save_file", "save_model"):
            real = getattr(checkpoint, function)

            def save(obj, filename, *args, real=real, **kwargs):
                if not self._due(filename, name, seen, skip):
                    return real(obj, filename, *args, **kwargs)
                self.failed.append(filename)
                Path(filename).write_bytes(b"partial")
                raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

            self.monkeypatch.setattr(checkpoint, function, save)


@pytest.fixture
def full_disk(monkeypatch) -> FullDisk:
    return FullDisk(monkeypatch)


@pytest.fixture
def cli_error(capsys):
    """`cli_error(argv)`: run `attnkit argv`, assert it fails with exit status 2 and one `attnkit: error:` line, and return it."""

    def run(argv: list[str]) -> str:
        from attnkit.cli import main

        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("attnkit: error: "), err
        return err

    return run


@pytest.fixture
def write_file():
    """`write_file(folder, name, data)`: write `data` to folder/name (text as UTF-8, bytes as they are); its path as a string."""

    def write(folder: Path, name: str, data: str | bytes) -> str:
        (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())
        return str(folder / name)

    return write


@pytest.fixture(scope="session")
def m30k_slice(multi30k: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The staged Multi30k copy's first 2,000 train and 200 val lines of en/de, as .gz files (fast SentencePiece training)."""
    out = tmp_path_factory.mktemp("m30k_slice")
    paths = {}
    for split, n in (("train", 2000), ("val", 200)):
        for lang in ("en", "de"):
            with gzip.open(multi30k / f"{split}.{lang}.gz", "rb") as src:
                lines = [next(src) for _ in range(n)]
            paths[f"{split}.{lang}"] = out / f"{split}.{lang}.gz"
            with gzip.open(paths[f"{split}.{lang}"], "wb") as dst:
                dst.writelines(lines)
    return paths


@pytest.fixture
def block(monkeypatch):
    """`block(name, ...)`: make these packages (and their loaded submodules) unimportable for one test."""

    def block(*names: str) -> None:
        for name in names:
            for key in [k for k in sys.modules if k.startswith(name + ".")]:
                monkeypatch.setitem(sys.modules, key, None)
            monkeypatch.setitem(sys.modules, name, None)

    return block
