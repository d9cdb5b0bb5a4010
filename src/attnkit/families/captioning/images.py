"""Image decoding for the captioner with Pillow (no torchvision): file, bytes or zip member ->
RGB -> encoder size -> normalised float tensor.

- `open_image`: decode, apply the EXIF orientation (``ImageOps.exif_transpose``), convert any mode
  (L, 1, I;16, P, RGBA, LA, CMYK, YCbCr, ...) to RGB. Transparent pixels are composited on white.
- `resize_for_encoder`: ``"squash"`` (default) resizes straight to size x size, as the Flickr8k
  images were prepared (224 x 224 without keeping the aspect ratio, shared/data/README.md): the
  decoder trains on those, so inference images get the same geometry and nothing a caption
  mentions is cropped away. ``"center_crop"`` is the ImageNet evaluation crop of the Lite0 weights
  (TensorFlow ``preprocessing.py``: the central 224/256 of the shorter side, then resize), the same
  geometry as "resize the shorter side to 256, crop 224", for classification. Both bicubic.
- `to_tensor`: ``(3, H, W)`` float32, ``(x - mean) / std`` on the 0-255 scale (Lite0's 127 / 128).
- `ImageSource`: images by name from a folder or a zip (members read in place).

Every failure is one `DataError` naming the file (and zip member): missing file, not an image,
truncated data, an unsupported mode, or more pixels than ``PIL.Image.MAX_IMAGE_PIXELS`` (Pillow's
decompression-bomb warning is turned into this error, never printed).
"""

from __future__ import annotations

import io
import warnings
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from PIL import Image, ImageOps, UnidentifiedImageError
from torch import Tensor

from attnkit.errors import DataError
from attnkit.families.captioning.lite0 import IMAGE_SIZE, MEAN_RGB, STDDEV_RGB

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff")
Resize = Literal["squash", "center_crop"]
CROP_FRACTION = 224 / 256  # TensorFlow EfficientNet eval: image_size / (image_size + 32)
_BACKGROUND = (255, 255, 255)


def open_image(source: str | Path | bytes, *, member: str | None = None, name: str | None = None) -> Image.Image:
    """Decode one image to RGB with its EXIF orientation applied.

    Args:
        source: a file path, the encoded bytes, or (with ``member``) a zip file path.
        member: the zip member to read.
        name: what to call ``bytes`` input in messages (default ``<bytes>``).

    Returns:
        A loaded ``RGB`` image, upright.

    Raises:
        DataError: missing file or member, not an image, truncated, unsupported mode, or too many
            pixels; the message starts with the file (and member).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return decode_image(bytes(source), name or "<bytes>")
    path = Path(source)
    if member is not None:
        return decode_image(_read_member(path, member), f"{path}, member {member!r}")
    return decode_image(_read_file(path), str(path))


def decode_image(data: bytes, where: str) -> Image.Image:
    """Decode encoded image bytes to an upright RGB image; ``where`` names them in errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            image = Image.open(io.BytesIO(data))
            _check_pixels(image, where)
            image.load()
            image = ImageOps.exif_transpose(image)
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as err:
            raise DataError(f"{where}: too many pixels, a possible decompression bomb ({err})") from None
        except UnidentifiedImageError:
            raise DataError(f"{where}: not an image (Pillow cannot identify it)") from None
        except (OSError, SyntaxError, ValueError, EOFError) as err:  # Pillow's decoders use all of these
            raise DataError(f"{where}: broken image data ({err})") from None
    return to_rgb(image, where)


def _check_pixels(image: Image.Image, where: str) -> None:
    """Pillow checks at open, but only warns up to 2x the limit: refuse anything over it."""
    limit = Image.MAX_IMAGE_PIXELS
    if limit is not None and image.width * image.height > limit:
        raise DataError(f"{where}: too many pixels, a possible decompression bomb ({image.width} x {image.height} > PIL.Image.MAX_IMAGE_PIXELS = {limit})")


def to_rgb(image: Image.Image, where: str = "image") -> Image.Image:
    """Convert any Pillow mode to RGB; transparency is composited on white.

    16-bit and 32-bit grey (``I;16``, ``I``) are scaled to 8 bits rather than clipped; float grey
    (``F``) is taken as 0-1 when its maximum is at most 1, else as 0-255.

    Raises:
        DataError: Pillow cannot convert the mode (e.g. ``LAB``).
    """
    mode = image.mode
    if mode == "RGB":
        return image
    if mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    elif mode.startswith("I") or mode == "F":
        image = Image.fromarray(_grey_to_8bit(np.asarray(image)), mode="L")
    elif mode in ("LA", "La", "PA", "RGBa"):
        image = image.convert("RGBA")
    if image.mode == "RGBA":
        background = Image.new("RGB", image.size, _BACKGROUND)
        background.paste(image, mask=image.getchannel("A"))
        return background
    try:
        return image.convert("RGB")
    except ValueError as err:
        raise DataError(f"{where}: cannot convert colour mode {mode} to RGB ({err})") from None


def _grey_to_8bit(pixels: np.ndarray) -> np.ndarray:
    values = pixels.astype(np.float64)
    top = values.max(initial=0.0)
    if pixels.dtype.kind == "f":
        scale = 255.0 if top <= 1.0 else 1.0
    else:
        scale = 1.0 if top <= 255 else 255.0 / 65535.0
    return np.clip(np.rint(values * scale), 0, 255).astype(np.uint8)


