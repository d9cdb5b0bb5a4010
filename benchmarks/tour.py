"""The tour's figures, measured: every command of docs/tour/ run at the page's own budget, its output kept.

The tour pages quote what their commands print (a variance table, a trained model's BLEU, a head's
weight on the previous token). This runs each distinct command of the English pages as a reader
would paste it (without the smaller `(tour test: ...)` budget that tests/docs/test_tour.py adds), in
a scratch copy of the repository (docs, src, configs and benchmarks linked, fresh runs/, plots/
and data/ folders, ../shared linked), in two chains at once with one thread each (a copy each, so
that they never prepare the same data at once), and writes one
JSON line per command to benchmarks/results/tour.jsonl:

- `name` (the command's program and words before its first option: "layer.py variance",
  "attnkit train m30k-small"), `page`, `command`, `rc`, `seconds`, `cpu` (as `attnkit doctor`
  names it), `date`;
- `output`: what it printed (progress lines left out, the last 400 lines);
- for `attnkit train`: `validation` (each validation's step, minutes and metrics) and `best`.

The pages' figures are markers that the site's build fills in from these lines (scripts/docs/figures.py;
`pattern` picks a number out of `output`). `--figures` copies the pictures the pages
show (docs/tour/figures/) from the same runs.

    .venv/bin/python benchmarks/tour.py --figures          # about an hour on 2 cores
    .venv/bin/python benchmarks/tour.py --pages 3-luong.md 4-attention-layer.md   # replaces those pages' lines
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOUR = REPO / "docs" / "tour"
SHARED = REPO.parent / "shared"
RESULTS = REPO / "benchmarks" / "results" / "tour.jsonl"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
TEST_ARGS = re.compile(r"\(tour test: ([^)]*)\)")
VENV = re.compile(r"(?<![\w/.])\.venv/bin/(python|attnkit)\b")  # the page's programs, run with this Python
PROGRESS = re.compile(r"\d+/\d+ \[|it/s|s/it|s/step|step/s")  # a progress bar's line
# Two chains of about equal length at the pages' budgets: the Transformer's 40-minute run, and the rest.
CHAINS = [
    ["5-transformer.md", "6-sentence-embeddings.md", "9-pretrained.md"],
    ["2-bahdanau.md", "7-images.md", "8-explanation.md", "1-seq2seq.md", "3-luong.md", "4-attention-layer.md"],
]
# The pictures the pages show, and the tour output each is copied from.
FIGURES = {
    "bahdanau-alignment.png": "plots/bahdanau/000-cross-layer1-head1.png",
    "heads-previous.png": "plots/heads/previous.png",
    "heads-same-word.png": "plots/heads/same-word.png",
    "heads-distance.png": "plots/heads/distance.png",
    "sst5-explain.png": "plots/sst5-explain.png",
    "shapes-strip.png": "plots/shapes-strip.png",
    "pretrained-bert-model.png": "plots/bert-model.png",
    "pretrained-gpt2-head.png": "plots/gpt2-head.png",
}


@dataclass(frozen=True)
class Command:
    line: str  # as the page shows it
    page_command: str  # what a reader runs
    test_args: str  # what the tour test appends: the smaller budget the page announces

    @property
    def run(self) -> str:
        """The command the tour test runs."""
        return f"{self.page_command} {self.test_args}".strip()

    @property
    def needs_data(self) -> bool:
        return "m30k" in self.line or "sst5" in self.line

    @property
    def name(self) -> str:
        """The program and the words before its first option, paths as their last part ("layer.py variance")."""
        words = []
        for word in shlex.split(self.page_command.split(" | ")[-1]):  # `echo ... | attnkit translate ...`: the program
            if word.startswith("-"):
                break
            if "=" in word and not words or " " in word:  # an environment setting, a quoted sentence
                continue
            words.append(Path(word).name)
        return " ".join(w for w in words if w != "python")


def blocks(text: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def commands_in(body: str) -> list[Command]:
    """The commands of one ```bash block, in order."""
    found = []
    for line in body.replace("\\\n", " ").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            extra = TEST_ARGS.search(line)
            found.append(Command(line, line.split("   # ")[0].strip(), extra.group(1) if extra else ""))
    return found


def commands(page: Path) -> list[Command]:
    """The commands of a page's ```bash blocks, in order."""
    return [command for lang, body in blocks(page.read_text(encoding="utf-8")) if lang == "bash" for command in commands_in(body)]


def scratch(root: Path) -> Path:
    """A repository to run the tour in: docs, src, configs and benchmarks linked, ../shared linked."""
    (root / "shared").symlink_to(SHARED)
    repo = root / "repo"
    repo.mkdir()
    for name in ("docs", "src", "configs", "benchmarks"):
        (repo / name).symlink_to(REPO / name)
    return repo


@dataclass
class Result:
    rc: int
    out: str
    cwd: Path
    seconds: float


def run(shell_command: str, cwd: Path, timeout: float | None = None) -> Result:
    """Run a page's command in `cwd` with this Python, one thread, attnkit from this tree's src/."""
    python = f'"{sys.executable}"'
    shell = VENV.sub(lambda m: python if m.group(1) == "python" else f"{python} -m attnkit", shell_command)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]), "OMP_NUM_THREADS": "1"}
    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", shell], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return Result(proc.returncode, proc.stdout + proc.stderr, cwd, time.monotonic() - start)


def validation_history(run_dir: Path) -> dict:
    """A trained run's validations (step, minutes, metrics) and its best checkpoint."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    validation = [
        {**{k: v for k, v in row.items() if k not in ("kind", "elapsed") and not k.startswith("entropy/")}, "minutes": round(row["elapsed"] / 60, 2)}
        for row in rows
        if row.get("kind") == "valid"
    ]
    best = json.loads((run_dir / "best.json").read_text(encoding="utf-8"))
    return {"validation": validation, "best": best, "updates": max(row["step"] for row in rows if "step" in row)}


