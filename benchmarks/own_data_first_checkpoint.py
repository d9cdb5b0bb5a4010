"""Own-data training's first checkpoint: seconds from `attnkit train FAMILY --train ... --valid ...` to it.

    .venv/bin/python benchmarks/own_data_first_checkpoint.py [--families translation classification parsing captioning]
        [--data ../shared/data] [--limit N] [--out benchmarks/results/own_data_first_checkpoint.jsonl]

For each family it writes the files a user would have into a temporary folder (docs/your-data.md):
- translation: the first 10,000 Multi30k En-De training pairs as train.en/train.de, the 1,014
  validation pairs as valid.en/valid.de;
- classification: SST-5 train and dev (8,544 and 1,101 sentences) as CSV files with their own
  column names (`review`, `stars`: --text-column, --label-column);
- parsing: the NLTK PTB sample's .mrg files concatenated, wsj_0001-0179 as train.mrg, 0180-0189 as
  valid.mrg (trees over several lines, function tags and -NONE- as in the treebank);
- captioning: the first 10,000 Flickr8k training captions (2,000 images) and the first 1,000
  development captions (200 images) as Flickr8k token files (IMAGE#K<TAB>caption), and the JPEGs
  of all 7,000 images of Flickr8k's train and dev splits in one images/ folder.
Then it starts the command a user types, with the attnkit of this checkout, in that folder (a fresh
run folder and prepared-data cache: tokenizers, vocabularies and image features are made as on a
first run, and counted), watches the run folder, and records the seconds from the start to the
first complete checkpoint folder (and to the start of training, when the data, tokenizer, image
features and model are ready), the own-data rule the run printed (model size, batch, evaluation
interval), its standard error lines until then with their seconds, and its peak resident memory.
Then it sends SIGINT and checks the run exits cleanly: exit code 0, "stopped by SIGINT" printed,
its last checkpoint complete. One JSON line per family with the CPU, its idle share in the 2 s before
the start and the date; written to --out. Run it alone on an idle machine (the issue's aim: within 120 s on 2 cores).

--limit N trains on at most N training examples and N / 10 validation examples, a quick check of
the script that writes no result file unless --out is given.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from itertools import islice
from pathlib import Path

from attnkit.artifacts.checkpoint import checkpoint_dirs
from attnkit.precision import cpu_model

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "own_data_first_checkpoint.jsonl"
LIMIT_S = 120  # the aim on an idle 2-core machine
TRAIN = {"translation": 10_000, "classification": None, "parsing": None, "captioning": 10_000}  # training examples (None: all)
VALID = {"translation": None, "classification": None, "parsing": None, "captioning": 1_000}  # validation examples
EPOCH = re.compile(r"INFO: epoch 0: \d+ batches")  # the training batcher's first epoch: the data, features and model are ready
RULE = re.compile(
    r"own-data defaults \(docs/your-data.md\) for (?P<examples>[\d,]+) training examples, (?P<tokens>[\d,]+) tokens: the (?P<size>\w+) model.*?"
    r"batches of (?P<max_tokens>[\d,]+) tokens, about (?P<updates_per_epoch>[\d,]+) updates? an epoch; "
    r"evaluate every (?P<eval_every>[\d,]+) updates?.*?first after (?P<eval_first>[\d,]+) updates?"
)


def lines(path: Path, limit: int | None) -> list[str]:
    """The first `limit` lines (all: None) of a gzipped text file, without their line ends."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in islice(f, limit)]


def write(path: Path, rows: list[str]) -> Path:
    path.write_text("".join(row + "\n" for row in rows), encoding="utf-8")
    return path


def translation(data: Path, folder: Path, train: int | None, valid: int | None) -> list[str]:
    m30k = data / "multi30k"
    for split, source, n in (("train", "train", train), ("valid", "val", valid)):
        for lang in ("en", "de"):
            write(folder / f"{split}.{lang}", lines(m30k / f"{source}.{lang}.gz", n))
    return ["--train", "train.en", "train.de", "--valid", "valid.en", "valid.de"]


def classification(data: Path, folder: Path, train: int | None, valid: int | None) -> list[str]:
    for split, source, n in (("train", "train", train), ("valid", "dev", valid)):
        with open(folder / f"{split}.csv", "w", encoding="utf-8", newline="") as f:
            table = csv.writer(f)
            table.writerow(["review", "stars"])
            for line in lines(data / "sst" / f"sst5_{source}.tsv.gz", n):
                label, text = line.split("\t", 1)  # __label__K<TAB>sentence
                table.writerow([text, label.removeprefix("__label__")])
    return ["--train", "train.csv", "--valid", "valid.csv", "--text-column", "review", "--label-column", "stars"]


def parsing(data: Path, folder: Path, train: int | None, valid: int | None) -> list[str]:
    """The sample's .mrg files as they are, concatenated (`--limit`: whole files until N trees)."""
    with zipfile.ZipFile(data / "ptb_sample" / "treebank.zip") as archive:
        members = sorted(n for n in archive.namelist() if re.fullmatch(r"treebank/combined/wsj_\d{4}\.mrg", n))
        for split, numbers, n in (("train", range(1, 180), train), ("valid", range(180, 190), valid)):
            texts, trees = [], 0
            for member in (m for m in members if int(m[-8:-4]) in numbers):
                if n is not None and trees >= n:
                    break
                text = archive.read(member).decode("utf-8")
                texts.append(text)
                trees += text.count("\n(")  # a tree starts a line with its outer bracket
            (folder / f"{split}.mrg").write_text("".join(texts), encoding="utf-8")
    return ["--train", "train.mrg", "--valid", "valid.mrg"]


