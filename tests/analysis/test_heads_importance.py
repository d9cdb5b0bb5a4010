"""`attnkit heads RUN --importance [--prune STEP]`: Michel et al.'s importance of a tiny run's heads, checked
against central finite differences of each pair's loss in float64, and the pruning steps against masks built by hand."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from attnkit.cli import main
from attnkit.data.batching import collate
from attnkit.data.vocab import BOS, EOS
from attnkit.decode.greedy import greedy
from attnkit.families import load_run
from attnkit.models.transformer import HeadMask

LINES = ["t1 t2 t3\tt3 t2 t1", "t4 t5\tt5 t4", "t6 t7 t8 t9\tt9 t8"]


def _heads(run, tmp_path, *extra: str) -> dict:
    data = tmp_path / "pairs.tsv"
    data.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    assert main(["heads", str(run), "--input", str(data), "--out", str(tmp_path / "out"), "--importance", *extra]) == 0
    return json.loads((tmp_path / "out" / "importance.json").read_text(encoding="utf-8"))


def _pairs(loaded) -> list[tuple[list[int], list[int]]]:
    v = loaded.vocabs
    return [tuple(v.src_vocab.encode(part.split()) for part in line.split("\t")) for line in LINES]


def _loss(model, pair, gates: dict[str, torch.Tensor]) -> float:
    b = collate([pair], [0])
    with torch.no_grad():
        logits = model(b.src, b.src_keep, b.tgt_in, HeadMask(**gates))  # (1, T, V)
    return float(F.cross_entropy(logits.flatten(0, 1), b.tgt_out.flatten()))


def test_importance_is_the_normalised_sum_of_loss_sensitivities(tiny_transformer_run, tmp_path, capsys):
    doc = _heads(tiny_transformer_run, tmp_path)
    assert "least important" in capsys.readouterr().out
    loaded = load_run(tiny_transformer_run)
    model = loaded.model.double().eval()
    le, ld, H = len(model.encoder_layers), len(model.decoder_layers), model.decoder_layers[0].self_attn.n_heads
    sizes = {"encoder": le, "decoder_self": ld, "cross": ld}
    eps = 1e-4
    for kind, layers in sizes.items():
        expected = torch.zeros(layers, H, dtype=torch.float64)
        for pair in _pairs(loaded):
            for layer in range(layers):
                for head in range(H):
                    up, down = ({k: torch.ones(n, H, dtype=torch.float64) for k, n in sizes.items()} for _ in range(2))
                    up[kind][layer, head] += eps
                    down[kind][layer, head] -= eps
                    expected[layer, head] += abs(_loss(model, pair, up) - _loss(model, pair, down)) / (2 * eps)
        expected /= expected.norm(dim=-1, keepdim=True)  # per layer, as Michel et al.
        torch.testing.assert_close(torch.tensor(doc["importance"][kind], dtype=torch.float64), expected, atol=1e-4, rtol=1e-3)
    assert doc["pairs"] == 3 and doc["heads"] == (le + 2 * ld) * H and len(doc["order"]) == doc["heads"]
    flat = {f"{kind}:{l + 1}.{h + 1}": doc["importance"][kind][l][h] for kind in sizes for l in range(sizes[kind]) for h in range(H)}
    assert [flat[name] for name in doc["order"]] == sorted(flat.values())  # least important first


def test_prune_steps_mask_the_least_important_heads(tiny_transformer_run, tmp_path):
    doc = _heads(tiny_transformer_run, tmp_path, "--prune", "4")
    steps = doc["pruning"]
    assert [s["masked"] for s in steps] == [*range(0, doc["heads"], 4), doc["heads"]]
    loaded = load_run(tiny_transformer_run)
    model, pairs = loaded.model.eval(), _pairs(loaded)
    for s in steps:  # each step's figures: the teacher-forced pass with the first k heads of the order masked
        masked = doc["order"][: s["masked"]]
        gates = {"encoder": torch.ones(2, 2), "decoder_self": torch.ones(2, 2), "cross": torch.ones(2, 2)}
        assert {kind: g.shape for kind, g in gates.items()} == {k: torch.Size((len(v), len(v[0]))) for k, v in doc["importance"].items()}
        for name in masked:
            kind, where = name.split(":")
            layer, head = map(int, where.split("."))
            gates[kind][layer - 1, head - 1] = 0.0
        b = collate(pairs, range(len(pairs)))
        with torch.no_grad():
            logits = model(b.src, b.src_keep, b.tgt_in, HeadMask(**gates))  # (B, T, V)
        keep = b.tgt_keep
        accuracy = 100.0 * float(((logits.argmax(-1) == b.tgt_out) & keep).sum()) / float(keep.sum())
        loss = float(F.cross_entropy(logits[keep], b.tgt_out[keep]))
        assert s["accuracy"] == pytest.approx(accuracy) and s["loss"] == pytest.approx(loss, rel=1e-5)


def test_sources_alone_are_scored_against_the_runs_own_output(tiny_transformer_run, tmp_path):
    data = tmp_path / "src.txt"
    data.write_text("t1 t2 t3\nt4 t5\n", encoding="utf-8")
    assert main(["heads", str(tiny_transformer_run), "--input", str(data), "--out", str(tmp_path / "out"), "--prune", "100"]) == 0
    doc = json.loads((tmp_path / "out" / "importance.json").read_text(encoding="utf-8"))
    loaded = load_run(tiny_transformer_run)
    v, d = loaded.vocabs, loaded.run.decode
    b = collate([(v.src_vocab.encode(line.split()), []) for line in ("t1 t2 t3", "t4 t5")], [0, 1])
    hyps = greedy(loaded.model.eval(), b.src, b.src_keep, max_len_a=d.max_len_a, max_len_b=d.max_len_b, bos=BOS, eos=EOS)
    # each greedy token is the argmax of its own prefix; only the EOS of an output cut at the step limit is not
    tokens = sum(len(h.tokens) + 1 for h in hyps)
    assert doc["pruning"][0]["accuracy"] == pytest.approx(100.0 * (tokens - sum(not h.finished for h in hyps)) / tokens)
    assert [s["masked"] for s in doc["pruning"]] == [0, doc["heads"]]


def test_importance_errors_are_one_line(tiny_rnn_run, tiny_sase_run, tmp_path, capsys):
    data = tmp_path / "src.txt"
    data.write_text("t1 t2\tt2 t1\n", encoding="utf-8")
    for run, words in ((tiny_rnn_run, "head importance needs a Transformer run"), (tiny_sase_run, "head importance needs a Transformer run")):
        assert main(["heads", str(run), "--input", str(data), "--out", str(tmp_path / "o"), "--importance"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err
    assert main(["heads", str(run), "--input", str(data), "--out", str(tmp_path / "o"), "--prune", "0"]) == 2
    assert not (tmp_path / "o").exists()


def test_a_family_without_pairs_is_refused_naming_those_with(tiny_transformer_run):
    from dataclasses import replace

    from attnkit.errors import AttnkitError
    from attnkit.sources.importance import run_importance

    loaded = load_run(tiny_transformer_run)
    loaded = replace(loaded, family=replace(loaded.family, pairs=None))
    with pytest.raises(AttnkitError, match=r"gives no source/target pairs to score its heads on \(translation, parsing runs do\)"):
        run_importance(loaded, ["t1 t2"], "text", "unused")