def resize_for_encoder(image: Image.Image, size: int = IMAGE_SIZE, mode: Resize = "squash") -> Image.Image:
    """Resize an RGB image to ``size`` x ``size`` (bicubic).

    Args:
        image: an RGB image.
        size: the encoder's input size.
        mode: ``"squash"``: straight to size x size (the Flickr8k preparation; the default the
            captioner trains and infers with). ``"center_crop"``: the central ``CROP_FRACTION`` of
            the shorter side, then resize (the Lite0 weights' ImageNet evaluation).

    Returns:
        The resized image (the same object when it already is size x size and ``mode="squash"``).
    """
    if mode == "squash":
        if image.size == (size, size):
            return image
        return image.resize((size, size), Image.Resampling.BICUBIC)
    if mode != "center_crop":
        raise ValueError(f"resize_for_encoder: mode must be 'squash' or 'center_crop', got {mode!r}")
    width, height = image.size
    side = int(CROP_FRACTION * min(width, height))
    left, top = (width - side + 1) // 2, (height - side + 1) // 2
    return image.resize((size, size), Image.Resampling.BICUBIC, box=(left, top, left + side, top + side))


def to_tensor(image: Image.Image, mean: Sequence[float] = MEAN_RGB, std: Sequence[float] = STDDEV_RGB) -> Tensor:
    """An RGB image as a normalised float tensor.

    Args:
        image: an ``RGB`` image of height H and width W.
        mean: per-channel mean on the 0-255 scale.
        std: per-channel standard deviation on the 0-255 scale.

    Returns:
        ``(3, H, W)`` float32, ``(pixel - mean) / std``.
    """
    if image.mode != "RGB":
        raise ValueError(f"to_tensor: expected an RGB image, got mode {image.mode}")
    pixels = torch.from_numpy(np.array(image, dtype=np.uint8))  # (H, W, 3)
    mean_t = torch.tensor(mean, dtype=torch.float32).view(3, 1, 1)  # (3, 1, 1)
    std_t = torch.tensor(std, dtype=torch.float32).view(3, 1, 1)  # (3, 1, 1)
    return (pixels.permute(2, 0, 1).float() - mean_t) / std_t  # (3, H, W)


def load_image(source: str | Path | bytes, *, member: str | None = None, size: int = IMAGE_SIZE, resize: Resize = "squash") -> Tensor:
    """`open_image` -> `resize_for_encoder` -> `to_tensor`: ``(3, size, size)``."""
    return to_tensor(resize_for_encoder(open_image(source, member=member), size, resize))  # (3, size, size)


def load_batch(sources: Sequence[str | Path | bytes], *, size: int = IMAGE_SIZE, resize: Resize = "squash") -> Tensor:
    """Several images (paths or bytes) as one batch ``(B, 3, size, size)``."""
    if not sources:
        raise ValueError("load_batch: no images")
    return torch.stack([load_image(s, size=size, resize=resize) for s in sources])  # (B, 3, size, size)


class ImageSource:
    """Images by name from a folder (relative POSIX paths) or a ``.zip`` (member names).

    A zip stays open between reads; pickling (e.g. to DataLoader workers) drops the handle and the
    copy reopens the file.

    Args:
        path: a folder or a zip file.

    Raises:
        DataError: the path is missing, or a file that is not a readable zip.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise DataError(f"{self.path}: no such file or folder")
        self.is_zip = self.path.is_file()
        self._zip: zipfile.ZipFile | None = None
        if self.is_zip:
            self._archive()

    def names(self) -> list[str]:
        """The image names (by suffix, hidden files skipped), sorted."""
        if self.is_zip:
            found = [i.filename for i in self._archive().infolist() if not i.is_dir()]
        else:
            found = [p.relative_to(self.path).as_posix() for p in self.path.rglob("*") if p.is_file()]
        keep = [n for n in found if n.lower().endswith(IMAGE_SUFFIXES) and not _hidden(n)]
        return sorted(keep)

    def read_bytes(self, name: str) -> bytes:
        """The encoded bytes of one image."""
        if self.is_zip:
            return _read_member(self.path, name, self._archive())
        return _read_file(self.path / name)

    def open(self, name: str) -> Image.Image:
        """One image, decoded to upright RGB (`decode_image`)."""
        where = f"{self.path}, member {name!r}" if self.is_zip else str(self.path / name)
        return decode_image(self.read_bytes(name), where)

    def load(self, names: Sequence[str], *, size: int = IMAGE_SIZE, resize: Resize = "squash") -> Tensor:
        """Images as one normalised batch ``(B, 3, size, size)``."""
        return torch.stack([to_tensor(resize_for_encoder(self.open(n), size, resize)) for n in names])  # (B, 3, size, size)

    def close(self) -> None:
        """Close the zip file, if open (it reopens on the next read)."""
        if self._zip is not None:
            self._zip.close()
            self._zip = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_zip": None}

    def _archive(self) -> zipfile.ZipFile:
        if self._zip is None:
            self._zip = _open_zip(self.path)
        return self._zip


def _hidden(name: str) -> bool:
    return any(part.startswith(".") or part == "__MACOSX" for part in name.split("/"))


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except (zipfile.BadZipFile, OSError) as err:
        raise DataError(f"{path}: not a readable zip file ({err})") from None


def _read_member(path: Path, member: str, archive: zipfile.ZipFile | None = None) -> bytes:
    handle = archive if archive is not None else _open_zip(path)
    try:
        return handle.read(member)
    except KeyError:
        raise DataError(f"{path}: no member {member!r}") from None
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as err:
        raise DataError(f"{path}, member {member!r}: cannot read ({err})") from None
    finally:
        if archive is None:
            handle.close()


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, expected an image file") from None
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror or err})") from None