def record(page: str, command: Command, result: Result, cpu: str) -> dict:
    lines = [line for line in result.out.replace("\r", "\n").splitlines() if line.strip() and not PROGRESS.search(line)]
    row = {
        "name": command.name, "page": page, "command": command.page_command, "rc": result.rc, "seconds": round(result.seconds, 1),
        "cpu": cpu, "date": datetime.date.today().isoformat(), "output": "\n".join(lines[-400:]),
    }  # fmt: skip
    out = re.search(r"--out (\S+)", command.page_command)
    if command.name.startswith("attnkit train") and out and (result.cwd / out.group(1) / "best.json").exists():
        row.update(validation_history(result.cwd / out.group(1)))
    return row


def chains_for(pages: list[str] | None) -> list[list[str]]:
    """The chains to run: all, or only the pages asked for (each page trains what it uses)."""
    if not pages:
        return CHAINS
    unknown = set(pages) - {p for chain in CHAINS for p in chain}
    if unknown:
        raise SystemExit(f"benchmarks/tour.py: no tour page {sorted(unknown)}")
    return [part for part in ([p for p in chain if p in pages] for chain in CHAINS) if part]


def save(rows: list[dict]) -> None:
    """Write the rows to tour.jsonl, replacing the lines of the pages they cover."""
    kept = [json.loads(line) for line in RESULTS.read_text(encoding="utf-8").splitlines()] if RESULTS.exists() else []
    pages = {row["page"] for row in rows}
    RESULTS.write_text("".join(json.dumps(row) + "\n" for row in [r for r in kept if r["page"] not in pages] + rows), encoding="utf-8")


def run_chain(pages: list[str], repo: Path, cpu: str) -> list[dict]:
    """Each distinct command of the pages, in order, in `repo`."""
    rows, done = [], set()
    for page in pages:
        for command in commands(TOUR / page):
            if command.line in done:
                continue
            done.add(command.line)
            result = run(command.page_command, repo)
            rows.append(record(page, command, result, cpu))
            print(json.dumps({k: rows[-1][k] for k in ("page", "name", "rc", "seconds")}), flush=True)
            if result.rc:
                print(result.out[-3000:], file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", nargs="+", help="only these pages (each page trains what it uses)")
    parser.add_argument("--figures", action="store_true", help="copy the pictures the pages show into docs/tour/figures/")
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    from attnkit.precision import cpu_model

    cpu, chains = cpu_model(), chains_for(args.pages)
    root = args.keep or Path(tempfile.mkdtemp(prefix="attnkit-tour-"))
    repos = []
    for i in range(len(chains)):  # a copy per chain: two chains never prepare the same data at once
        (root / f"chain{i}").mkdir(parents=True)
        repos.append(scratch(root / f"chain{i}"))
    with ThreadPoolExecutor(len(chains)) as pool:
        rows = [row for part in pool.map(run_chain, chains, repos, [cpu] * len(chains)) for row in part]
    save(rows)
    if args.figures:
        for name, made in FIGURES.items():
            for repo in repos:
                if (repo / made).exists():
                    shutil.copyfile(repo / made, TOUR / "figures" / name)
    failed = [row["command"] for row in rows if row["rc"]]
    print(json.dumps({"commands": len(rows), "failed": failed, "results": str(RESULTS.relative_to(REPO)), "cpu": cpu}))
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
