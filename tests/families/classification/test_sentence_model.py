"""Self-attentive sentence classifier (Lin et al., 2017): the penalty in the loss, padding
invariance of every encoder/pooling option, the baselines' and pair modes' features recomputed by
hand, a keyword task it must learn (and attend to), and word-vector loading."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from attnkit.attention.structured import frobenius_penalty
from attnkit.data.batching import pad as pad_ids
from attnkit.errors import DataError
from attnkit.families.classification.model import SelfAttentiveClassifier, SentenceOutput, load_word_vectors

V, C = 30, 3
SIZES = dict(embed_dim=8, u=6, d_a=5, r=3, mlp_hidden=10, dropout=0.0)
OPTIONS = {
    "bilstm-attention": dict(encoder="bilstm", pooling="attention"),
    "bilstm-mean": dict(encoder="bilstm", pooling="mean"),
    "bilstm-last": dict(encoder="bilstm", pooling="last"),
    "bag-of-embeddings": dict(encoder="none", pooling="mean"),
    "embeddings-attention": dict(encoder="none", pooling="attention"),
    "transformer-mean": dict(encoder="transformer", pooling="mean", heads=2, d_ff=16, encoder_dropout=0.0),
    "transformer-attention": dict(encoder="transformer", pooling="attention", heads=2, d_ff=16, encoder_dropout=0.0),
}


@pytest.fixture(autouse=True)
def _seed_and_one_thread():
    """Seed every test and run it on one intra-op thread (tiny tensors; see tests/attention/conftest.py)."""
    torch.manual_seed(0)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny(**kw) -> SelfAttentiveClassifier:
    return SelfAttentiveClassifier(vocab_size=V, num_classes=C, **{**SIZES, **kw}).eval()


SENTENCES = [[5, 9, 11, 4, 7], [8, 12, 6], [13]]  # lengths 5, 3, 1


def test_penalty_of_the_papers_two_examples_enters_the_loss():
    model = tiny()
    r, s = 4, 6
    identical = torch.zeros(1, r, s)
    identical[..., 2] = 1.0  # every hop one-hot on the same token: A A^T = all ones -> P = r(r-1)
    distinct = torch.eye(s)[:r].unsqueeze(0)  # one-hot on different tokens: A A^T = I -> P = 0
    out = SentenceOutput(torch.zeros(2, C), torch.cat([identical, distinct]), torch.zeros(2, r, 12))
    labels = torch.tensor([0, 1])
    loss = model.loss(out, labels, coef=0.5)
    assert loss.item() == pytest.approx(math.log(C) + 0.5 * (r * (r - 1) + 0.0) / 2)  # CE of zero logits = log C


def test_identical_hops_of_a_model_give_the_closed_form_penalty():
    model = tiny()
    with torch.no_grad():
        model.attention.w_s2.weight[:] = model.attention.w_s2.weight[0]  # every hop the same query
    tokens, keep = pad_ids(SENTENCES)
    out = model(tokens, keep)
    a = out.attention  # (B, R, S)
    torch.testing.assert_close(a, a[:, :1].expand_as(a))
    # A A^T = q J with q = ||a||^2, so ||q J - I||_F^2 = r (q - 1)^2 + r (r - 1) q^2.
    q, r = a[:, 0].pow(2).sum(-1), a.size(1)
    expected = (r * (q - 1) ** 2 + r * (r - 1) * q**2).mean()
    labels = torch.tensor([0, 1, 2])
    penalty = model.loss(out, labels, coef=1.0) - model.loss(out, labels, coef=0.0)
    torch.testing.assert_close(penalty, expected)
    assert penalty >= 2.0  # the one-token sentence alone has P = r(r - 1) = 6, a third of it in the mean


@pytest.mark.parametrize("option", OPTIONS)
def test_padding_changes_nothing(option):
    model = tiny(**OPTIONS[option])
    tokens, keep = pad_ids(SENTENCES)  # (3, 5) with 0, 2 and 4 padding positions
    tokens, keep = torch.cat([tokens, torch.zeros(3, 2, dtype=torch.long)], 1), torch.cat([keep, torch.zeros(3, 2, dtype=torch.bool)], 1)
    with torch.no_grad():
        batch = model(tokens, keep)
        for b, ids in enumerate(SENTENCES):
            alone = model(torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.bool))
            torch.testing.assert_close(batch.logits[b], alone.logits[0], atol=1e-5, rtol=0)
            torch.testing.assert_close(batch.embedding[b], alone.embedding[0], atol=1e-5, rtol=0)
            if OPTIONS[option]["pooling"] == "attention":
                torch.testing.assert_close(batch.attention[b, :, : len(ids)], alone.attention[0], atol=1e-5, rtol=0)
                assert (batch.attention[b, :, len(ids) :] == 0).all()
            else:
                assert batch.attention is None


def test_shapes_of_the_sentence_matrix_and_pooled_vectors():
    tokens, keep = pad_ids(SENTENCES)
    out = tiny()(tokens, keep)
    assert out.logits.shape == (3, C)
    assert out.embedding.shape == (3, SIZES["r"], 2 * SIZES["u"])  # M (B, r, 2u)
    assert out.attention.shape == (3, SIZES["r"], 5)  # A (B, r, n)
    assert tiny(pooling="mean")(tokens, keep).embedding.shape == (3, 2 * SIZES["u"])
    assert tiny(encoder="none", pooling="mean")(tokens, keep).embedding.shape == (3, SIZES["embed_dim"])


def test_transformer_encoder_returns_each_layers_attention_rows_summing_to_one_over_the_words():
    tokens, keep = pad_ids(SENTENCES)  # (3, 5)
    model = tiny(**OPTIONS["transformer-mean"], layers=3)
    with torch.no_grad():
        out = model(tokens, keep, need_weights=True)
        plain = model(tokens, keep)
    assert out.embedding.shape == (3, SIZES["embed_dim"]) and plain.encoder == []
    torch.testing.assert_close(out.logits, plain.logits)  # the weights are read, not changed
    assert len(out.encoder) == 3 and all(w.shape == (3, 2, 5, 5) for w in out.encoder)  # (B, heads, S, S) per layer
    for w in out.encoder:
        torch.testing.assert_close(w.sum(-1), torch.ones(3, 2, 5))
        assert (w.masked_fill(keep[:, None, None, :], 0.0) == 0).all()  # no weight on padding
    with pytest.raises(ValueError, match=r"heads \(3\) must divide embed_dim \(8\)"):
        tiny(encoder="transformer", heads=3)


def test_transformer_encoder_learns_the_keyword_task():
    g = torch.Generator().manual_seed(0)
    model = SelfAttentiveClassifier(vocab_size=26, num_classes=2, embed_dim=16, mlp_hidden=32, dropout=0.0, encoder="transformer",
                                    pooling="mean", layers=1, heads=2, d_ff=32, encoder_dropout=0.0)  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    tokens, keep, labels, _ = keyword_batch(300, g)
    with torch.no_grad():
        before = model.loss(model(tokens, keep), labels, coef=0.0).item()
    model.train()
    for _ in range(60):
        t, k, y, _ = keyword_batch(64, g)
        loss = model.loss(model(t, k), y, coef=0.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        out = model(tokens, keep)
    accuracy = (out.logits.argmax(-1) == labels).float().mean().item()
    assert model.loss(out, labels, coef=0.0).item() < before / 2 and accuracy >= 0.95, (before, accuracy)


def test_mean_and_last_baselines_recomputed_by_hand():
    u = SIZES["u"]
    tokens, keep = pad_ids(SENTENCES)
    for pooling in ("mean", "last"):
        model = tiny(pooling=pooling)
        with torch.no_grad():
            got = model(tokens, keep).embedding  # (B, 2u)
            for b, ids in enumerate(SENTENCES):
                h = model.lstm(model.embedding(torch.tensor([ids])))[0][0]  # (n, 2u), no padding at all
                want = h.mean(0) if pooling == "mean" else torch.cat([h[-1, :u], h[0, u:]])  # fwd at end, bwd at start
                torch.testing.assert_close(got[b], want, atol=1e-6, rtol=0)
    bag = tiny(encoder="none", pooling="mean")
    with torch.no_grad():
        torch.testing.assert_close(bag(tokens, keep).embedding[1], bag.embedding(torch.tensor(SENTENCES[1])).mean(0))


HYPOTHESES = [[7, 8], [9, 10, 11, 12], [4]]  # one per sentence of SENTENCES


def pair_forward(model):
    """The model on the pairs (SENTENCES, HYPOTHESES), without gradients: its output and the classifier's input."""
    seen = []
    model.classifier.register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    with torch.no_grad():
        out = model(*pad_ids(SENTENCES), *pad_ids(HYPOTHESES))
    return out, seen[0]


