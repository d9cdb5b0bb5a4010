"""Arrays streamed into one `.npz` file, each written as it comes (`attnkit attention --out`).

An `.npz` is a zip of `.npy` files, as `numpy.savez` writes it; `numpy.load` reads it back. Writing
member by member means a layer's attention never waits in memory for the next one. The file
appears only when complete (`attnkit.io.atomic_path`).
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from attnkit.errors import AttnkitError
from attnkit.io import atomic_path


class NpzWriter:
    """Adds arrays to an open `.npz` (zip) file; `names` lists what was written."""

    def __init__(self, archive: zipfile.ZipFile, path: Path) -> None:
        self._zip, self.path, self.names = archive, path, []

    def add(self, name: str, array: np.ndarray | Sequence[str]) -> None:
        """Write `array` as member `name` (a list of strings becomes a unicode array)."""
        if name in self.names:
            raise AttnkitError(f"{self.path}: {name} written twice")
        array = np.asarray(array, dtype=np.str_) if isinstance(array, list | tuple) else np.asarray(array)
        with self._zip.open(f"{name}.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array(f, array, allow_pickle=False)
        self.names.append(name)


@contextmanager
def npz_writer(path: str | Path) -> Iterator[NpzWriter]:
    """An `NpzWriter` on a temporary file that becomes `path` when the block ends without error."""
    path = Path(path)
    if path.suffix != ".npz":
        raise AttnkitError(f"{path}: the output must be a .npz file")
    with atomic_path(path) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        yield NpzWriter(archive, path)
