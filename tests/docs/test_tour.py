"""The tour (docs/tour/) never rots: every command of every page runs, and says what the page says.

- The Korean pages (docs/tour/ko/) have the same commands and quote the same source lines as the
  English ones, page for page; each distinct command runs once and is checked for both.
- Every quoted block (a ```python block whose first line is `# src/...`) is still in that file:
  its lines, stripped, appear contiguously there, in order (a `...` line separates parts).
- Every command runs as benchmarks/tour.py runs it (which keeps the pages' figures at their own
  budgets): from a copy of the repository root (docs, src, configs and benchmarks linked, fresh
  runs/, plots/ and data/ folders, ../shared linked), with `.venv/bin/` replaced by this Python. A command marked `(tour test: ARGS)` runs with ARGS appended: the smaller budget the
  page announces. Its output must pass the check below that the page's claims give.

The pages run in two chains at once, one thread each: the two Multi30k pages (which share the
prepared data) with pages 8, 1 and 3, and the rest; page 8's toy-reverse training runs first, in tests/conftest.py's
`toy_tour`, which tests/e2e/test_toy_reverse.py shares. `ATTNKIT_TOUR_TIMES=FILE` appends each command's wall time to FILE
(JSON lines).
"""

from __future__ import annotations

import json
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from tour import RESULTS, SHARED, TOUR, Result, blocks, commands, commands_in, run  # noqa: E402  (benchmarks/tour.py: the pages' commands, run as a reader would)

PAGES = sorted(p.name for p in TOUR.glob("[1-9]-*.md"))
CHAINS = [  # about equal in CPU time at the tests' budgets, page 8's training left out (`toy_tour` runs it first)
    ["5-transformer.md", "2-bahdanau.md", "8-explanation.md", "1-seq2seq.md", "3-luong.md"],
    ["6-sentence-embeddings.md", "7-images.md", "4-attention-layer.md", "9-pretrained.md"],
]


def runs(page: Path) -> list[str]:
    """The ```bash blocks of `page` this module runs (tests/docs/test_bash_blocks.py): every one of a
    tour page's; a Korean page's are the English page's, which test_the_korean_page_has_the_same_commands_and_quotes checks."""
    if page.parent not in (TOUR, TOUR / "ko") or page.name not in PAGES:
        return []
    return [body for lang, body in blocks(page.read_text(encoding="utf-8")) if lang == "bash"]


def quotes(page: Path) -> list[tuple[str, list[str]]]:
    out = []
    for lang, body in blocks(page.read_text(encoding="utf-8")):
        lines = body.splitlines()
        if lang == "python" and lines and lines[0].startswith("# src/"):
            out.append((lines[0][2:].strip(), lines[1:]))
    return out


def test_the_tour_has_nine_pages_and_the_index_links_them_all():
    assert PAGES == [
        "1-seq2seq.md", "2-bahdanau.md", "3-luong.md", "4-attention-layer.md", "5-transformer.md", "6-sentence-embeddings.md", "7-images.md",
        "8-explanation.md", "9-pretrained.md",
    ]  # fmt: skip
    for index in (TOUR / "README.md", TOUR / "ko" / "README.md"):
        text = index.read_text(encoding="utf-8")
        assert all(f"({page})" in text for page in PAGES), index
    assert {name for chain in CHAINS for name in chain} == set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_the_korean_page_has_the_same_commands_and_quotes(page):
    en, ko = TOUR / page, TOUR / "ko" / page
    assert ko.exists(), f"no Korean page {ko}"
    assert [c.line for c in commands(ko)] == [c.line for c in commands(en)]
    assert quotes(ko) == quotes(en)
    assert commands(en) and quotes(en), f"{page}: a page shows code and a command"


def _in_order(needle: list[str], hay: list[str]) -> bool:
    """Whether the parts of `needle` (split at "...") appear in `hay`, each contiguously, in order."""
    parts, part = [], []
    for line in needle:
        if line.strip() == "...":
            parts.append(part)
            part = []
        else:
            part.append(line.strip())
    parts.append(part)
    start = 0
    for part in parts:
        at = next((i for i in range(start, len(hay) - len(part) + 1) if hay[i : i + len(part)] == part), None)
        if at is None:
            return False
        start = at + len(part)
    return True