def captioning(data: Path, folder: Path, train: int | None, valid: int | None) -> list[str]:
    """The captions' first lines, and every image of Flickr8k's train and dev splits in one folder."""
    images = folder / "images"
    for split, source, n in (("train", "train", train), ("valid", "dev", valid)):
        write(folder / f"{split}.txt", lines(data / "flickr8k" / f"captions_{source}.txt.gz", n))  # IMAGE#K<TAB>caption
        with zipfile.ZipFile(data / "flickr8k" / f"images_{source}.zip") as archive:
            archive.extractall(images)
    return ["--images", "images", "--train", "train.txt", "--valid", "valid.txt"]


PREPARE = {"translation": translation, "classification": classification, "parsing": parsing, "captioning": captioning}


def peak_rss_mib(pid: int) -> float | None:
    """The process's peak resident memory so far (VmHWM), MiB."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return None


def idle_share(seconds: float = 2.0) -> float | None:
    """The share of the machine's CPU time that was idle over the next `seconds` (/proc/stat), to show it was quiet."""

    def times() -> list[int]:
        return [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]

    try:
        before = times()
        time.sleep(seconds)
        spent = [b - a for a, b in zip(before, times())]
    except OSError:
        return None
    return round((spent[3] + spent[4]) / max(sum(spent), 1), 3)  # idle + iowait


def rule_of(stderr: list[tuple[float, str]]) -> dict:
    """The own-data rule's line the run printed, and its numbers."""
    for _, line in stderr:
        found = RULE.search(line)
        if found:
            numbers = {k: v if k == "size" else int(v.replace(",", "")) for k, v in found.groupdict().items()}
            return {"rule": line.split("INFO: ", 1)[-1], **numbers}
    return {"rule": None}


def first_checkpoint(family: str, folder: Path, arguments: list[str], timeout: float) -> dict:
    """Run `attnkit train FAMILY ARGUMENTS --out run` in `folder` until its first checkpoint, then SIGINT it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    command = [sys.executable, "-m", "attnkit", "train", family, *arguments, "--out", "run"]
    stderr: list[tuple[float, str]] = []
    started = time.monotonic()
    child = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader = threading.Thread(target=lambda: stderr.extend((round(time.monotonic() - started, 1), line.rstrip()) for line in child.stderr))
    reader.start()
    seconds = checkpoint = None
    while child.poll() is None and time.monotonic() - started < timeout:
        found = checkpoint_dirs(folder / "run")
        if found:
            seconds, checkpoint = time.monotonic() - started, found[0].name
            break
        time.sleep(0.1)
    peak = peak_rss_mib(child.pid)
    until = len(stderr)
    child.send_signal(signal.SIGINT)
    signalled = time.monotonic()
    try:
        stdout, _ = child.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        child.kill()
        stdout, _ = child.communicate()
    reader.join()
    last = checkpoint_dirs(folder / "run")
    clean = child.returncode == 0 and "stopped by SIGINT" in stdout and bool(last)
    return {
        "first_checkpoint_s": None if seconds is None else round(seconds, 1), "limit_s": LIMIT_S,
        "within_limit": seconds is not None and seconds <= LIMIT_S, "checkpoint": checkpoint,
        "training_starts_s": next((t for t, line in stderr if EPOCH.search(line)), None), **rule_of(stderr), "peak_rss_mib": peak,
        "exit_code": child.returncode, "exit_s": round(time.monotonic() - signalled, 1), "clean_exit": clean,
        "last_checkpoint": last[-1].name if last else None, "stdout": stdout.strip().splitlines()[-1:], "stderr": stderr[:until],
    }  # fmt: skip


def measure(family: str, data: Path, limit: int | None, timeout: float) -> dict:
    train, valid = TRAIN[family], VALID[family]
    if limit is not None:
        train, valid = min(train or limit, limit), min(valid or limit, max(limit // 10, 10))
    with tempfile.TemporaryDirectory(prefix=f"attnkit-own-{family}-") as tmp:
        folder = Path(tmp)
        arguments = PREPARE[family](data, folder, train, valid)
        idle = idle_share()
        result = first_checkpoint(family, folder, arguments, timeout)
    command = f"attnkit train {family} {' '.join(arguments)} --out run"
    return {"benchmark": "own_data_first_checkpoint", "family": family, "command": command, "limit": limit, **result,
            "cpu": cpu_model(), "cores": os.cpu_count(), "idle_before": idle, "date": datetime.date.today().isoformat()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="+", choices=list(PREPARE), default=list(PREPARE))
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data", help="the shared data folder (multi30k, sst, ptb_sample, flickr8k)")
    parser.add_argument("--limit", type=int, help="at most N training and N / 10 validation examples: a quick check, no result file unless --out")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for a first checkpoint before stopping the run anyway")
    parser.add_argument("--out", type=Path, help=f"the JSON lines' file, rewritten (default: {RESULTS.relative_to(REPO)}; none with --limit)")
    args = parser.parse_args()
    out = args.out or (None if args.limit else RESULTS)
    results = []
    for family in args.families:
        results.append(json.dumps(measure(family, args.data, args.limit, args.timeout)))
        print(results[-1], flush=True)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("".join(line + "\n" for line in results), encoding="utf-8")
    if not all(json.loads(line)["clean_exit"] for line in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