@pytest.mark.parametrize("pair", ["factor", "concat"])
def test_pair_features_recomputed_by_hand(pair):
    model = tiny(pair=pair, d_f=4)
    out, features = pair_forward(model)
    with torch.no_grad():
        m_p, m_h = model.embed(*pad_ids(SENTENCES))[0], model.embed(*pad_ids(HYPOTHESES))[0]  # same encoder, (B, r, 2u)
    torch.testing.assert_close(out.embedding, m_p)
    torch.testing.assert_close(out.embedding2, m_h)
    if pair == "factor":  # F_r[i] = (M_h[i] W_fh[i]) * (M_p[i] W_fp[i]) per hop i
        want = torch.cat([(m_h[:, i] @ model.w_fh[i]) * (m_p[:, i] @ model.w_fp[i]) for i in range(SIZES["r"])], 1)
    else:
        u, v = m_p.flatten(1), m_h.flatten(1)
        want = torch.cat([u, v, (u - v).abs(), u * v], 1)
    torch.testing.assert_close(features, want.detach())
    labels = torch.tensor([0, 1, 2])
    both = frobenius_penalty(out.attention).mean() + frobenius_penalty(out.attention2).mean()
    torch.testing.assert_close(model.loss(out, labels, 1.0) - model.loss(out, labels, 0.0), both)


