"""best_tokens returns what torch.topk (and for k = 1, argmax) return, ties included; token_log_probs."""

from __future__ import annotations

import pytest
import torch

from attnkit.decode.scores import BLOCK, best_tokens, token_log_probs


@pytest.fixture(autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def assert_as_topk(logits: torch.Tensor, k: int) -> None:
    values, tokens = best_tokens(logits, k)
    expected = logits.topk(k, dim=1)
    assert torch.equal(tokens, expected.indices)
    torch.testing.assert_close(values, expected.values, atol=0, rtol=0, equal_nan=True)
    if k == 1:
        assert torch.equal(tokens.squeeze(1), logits.argmax(dim=1))


@pytest.mark.parametrize("vocab", [7, 130, 1000, 8000, 8003, BLOCK * 40 + 1])
@pytest.mark.parametrize("k", [1, 2, 10, 42])
def test_equals_topk_on_random_logits(vocab, k):
    if k > vocab:
        pytest.skip("k > V")
    logits = torch.randn(37, vocab, generator=torch.Generator().manual_seed(vocab + k)) * 4
    assert_as_topk(logits, k)


@pytest.mark.parametrize("k", [1, 2, 5, 10])
def test_ties_give_topk_and_argmax_order(k):
    vocab = BLOCK * 30 + 17  # a tail block of 17
    logits = torch.randn(8, vocab, generator=torch.Generator().manual_seed(k))
    logits[0, [5, 900, 1900]] = 9.0  # the maximum three times, in three blocks
    logits[1, [70, 71]] = 9.0  # twice in one block
    logits[2, [3, vocab - 1]] = 9.0  # in the first block and in the tail
    logits[3, vocab - 2 :] = 9.0  # only in the tail
    logits[4] = 0.0  # all equal
    logits[5, ::3] = float("-inf")  # masked symbols, as constrained decoding writes
    logits[5, 1:40] = float("-inf")
    logits[6, [10, 1800]] = float("nan")
    logits[7] = torch.randint(0, 3, (vocab,), generator=torch.Generator().manual_seed(9)).float()  # many ties
    assert_as_topk(logits, k)


def test_ties_below_the_kth_value_do_not_matter():
    logits = torch.zeros(2, BLOCK * 20)
    logits[:, [100, 500, 700]] = torch.tensor([3.0, 2.0, 1.0])  # three distinct, then 1,277 zeros
    values, tokens = best_tokens(logits, 3)
    assert tokens.tolist() == [[100, 500, 700]] * 2
    assert values.tolist() == [[3.0, 2.0, 1.0]] * 2


def test_token_log_probs_is_log_softmax_at_the_tokens():
    logits = torch.randn(4, 300).bfloat16()
    tokens = torch.tensor([[0, 5], [299, 1], [7, 7], [100, 3]])
    log_probs = token_log_probs(logits, tokens)
    assert log_probs.dtype == torch.float32 and log_probs.shape == (4, 2)
    torch.testing.assert_close(log_probs, logits.float().log_softmax(dim=1).gather(1, tokens), atol=0, rtol=0)
    assert (log_probs <= 0).all()