def test_quoted_source_lines_are_still_in_the_source():
    gone = []
    for page in PAGES + [f"ko/{p}" for p in PAGES]:
        for path, lines in quotes(TOUR / page):
            source = REPO / path
            if not source.exists():
                gone.append(f"{page}: quotes {path}, which does not exist")
            elif not _in_order(lines, [line.strip() for line in source.read_text(encoding="utf-8").splitlines()]):
                gone.append(f"{page}: the lines quoted from {path} are not there any more")
    assert not gone, "\n".join(gone)


def _timed(command: str, result: Result) -> Result:
    if os.environ.get("ATTNKIT_TOUR_TIMES"):  # a JSON line per command: what the tour costs on this machine
        with open(os.environ["ATTNKIT_TOUR_TIMES"], "a", encoding="utf-8") as f:
            f.write(json.dumps({"command": command, "seconds": round(result.seconds, 1), "rc": result.rc}) + "\n")
    return result


OUTPUT_BLOCK = re.compile(r"^```bash\n((?:(?!```).)*?)^```\n\s*^```text\n(.*?)^```", re.S | re.M)  # a bash block, then its output


def recorded() -> dict[str, dict]:
    """benchmarks/results/tour.jsonl: what each command printed at the page's budget, by command."""
    rows = [json.loads(line) for line in RESULTS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["command"]: row for row in rows}


def test_an_output_block_is_what_its_command_printed():
    """A ```text block right after a ```bash block shows what the block's commands printed, as
    benchmarks/tour.py recorded them at the page's budget: each line of it ("..." elides) is a line of
    the recorded output."""
    outputs = recorded()
    for page in PAGES + [f"ko/{p}" for p in PAGES]:
        _check_output_blocks(page, outputs)


def _check_output_blocks(page: str, outputs: dict[str, dict]) -> None:
    for bash, text in OUTPUT_BLOCK.findall((TOUR / page).read_text(encoding="utf-8")):
        printed = set()
        for command in (c.page_command for c in commands_in(bash)):
            assert command in outputs, f"{page}: no line for {command!r} in {RESULTS.relative_to(REPO)}: run benchmarks/tour.py --pages {Path(page).name}"
            printed |= {line.strip() for line in outputs[command]["output"].splitlines()}
        missing = [line for line in text.splitlines() if line.strip() not in printed and line.strip() not in ("", "...")]
        assert not missing, f"{page}: {bash.strip()!r} did not print {missing[:3]} ({RESULTS.relative_to(REPO)})"


@pytest.fixture(scope="module")
def results(toy_tour) -> dict[str, Result]:
    """Every command's result, run in the scratch repository where page 8's toy-reverse training already ran
    (tests/conftest.py's `toy_tour`, which tests/e2e/test_toy_reverse.py shares)."""
    repo, trained = toy_tour.repo, {toy_tour.line: _timed(toy_tour.command, toy_tour.result)}

    def chain(pages: list[str]) -> dict[str, Result]:
        done: dict[str, Result] = {}
        for page in pages:
            for command in commands(TOUR / page):
                if command.line not in done | trained and not (command.needs_data and not (SHARED / "data").exists()):
                    done[command.line] = _timed(command.run, run(command.run, repo, timeout=600))
        return done

    with ThreadPoolExecutor(len(CHAINS)) as pool:
        return trained | {k: v for part in pool.map(chain, CHAINS) for k, v in part.items()}


def _number(pattern: str, out: str) -> float:
    match = re.search(pattern, out)
    assert match, f"no line matching {pattern!r} in:\n{out[-2000:]}"
    return float(match.group(1))


def check_bottleneck(r: Result) -> None:
    acc = json.loads(r.out.strip().splitlines()[-1])
    for bucket in range(3):  # the attention decoder beats both fixed-vector decoders at every length
        assert acc["luong"][bucket] > max(acc["none"][bucket], acc["context"][bucket]) + 20, acc


def check_bahdanau_step(r: Result) -> None:
    assert _number(r"max \|a_t\(equation\) - a_t\(model\)\| = (\S+)", r.out) < 1e-6
    assert _number(r"max \|c_t\(equation\) - c_t\(AdditiveAttention\)\| = (\S+)", r.out) < 1e-6
    assert "sum 1.0000" in r.out


