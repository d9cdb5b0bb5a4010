"""Image decoding: every mode to RGB, EXIF orientation, resizing, normalisation, and one DataError
naming the file (and zip member) for each kind of bad input. All images are made here with Pillow."""

from __future__ import annotations

import io
import pickle
import warnings
import zipfile

import numpy as np
import pytest
import torch
from PIL import Image

from attnkit.errors import DataError
from attnkit.families.captioning.images import (
    ImageSource,
    decode_image,
    load_batch,
    load_image,
    open_image,
    resize_for_encoder,
    to_tensor,
)


def encode(image: Image.Image, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


def noise_jpeg(width: int = 64, height: int = 48) -> bytes:
    pixels = np.random.default_rng(0).integers(0, 256, (height, width, 3), dtype=np.uint8)
    return encode(Image.fromarray(pixels), "JPEG", quality=90)


def _palette_with_transparency() -> bytes:
    image = Image.new("P", (2, 1))
    image.putpalette([10, 20, 30, 200, 100, 50] + [0] * 762)
    image.putpixel((0, 0), 0)
    image.putpixel((1, 0), 1)
    return encode(image, "PNG", transparency=0)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (encode(Image.new("L", (2, 1), 100), "PNG"), [(100, 100, 100)] * 2),
        (encode(Image.new("1", (2, 1), 1), "PNG"), [(255, 255, 255)] * 2),
        # 16-bit grey is scaled (x * 255 / 65535), not clipped: 65535 -> 255, 32896 -> 128
        (encode(Image.fromarray(np.array([[65535, 32896]], dtype=np.uint16)), "PNG"), [(255, 255, 255), (128, 128, 128)]),
        # palette index 0 is transparent -> white background; index 1 is its palette colour
        (_palette_with_transparency(), [(255, 255, 255), (200, 100, 50)]),
        (encode(Image.fromarray(np.array([[[10, 20, 30, 0], [10, 20, 30, 255]]], dtype=np.uint8), "RGBA"), "PNG"), [(255, 255, 255), (10, 20, 30)]),
        (encode(Image.fromarray(np.array([[[50, 0], [50, 255]]], dtype=np.uint8), "LA"), "PNG"), [(255, 255, 255), (50, 50, 50)]),
        # CMYK (0, 0, 0, 0) is white, (0, 255, 255, 0) is red; TIFF keeps it lossless
        (encode(Image.fromarray(np.array([[[0, 0, 0, 0], [0, 255, 255, 0]]], dtype=np.uint8), "CMYK"), "TIFF"), [(255, 255, 255), (255, 0, 0)]),
        (encode(Image.new("RGB", (2, 1), (1, 2, 3)), "BMP"), [(1, 2, 3)] * 2),
    ],
    ids=["L", "1", "I;16", "P+transparency", "RGBA", "LA", "CMYK", "RGB"],
)
def test_every_mode_becomes_rgb(data, expected):
    image = decode_image(data, "test image")
    assert image.mode == "RGB" and image.size == (2, 1)
    assert [image.getpixel((x, 0)) for x in range(2)] == expected


def test_exif_orientation_is_applied(tmp_path):
    stored = Image.new("RGB", (40, 20), (0, 0, 255))
    stored.paste((255, 0, 0), (0, 0, 20, 20))  # left half red
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation 6: display rotated 90 degrees clockwise
    path = tmp_path / "rotated.jpg"
    path.write_bytes(encode(stored, "JPEG", exif=exif, quality=95))
    upright = open_image(path)
    assert upright.size == (20, 40)  # the stored left half is now on top
    red, blue = np.array(upright.getpixel((10, 5))), np.array(upright.getpixel((10, 35)))
    assert np.abs(red - (255, 0, 0)).max() <= 3 and np.abs(blue - (0, 0, 255)).max() <= 3


def test_squash_and_center_crop():
    pixels = np.random.default_rng(1).integers(0, 256, (512, 256, 3), dtype=np.uint8)  # H 512, W 256
    image = Image.fromarray(pixels)
    assert resize_for_encoder(image, 224, "squash").size == (224, 224)
    # central 224/256 of the shorter side: side int(0.875 * 256) = 224 at left 16, top (512 - 224 + 1) // 2 = 144
    cropped = np.asarray(resize_for_encoder(image, 224, "center_crop"))
    np.testing.assert_array_equal(cropped, pixels[144:368, 16:240])
    flickr = Image.new("RGB", (224, 224))
    assert resize_for_encoder(flickr, 224) is flickr  # Flickr8k's 224 x 224 images are used as they are
    with pytest.raises(ValueError, match="mode must be"):
        resize_for_encoder(image, 224, "stretch")