def test_attend_pair_recomputed_by_hand():
    """Jain & Wallace's entailment model: a = softmax(v^T tanh(W q + U h_t)) over the premise's states, q the
    hypothesis's final states [h_fwd; h_bwd], the classifier reads [a H; q]; padding changes nothing."""
    model = tiny(pair="attend", r=1)
    out, features = pair_forward(model)
    with torch.no_grad():
        for b, (ids, hyp) in enumerate(zip(SENTENCES, HYPOTHESES)):
            _, (h_n, _) = model.lstm(model.embedding(torch.tensor([hyp])))  # (2, 1, u): forward, backward final states
            q = torch.cat([h_n[0, 0], h_n[1, 0]])  # (2u,)
            h = model.lstm(model.embedding(torch.tensor([ids])))[0][0]  # (n, 2u)
            att = model.attention
            a = (att.v_a(torch.tanh(att.w_a(q) + att.u_a(h))).squeeze(-1)).softmax(0)  # (n,)
            torch.testing.assert_close(out.attention[b, 0, : len(ids)], a, atol=1e-5, rtol=0)
            torch.testing.assert_close(features[b], torch.cat([a @ h, q]), atol=1e-5, rtol=0)
    assert out.attention.shape == (3, 1, 5) and out.attention2 is None
    with pytest.raises(ValueError, match="pair='attend' is one attention"):
        tiny(pair="attend", r=2)


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="pooling must be one of attention, mean, last"):
        tiny(pooling="max")
    with pytest.raises(ValueError, match="needs encoder='bilstm'"):
        tiny(encoder="none", pooling="last")
    tokens, keep = pad_ids(SENTENCES)
    with pytest.raises(ValueError, match="needs the hypothesis"):
        tiny(pair="concat")(tokens, keep)


GOOD, BAD = 24, 25  # the keywords; 4..23 are filler words