def check_trained(folder: str):
    def check(r: Result) -> None:
        assert (r.cwd / folder / "best.json").exists(), r.out[-2000:]

    return check


def check_files(*names: str):
    def check(r: Result) -> None:
        for name in names:
            path = r.cwd / name
            assert path.exists() and path.stat().st_size > 100, f"{name} missing or empty:\n{r.out[-2000:]}"

    return check


def check_luong_toy(r: Result) -> None:
    matrix = r.out.split("mean over the seeds\n")[1].splitlines()
    assert matrix[0].split() == ["i", "love", "you", "</s>"] and matrix[2].split()[0] == "liebe", r.out
    row = [float(x) for x in matrix[2].split()[1:]]
    assert row.index(max(row)) == 1, row  # the "liebe" row's maximum is on "love"
    check_files("plots/luong-toy.png")(r)


def check_variance(r: Result) -> None:
    rows = [[float(x) for x in line.split()] for line in r.out.splitlines() if re.match(r"\s*\d+\s+\d", line)]
    assert [int(row[0]) for row in rows] == [4, 16, 64, 256, 1024]
    for d_k, _var, ratio, scaled, _w_raw, w in rows:
        assert 0.85 < ratio < 1.15 and 0.85 < scaled < 1.15, (d_k, ratio, scaled)  # var(q.k) ~ d_k; scaled ~ 1
        assert w < 0.35, (d_k, w)  # scaled weights stay spread
    assert [row[4] for row in rows] == sorted(row[4] for row in rows) and rows[-1][4] > 0.9  # unscaled saturates


def check_positions(r: Result) -> None:
    assert _number(r"over pos 0\.\.99 = (\S+)", r.out) < 1e-6
    assert _number(r"checked on pos 50\.\.99: max error (\S+)", r.out) < 1e-9  # a well-conditioned fit (spread positions)
    assert "added: (1, 6, 16)  concatenated: (1, 6, 24)" in r.out


def check_masks(r: Result) -> None:
    second = r.out.split("causal + padding):")[1]
    assert second.count("[0.500, 0.500, 0.000, 0.000]") == 3 and "[1.000, 0.000, 0.000, 0.000]" in second
    assert "[0.250, 0.250, 0.250, 0.250]" in r.out.split("causal + padding")[0]


def check_heads(r: Result) -> None:
    assert "weights (1, 4, 5, 5) (d_k = 4)" in r.out
    assert _number(r"eq\. 1: max difference (\S+)", r.out) < 1e-6
    assert _number(r"same weights: max difference (\S+)", r.out) < 1e-5


def check_norms(r: Result) -> None:
    rows = [[float(x) for x in line.split()] for line in r.out.splitlines() if re.match(r"\s*\d+\s+\d\.\d\d\s", line)]
    assert len(rows) == 12
    assert all(abs(row[1] - 1.0) < 0.01 for row in rows)  # post-norm: std 1 after every layer
    assert [row[3] for row in rows] == sorted(row[3] for row in rows) and rows[-1][3] > 2.0  # pre-norm: grows with depth
    assert rows[-1][4] < rows[0][4] / 2  # and its upper layers' gradients shrink


def check_schedule(r: Result) -> None:
    assert "step   4000: lr 6.99e-04" in r.out and "peak at step 4000 = (512 * 4000)^-0.5 = 6.99e-04" in r.out
    assert "step      1: lr 1.75e-07" in r.out and "step  16000: lr 3.49e-04" in r.out


def check_smoothing(r: Result) -> None:
    losses = [float(x) for x in re.findall(r"smoothed loss (\d\S*)", r.out)]
    assert losses == pytest.approx([0.5636, 0.3897, 1.6094], abs=1e-3) and min(losses) == losses[1]


def check_config(r: Result) -> None:
    for line in ("  max_tokens: 4096", "    kind: inverse_sqrt", "    lr: 0.001", "    warmup: 600", "  label_smoothing: 0.1"):
        assert line in r.out.splitlines(), line


def check_head_table(r: Result) -> None:
    summary = json.loads(r.out.strip().splitlines()[-1])
    assert set(summary) == {"previous", "same word", "distance"}
    assert summary["same word"]["kind"] == "encoder"
    for pattern, head in summary.items():
        assert f"most '{pattern}' head: {head['kind']} layer {head['layer']} head {head['head']}" in r.out
        check_files(head["png"])(r)
    assert len([line for line in r.out.splitlines() if re.match(r"\s+(encoder|decoder_self) \d\s+\d\s", line)]) == 2 * 3 * 4  # 2 kinds x 3 layers x 4 heads


