"""`--engine ctranslate2`: a translation run decoded by CTranslate2, exported once and kept beside the run.

`attach(loaded, dtype)` (the family's `Engine`, for `translate`, `evaluate` and `serve`) exports the
run with attnkit's CTranslate2 exporter (`export/ctranslate2_model`, docs/deployment.md) into
`RUN/engines/ctranslate2-<checkpoint>/`, unless that folder already holds an export of the same
thing: its key file (`KEY_FILE`) holds the sha256 of the checkpoint's weights, config.yaml, run.json
and the attnkit and ctranslate2 versions, and any change rebuilds it, in a temporary folder renamed
into place (`io.atomic_dir`), so that no reader ever sees half an export. The export is float32;
`--dtype` picks CTranslate2's compute type as it loads (fp32: float32, int8: int8, bf16: bfloat16
where CTranslate2 has it on this CPU).

Decoding searches with CTranslate2 as attnkit searches (`ctranslate2_model.search`: the same
step limits, beam, alpha and n-best order) and turns its hypotheses into attnkit's `Hypothesis`.
CTranslate2 returns no attention that attnkit's explorer could use, so attention comes from one
teacher-forced pass of attnkit's own model (float32) over the engine's outputs (`teacher_forced`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from attnkit.artifacts.prepared import data_key
from attnkit.artifacts.runs import LoadedRun
from attnkit.config.schema import Decode
from attnkit.data.vocab import EOS
from attnkit.decode.hypothesis import Hypothesis, length_penalty
from attnkit.errors import AttnkitError
from attnkit.families.translation.codec import Vocabs, encode_sources
from attnkit.families.translation.export import ctranslate2_model
from attnkit.families.translation.export.bundle import Bundle, read_bundle, write_bundle
from attnkit.families.translation.teacher_forced import step_attention, teacher_forced
from attnkit.families.translation.translate import Translation, to_translation
from attnkit.version import __version__

KEY_FILE = "attnkit-engine.key"
COMPUTE_TYPES = {"fp32": "float32", "int8": "int8", "bf16": "bfloat16"}  # --dtype -> CTranslate2's compute type
log = logging.getLogger("attnkit")


def export_folder(loaded: LoadedRun) -> Path:
    """Where the run's CTranslate2 export of its checkpoint is kept."""
    return loaded.folder / "engines" / f"ctranslate2-{loaded.checkpoint.name}"


def export_key(loaded: LoadedRun, ct2_version: str) -> str:
    """What the export is made from: the checkpoint's weights, config.yaml, run.json and the versions that convert them."""
    files = (loaded.checkpoint / "model.safetensors", loaded.folder / "config.yaml", loaded.folder / "run.json")
    return data_key({"engine": "ctranslate2", "attnkit": __version__, "ctranslate2": ct2_version}, files)


def cached_export(loaded: LoadedRun) -> Path:
    """The run's CTranslate2 export (float32): reused if its key is the run's, else written (again)."""
    ct2 = ctranslate2_model.ctranslate2()
    folder, key = export_folder(loaded), export_key(loaded, ct2.__version__)
    if (folder / KEY_FILE).is_file() and (folder / KEY_FILE).read_text(encoding="utf-8") == key:
        log.info("CTranslate2: the export in %s is up to date", folder)
        return folder
    write = ctranslate2_model.write(loaded.model, loaded.vocabs, loaded.run.decode, None)

    def into(tmp: Path) -> dict[str, Any]:
        engine = write(tmp)
        (tmp / KEY_FILE).write_text(key, encoding="utf-8")  # renamed into place with the export, never before it
        return engine

    folder.parent.mkdir(exist_ok=True)
    write_bundle(folder, "ctranslate2", loaded, into)
    log.info("CTranslate2: exported %s (%s) to %s", loaded.folder, loaded.checkpoint.name, folder)
    return folder


