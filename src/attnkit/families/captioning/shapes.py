"""Generated captioned images: coloured shapes at places of a 3 x 3 layout on a plain background.

Each scene has `objects` shapes (circle, square, triangle) in distinct colours-or-shapes at
distinct places; its caption names them in reading order (top row first, left to right) with
their places: ``"a red circle at the top left and a blue square at the bottom right"``. Scenes are
seeded (`random.Random(seed)`), so a data set is the same on every machine. `write_shapes` writes
a folder of PNGs and a Flickr8k-style token file per split, which `attnkit train` reads like any
captioned image set. The object boxes (`Scene.objects`) say which grid cells a word should attend
to. `same_colour_pairs` makes the self-attention demo's task: two shapes in opposite corners,
labelled by whether they share a colour.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw

from attnkit.io import atomic_path, atomic_write_text

COLOURS = {"red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 80, 220), "yellow": (230, 200, 30)}
SHAPES = ("circle", "square", "triangle")
ROWS, COLS = ("top", "middle", "bottom"), ("left", "middle", "right")
BACKGROUND = (245, 245, 245)


@dataclass(frozen=True)
class Thing:
    """One shape: its colour, kind and place (row, col) in the 3 x 3 layout."""

    colour: str
    shape: str
    row: int
    col: int

    @property
    def place(self) -> str:
        """``top left``, ``top``, ``center``, ``bottom right``, ... ("middle" row/col named once)."""
        if (self.row, self.col) == (1, 1):
            return "center"
        if self.col == 1:
            return ROWS[self.row]
        if self.row == 1:
            return COLS[self.col]
        return f"{ROWS[self.row]} {COLS[self.col]}"


@dataclass(frozen=True)
class Scene:
    objects: tuple[Thing, ...]

    @property
    def caption(self) -> str:
        return " and ".join(f"a {t.colour} {t.shape} at the {t.place}" for t in self.objects)


def random_scene(rng: random.Random, objects: int = 2) -> Scene:
    """Shapes at distinct places, in reading order."""
    places = sorted(rng.sample(range(9), objects))
    things = tuple(Thing(rng.choice(list(COLOURS)), rng.choice(SHAPES), p // 3, p % 3) for p in places)
    return Scene(things)


def draw(scene: Scene, size: int = 48) -> Image.Image:
    """The scene as an RGB image of size x size; each place is a size/3 square, the shape inside it."""
    image = Image.new("RGB", (size, size), BACKGROUND)
    pen = ImageDraw.Draw(image)
    cell = size / 3
    for t in scene.objects:
        m = cell * 0.15
        x0, y0, x1, y1 = t.col * cell + m, t.row * cell + m, (t.col + 1) * cell - m, (t.row + 1) * cell - m
        colour = COLOURS[t.colour]
        if t.shape == "circle":
            pen.ellipse((x0, y0, x1, y1), fill=colour)
        elif t.shape == "square":
            pen.rectangle((x0, y0, x1, y1), fill=colour)
        else:
            pen.polygon(((x0 + x1) / 2, y0, x1, y1, x0, y1), fill=colour)
    return image


def place_cells(thing: Thing, grid: int) -> list[int]:
    """The row-major indices of the grid cells (grid x grid over the image) inside a thing's place."""
    per = grid // 3
    return [r * grid + c for r in range(thing.row * per, (thing.row + 1) * per) for c in range(thing.col * per, (thing.col + 1) * per)]


def write_shapes(folder: str | Path, counts: dict[str, int], *, seed: int = 0, size: int = 48, objects: int = 2) -> dict[str, list[Scene]]:
    """Write ``images_SPLIT/*.png`` and ``captions_SPLIT.txt`` (``NAME#0<TAB>caption``) per split.

    Returns:
        The scenes of each split, in file order.
    """
    folder = Path(folder)
    rng = random.Random(seed)
    scenes = {}
    for split, n in counts.items():
        (folder / f"images_{split}").mkdir(parents=True, exist_ok=True)
        scenes[split] = [random_scene(rng, objects) for _ in range(n)]
        lines = []
        for i, scene in enumerate(scenes[split]):
            name = f"{split}{i:05d}.png"
            with atomic_path(folder / f"images_{split}" / name) as tmp:
                draw(scene, size).save(tmp, format="PNG")
            lines.append(f"{name}#0\t{scene.caption}\n")
        atomic_write_text(folder / f"captions_{split}.txt", "".join(lines))
    return scenes


def same_colour_pairs(rng: random.Random, n: int) -> list[tuple[Scene, int]]:
    """The self-attention demo's task: two shapes in opposite corners; label 1 if they share a colour.

    Colours are drawn so that half the scenes match; shapes are random, so only the colours of two
    distant positions decide the label.
    """
    corners = (((0, 0), (2, 2)), ((0, 2), (2, 0)))
    out = []
    for _ in range(n):
        (r0, c0), (r1, c1) = rng.choice(corners)
        first = rng.choice(list(COLOURS))
        same = rng.random() < 0.5
        second = first if same else rng.choice([c for c in COLOURS if c != first])
        things = (Thing(first, rng.choice(SHAPES), r0, c0), Thing(second, rng.choice(SHAPES), r1, c1))
        out.append((Scene(tuple(sorted(things, key=lambda t: (t.row, t.col)))), int(same)))
    return out