def keyword_batch(n: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sentences of 4-10 filler words with one keyword at a random place; the keyword is the label."""
    lengths = torch.randint(4, 11, (n,), generator=g)
    labels = torch.randint(0, 2, (n,), generator=g)
    where = (torch.rand(n, generator=g) * lengths).long()  # (B,)
    sentences = [torch.randint(4, 24, (int(n_),), generator=g).tolist() for n_ in lengths]
    for ids, at, label in zip(sentences, where.tolist(), labels.tolist()):
        ids[at] = GOOD if label else BAD
    tokens, keep = pad_ids(sentences)
    return tokens, keep, labels, where


def test_learns_a_keyword_task_and_attends_to_the_keyword():
    g = torch.Generator().manual_seed(0)
    model = SelfAttentiveClassifier(vocab_size=26, num_classes=2, embed_dim=16, u=16, d_a=16, r=2, mlp_hidden=32, dropout=0.0)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    model.train()
    for _ in range(150):
        tokens, keep, labels, _ = keyword_batch(64, g)
        loss = model.loss(model(tokens, keep), labels, coef=0.01)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    tokens, keep, labels, where = keyword_batch(300, g)
    with torch.no_grad():
        out = model(tokens, keep)
    accuracy = (out.logits.argmax(-1) == labels).float().mean().item()
    attended = out.attention.sum(1).argmax(-1)  # (B,) the token with the most weight, summed over hops
    on_keyword = (attended == where).float().mean().item()
    assert accuracy >= 0.95, accuracy
    assert on_keyword >= 0.9, on_keyword


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


VOCAB = ["<pad>", "<unk>", "<s>", "</s>", "good", "bad", "film"]


@pytest.mark.parametrize("header", ["3 4\n", ""])  # word2vec text (with header) and GloVe (without)
def test_word_vectors_fill_matching_rows(tmp_path, header):
    path = write(tmp_path / "vectors.txt", header + "good 1 2 3 4\nother 9 9 9 9\nfilm -1 0.5 0 2e-1\n")
    embedding = torch.nn.Embedding(len(VOCAB), 4, padding_idx=0)
    before = embedding.weight.detach().clone()
    assert load_word_vectors(path, VOCAB, embedding) == 2
    torch.testing.assert_close(embedding.weight[4], torch.tensor([1.0, 2.0, 3.0, 4.0]))
    torch.testing.assert_close(embedding.weight[6], torch.tensor([-1.0, 0.5, 0.0, 0.2]))
    rest = [0, 1, 2, 3, 5]
    torch.testing.assert_close(embedding.weight[rest], before[rest])  # padding and unmatched rows untouched


@pytest.mark.parametrize(
    "text, message",
    [
        ("3 5\ngood 1 2 3 4 5\n", r"vectors\.txt, line 1: vectors of dimension 5, the embedding has 4"),
        ("good 1 2 3\n", r"vectors\.txt, line 1: vectors of dimension 3, the embedding has 4"),
        ("good 1 2 3 4\nfilm 1 2\n", r"vectors\.txt, line 2: 2 values, expected a word and 4 values"),
        ("bad 1 2 3 4\ngood 1 two 3 4\n", r"vectors\.txt, line 2: malformed vector \(could not convert string to float: 'two'\)"),
    ],
)
def test_bad_word_vector_files_are_refused(tmp_path, text, message):
    embedding = torch.nn.Embedding(len(VOCAB), 4, padding_idx=0)
    with pytest.raises(DataError, match=message):
        load_word_vectors(write(tmp_path / "vectors.txt", text), VOCAB, embedding)


def test_word_vectors_path_may_start_at_home_and_a_missing_file_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    write(tmp_path / "vectors.txt", "bad 1 2 3 4\n")
    embedding = torch.nn.Embedding(len(VOCAB), 4, padding_idx=0)
    assert load_word_vectors("~/vectors.txt", VOCAB, embedding) == 1
    torch.testing.assert_close(embedding.weight[5], torch.tensor([1.0, 2.0, 3.0, 4.0]))
    with pytest.raises(DataError, match=rf"^{tmp_path}/glove\.txt: no such file$"):
        load_word_vectors("~/glove.txt", VOCAB, embedding)