def check_structured(r: Result) -> None:
    assert "identical one-hot hops: penalty 12.000" in r.out and "hops on different words: penalty 0.000" in r.out
    assert "uniform hops: penalty 3.111" in r.out and "M (1, 4, 16)" in r.out


def check_classify(r: Result) -> None:
    label, probs = r.out.strip().splitlines()[-1].split("\t")
    values = dict(field.split("=") for field in probs.split())
    assert label in values and len(values) == 5 and sum(map(float, values.values())) == pytest.approx(1.0, abs=2e-3)


def check_spatial(r: Result) -> None:
    assert "sum 1.0000" in r.out and _number(r"max \|z - alpha @ a\| = (\S+)", r.out) < 1e-6
    grid = [[float(x) for x in re.findall(r"\d\.\d+", line)] for line in r.out.split("as the grid:")[1].splitlines()[1:4]]
    assert max(max(row) for row in grid) == grid[1][2]  # the salient cell gets the most weight


def check_caption(r: Result) -> None:
    assert r.out.strip().splitlines()[-1].startswith("data/shapes-tour/images_valid/valid00000.png\t")
    check_files("plots/shapes-strip.png")(r)


def check_conv(r: Result) -> None:
    assert "rows sum to 1: True ; gamma = 0.0, y == x: True" in r.out
    assert _number(r"gamma = 1: \|y - x\| = (\S+);", r.out) > 1.0


def check_conv_benchmark(r: Result) -> None:
    result = json.loads(r.out.strip().splitlines()[-1])
    assert {"cnn", "cnn_self_attention"} <= result.keys()
    check_files("plots/conv-self-attention.png")(r)


def check_made(r: Result) -> None:
    folder = r.cwd / r.out.strip().splitlines()[-1].split(":")[0]
    assert (folder / "config.json").exists() and (folder / "model.safetensors").exists() and (folder / "tokenizer.json").exists(), r.out[-2000:]


def check_hf_attention(r: Result) -> None:
    assert json.loads(r.out.strip().splitlines()[-1])["kinds"] == {"encoder": 4}, r.out[-2000:]
    check_files("runs/tiny-bert.npz")(r)


def check_hf_compare(r: Result) -> None:
    assert "tokens: [CLS] the ca ##t ##s sat on the mat . [SEP]" in r.out and r.out.count("rows sum to 1.0000") == 4, r.out
    assert _number(r"max \|npz - output_attentions\| over 4 layers = (\S+)", r.out) < 1e-6


def check_explanation(r: Result) -> None:
    m = re.search(r"IG: (\d+) outputs, \[[\d, ]+\] steps, completeness within (\S+)% \(<= 1%\)", r.out)
    assert m and int(m.group(1)) >= 2 and float(m.group(2)) <= 1.0, r.out[-2000:]
    tokens = r.out.split("each row scaled to sum 1:\n")[1].splitlines()[0].split()
    assert tokens[-1] == "</s>", tokens
    rows = {}
    for name in ("attention", "rollout", "flow", "|IG|"):
        line = next(line for line in r.out.splitlines() if line.split()[:1] == [name])
        values, top = [float(x) for x in line.split()[1 : 1 + len(tokens)]], line.split("top: ")[1]
        assert sum(values) == pytest.approx(1.0, abs=0.03), (name, values)  # each row scaled to sum 1 (two decimals shown)
        rows[name] = top
    assert rows["|IG|"] == rows["rollout"] == tokens[-2], rows  # reversing: the first output depends on the last source token
    taus = [_number(rf"(?m)^\s*{name} (-?\d\.\d\d)$", r.out) for name in ("attention", "rollout", "flow")]
    assert all(-1.0 <= t <= 1.0 for t in taus), taus