def test_to_tensor_normalises_with_127_and_128():
    image = Image.fromarray(np.array([[[127, 255, 0]]], dtype=np.uint8))
    tensor = to_tensor(image)
    assert tensor.shape == (3, 1, 1) and tensor.dtype == torch.float32
    torch.testing.assert_close(tensor.flatten(), torch.tensor([0.0, 1.0, -127 / 128]))  # (x - 127) / 128, R first


def test_path_bytes_and_zip_member_agree(tmp_path):
    data = noise_jpeg(300, 200)
    path, archive = tmp_path / "a.jpg", tmp_path / "images.zip"
    path.write_bytes(data)
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("a.jpg", data)
    from_path = load_image(path)
    assert from_path.shape == (3, 224, 224)
    torch.testing.assert_close(load_image(data), from_path, rtol=0, atol=0)
    torch.testing.assert_close(load_image(archive, member="a.jpg"), from_path, rtol=0, atol=0)
    batch = load_batch([path, data], resize="center_crop")
    assert batch.shape == (2, 3, 224, 224)


def test_bad_files_are_one_data_error_naming_the_file(tmp_path):
    text, truncated = tmp_path / "notes.jpg", tmp_path / "cut.jpg"
    text.write_text("this is not an image\n")
    truncated.write_bytes(noise_jpeg()[: len(noise_jpeg()) * 2 // 3])
    with pytest.raises(DataError, match=r"notes\.jpg: not an image"):
        open_image(text)
    with pytest.raises(DataError, match=r"cut\.jpg: broken image data \(.*(?i:truncated)"):
        open_image(truncated)
    with pytest.raises(DataError, match=r"missing\.jpg: no such file"):
        open_image(tmp_path / "missing.jpg")
    with pytest.raises(DataError, match=r": is a directory"):
        open_image(tmp_path)
    with pytest.raises(DataError, match=r"^<bytes>: not an image"):
        open_image(b"\x00\x01")


@pytest.mark.parametrize("side", [40, 60], ids=["over the limit (Pillow warns)", "over twice the limit (Pillow raises)"])
def test_decompression_bomb_is_an_error_not_a_warning(tmp_path, monkeypatch, side):
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)  # 40 x 40 = 1600 > 1000; 60 x 60 = 3600 > 2000
    path = tmp_path / "bomb.png"
    path.write_bytes(encode(Image.new("RGB", (side, side)), "PNG"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning that escaped would fail here
        with pytest.raises(DataError, match=r"bomb\.png: too many pixels, a possible decompression bomb"):
            open_image(path)


def test_zip_members_name_archive_and_member(tmp_path):
    archive = tmp_path / "images.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("good.jpg", noise_jpeg())
        z.writestr("cut.jpg", noise_jpeg()[: len(noise_jpeg()) * 2 // 3])
        z.writestr("readme.txt", "hello")
        z.writestr("__MACOSX/._good.jpg", b"junk")
    with pytest.raises(DataError, match=r"images\.zip, member 'cut\.jpg': broken image data"):
        open_image(archive, member="cut.jpg")
    with pytest.raises(DataError, match=r"images\.zip: no member 'gone\.jpg'"):
        open_image(archive, member="gone.jpg")
    source = ImageSource(archive)
    assert source.names() == ["cut.jpg", "good.jpg"]
    with pytest.raises(DataError, match=r"images\.zip, member 'cut\.jpg': broken image data"):
        source.load(["good.jpg", "cut.jpg"])
    copy = pickle.loads(pickle.dumps(source))  # e.g. for DataLoader workers: reopens the zip
    assert copy.load(["good.jpg"]).shape == (1, 3, 224, 224)
    not_zip = tmp_path / "fake.zip"
    not_zip.write_text("plain text")
    with pytest.raises(DataError, match=r"fake\.zip: not a readable zip file"):
        ImageSource(not_zip)


def test_folder_source(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "b.png").write_bytes(encode(Image.new("L", (10, 10)), "PNG"))
    (tmp_path / "sub" / "a.jpg").write_bytes(noise_jpeg())
    (tmp_path / ".hidden.jpg").write_bytes(noise_jpeg())
    (tmp_path / "captions.txt").write_text("x")
    source = ImageSource(tmp_path)
    assert source.names() == ["b.png", "sub/a.jpg"]
    assert source.load(source.names(), size=32).shape == (2, 3, 32, 32)
    with pytest.raises(DataError, match=r"gone\.jpg: no such file"):
        source.open("gone.jpg")
    with pytest.raises(DataError, match=r"nowhere: no such file or folder"):
        ImageSource(tmp_path / "nowhere")