def compute_type(dtype: str, supported: set[str]) -> str:
    """CTranslate2's compute type for `--dtype`, if CTranslate2 has it on this CPU (`supported`), else one error line."""
    wanted = COMPUTE_TYPES[dtype]
    if wanted not in supported:
        raise AttnkitError(f"--dtype {dtype}: CTranslate2 has no {wanted} on this CPU (it has {', '.join(sorted(supported))}); use --dtype fp32 or int8")
    return wanted


@dataclass(frozen=True)
class Ctranslate2Engine:
    """A run's CTranslate2 export, loaded; `translate` is `attnkit.families.translation.translate.translate`'s twin."""

    name: ClassVar[str] = "ctranslate2"
    bundle: Bundle
    translator: Any  # ctranslate2.Translator
    compute_type: str

    @torch.inference_mode()
    def translate(
        self,
        model: nn.Module,
        vocabs: Vocabs,
        lines: Sequence[str],
        decode: Decode,
        *,
        return_attention: bool = False,
        progress: Callable[[int], None] | None = None,
        source: str = "input",
    ) -> list[list[Translation]]:
        """Translate `lines` with CTranslate2: each line's n-best list, in input order; with `return_attention`,
        each hypothesis' attention from one teacher-forced pass of `model` (attnkit's) over it.

        Raises:
            DataError: A line has more than `decode.max_src_len` pieces (`source` names the input).
        """
        src_pieces, src_ids = encode_sources(vocabs, lines, decode.max_src_len, source)
        names = vocabs.src_vocab.to_json()["tokens"]
        ranked = ctranslate2_model.search(self.translator, [[names[i] for i in ids] for ids in src_ids], decode, progress)
        hyps = [[self._hypothesis(pieces, log_prob, decode) for pieces, log_prob in r[: decode.nbest]] for r in ranked]
        if return_attention:
            flat = [(ids, h) for ids, nbest in zip(src_ids, hyps) for h in nbest]
            maps = iter(teacher_forced(model, [(ids, h.tokens, h.finished) for ids, h in flat], decode.batch_size))
            hyps = [[dataclasses.replace(h, attention=step_attention(next(maps))) for h in nbest] for nbest in hyps]
        return [[to_translation(h, pieces, vocabs) for h in nbest] for nbest, pieces in zip(hyps, src_pieces)]

    def _hypothesis(self, pieces: list[str], log_prob: float, decode: Decode) -> Hypothesis:
        """attnkit's `Hypothesis` of CTranslate2's output pieces (`</s>` last if finished), scored as attnkit's search scores."""
        ids = [self.bundle.target_ids[p] for p in pieces]
        finished = bool(ids) and ids[-1] == EOS
        tokens = ids[:-1] if finished else ids
        alpha = decode.alpha if decode.beam > 1 else 0.0  # greedy search ranks nothing: its score is log P
        return Hypothesis(tokens=tokens, score=log_prob / length_penalty(len(ids), alpha), log_prob=log_prob, finished=finished)


def attach(loaded: LoadedRun, dtype: str) -> LoadedRun:
    """The run decoding with CTranslate2 in `dtype` (fp32, int8, bf16), from its cached export (`cached_export`).

    CTranslate2 searches as many batches at once as torch has intra-op threads, one thread each, as
    attnkit's own `translate` does with its worker threads (on 2 cores, greedy: 1.28x the sentences/s of
    one batch at a time on both threads; docs/decoding.md).

    Raises:
        AttnkitError: CTranslate2 has no such precision on this CPU, or cannot run the model (only Transformers).
    """
    ct2 = ctranslate2_model.ctranslate2()
    kind = compute_type(dtype, set(ct2.get_supported_compute_types("cpu")))
    ctranslate2_model.warn_int8(kind, "--dtype")
    bundle = read_bundle(cached_export(loaded), "ctranslate2")
    translator = ctranslate2_model.load(bundle, kind, threads=1, batches=torch.get_num_threads())
    return dataclasses.replace(loaded, engine=Ctranslate2Engine(bundle, translator, kind))