def check_run_attribution(r: Result) -> None:
    page = (r.cwd / "plots/toy-attribution.html").read_text(encoding="utf-8")
    a = json.loads(re.search(r'id="attention-data">(.*?)</script>', page, re.S).group(1))[0]["attribution"]
    assert a["output"] == "output 0 't2'" and a["ig"]["relative_error"] <= 0.01, a
    assert a["compared"]["names"] == ["cross/layer1", "cross/layer2", "rollout"], a
    ig = [abs(x) for x in a["scores"]["ig"]]
    assert a["tokens"][ig.index(max(ig))] == "t2", a  # reversing: the first output depends on the last source token
    assert all(t is not None and -1.0 <= t <= 1.0 for t in a["tau"]["ig"]), a


def check_masked_translation(r: Result) -> None:
    line = r.out.strip().splitlines()[-1]
    assert re.fullmatch(r"t\d( t\d)*", line) and line != "t2 t9 t5 t4 t1 t3", r.out[-2000:]  # without cross attention, not the reverse


def check_toy_pruning(r: Result) -> None:
    result = json.loads(r.out.strip().splitlines()[-1])
    assert result["heads"] == 24 and len(result["curve_importance"]) == len(result["curve_random"]) == 25, result
    assert result["curve_importance"][0] == result["accuracy"] > 80 and result["tau_outputs"] > 0, result
    assert all(-1.0 <= t <= 1.0 for t in result["kendall_tau_ig"].values()), result
    check_files("plots/toy-pruning.png")(r)


CHECKS = {
    "bottleneck.py": check_bottleneck,
    "bahdanau_step.py": check_bahdanau_step,
    "train rnn-bahdanau-m30k": check_trained("runs/bahdanau-tour"),
    "plot runs/bahdanau-tour": check_files("plots/bahdanau/000-cross-layer1-head1.png"),
    "luong_toy.py": check_luong_toy,
    "layer.py variance": check_variance,
    "layer.py positions": check_positions,
    "layer.py masks": check_masks,
    "layer.py heads": check_heads,
    "transformer.py norms": check_norms,
    "transformer.py schedule": check_schedule,
    "transformer.py smoothing": check_smoothing,
    "attnkit config m30k-small": check_config,
    "train m30k-small": check_trained("runs/m30k-tour"),
    "heads.py runs/m30k-tour": check_head_table,
    "structured.py": check_structured,
    "train sase-sst5": check_trained("runs/sst5-tour"),
    "explain runs/sst5-tour": check_files("plots/sst5-explain.png", "plots/sst5-explain.html"),
    "classify runs/sst5-tour": check_classify,
    "images.py spatial": check_spatial,
    "caption-shapes --out data/shapes-tour": check_files("data/shapes-tour/images_valid/valid00000.png"),
    "train caption-shapes": check_trained("runs/shapes-tour"),
    "caption runs/shapes-tour": check_caption,
    "images.py conv": check_conv,
    "conv_self_attention.py": check_conv_benchmark,
    "pretrained.py make": check_made,
    "attention runs/tiny-bert": check_hf_attention,
    "pretrained.py compare": check_hf_compare,
    "report runs/tiny-bert": check_files("plots/tiny-bert.html"),
    "plot runs/tiny-gpt2": check_files("plots/gpt2-head.png"),
    "plot runs/tiny-bert": check_files("plots/bert-model.png"),
    "train toy-reverse": check_trained("runs/toy-tour"),
    "explanation.py": check_explanation,
    "report runs/toy-tour": check_run_attribution,
    "--mask-heads": check_masked_translation,
    "attention_analysis.py runs/toy-tour": check_toy_pruning,
}
LINES = sorted({c.line for page in PAGES for c in commands(TOUR / page)})


def _check_for(line: str):
    keys = [key for key in CHECKS if key in line]
    assert len(keys) == 1, f"{line!r}: {len(keys)} checks match ({keys})"
    return CHECKS[keys[0]]


def test_every_command_has_one_check_and_every_check_a_command():
    for line in LINES:
        _check_for(line)
    assert all(any(key in line for line in LINES) for key in CHECKS), [k for k in CHECKS if not any(k in line for line in LINES)]


@pytest.mark.slow
@pytest.mark.parametrize("line", LINES)
def test_command_output_is_what_the_page_says(line, results):
    if line not in results:
        pytest.skip(f"needs {SHARED / 'data'} (shared/data/README.md), which is not here")
    result = results[line]
    assert result.rc == 0, f"{line}: exit status {result.rc}\n{result.out[-3000:]}"
    _check_for(line)(result)
