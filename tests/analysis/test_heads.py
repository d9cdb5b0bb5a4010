"""Head statistics (Clark et al. 2019) on constructed attention."""

import math

import pytest
import torch

from attnkit.analysis.heads import head_statistics, is_punctuation
from attnkit.errors import AttnkitError


def previous_head(T):
    """Every query attends to the previous token; the first one to itself."""
    a = torch.zeros(T, T)
    a[0, 0] = 1.0
    a[torch.arange(1, T), torch.arange(T - 1)] = 1.0
    return a


def next_head(T):
    a = torch.zeros(T, T)
    a[torch.arange(T - 1), torch.arange(1, T)] = 1.0
    a[T - 1, T - 1] = 1.0
    return a


def uniform_head(T):
    return torch.full((T, T), 1.0 / T)


def first_head(T):
    a = torch.zeros(T, T)
    a[:, 0] = 1.0
    return a


def sentence(tokens):
    T = len(tokens)
    layer0 = torch.stack([previous_head(T), next_head(T)])  # (H=2, T, T)
    layer1 = torch.stack([uniform_head(T), first_head(T)])
    return [layer0, layer1], tokens


SENTENCES = [sentence(["<s>", "a", "b", ",", "c", "</s>"]), sentence(["<s>", "x", ".", "</s>"])]


def test_previous_and_next_heads_read_one():
    m = head_statistics(SENTENCES).means()
    assert m["previous"][0, 0] == pytest.approx(1.0)
    assert m["next"][0, 1] == pytest.approx(1.0)
    assert m["previous"][0, 1] == pytest.approx(0.0)
    # The uniform head puts 1/T on the previous token: (5 * 1/6 + 3 * 1/4) / 8 queries.
    assert m["previous"][1, 0] == pytest.approx((5 / 6 + 3 / 4) / 8)


def test_entropy_distance_first_separator_punctuation():
    m = head_statistics(SENTENCES, separators=["</s>"]).means()
    # Entropy: one-hot rows have 0; uniform rows log T, averaged over the 10 queries (6 + 4).
    assert m["entropy"][0, 0] == pytest.approx(0.0, abs=1e-9)
    assert m["entropy"][1, 0] == pytest.approx((6 * math.log(6) + 4 * math.log(4)) / 10)
    # Distance of the previous-token head: 1 for every query but the first.
    assert m["distance"][0, 0] == pytest.approx((5 + 3) / 10)
    assert m["first"][1, 1] == pytest.approx(1.0)
    # The next-token head reaches </s> from the last two queries of each sentence: 4 of 10.
    assert m["separator"][0, 1] == pytest.approx(4 / 10)
    # Punctuation (',' and '.'): the uniform head gives 1/T to each: (6 * 1/6 + 4 * 1/4) / 10.
    assert m["punctuation"][1, 0] == pytest.approx(2 / 10)


def test_separator_defaults_to_the_last_token_and_json():
    stats = head_statistics(SENTENCES)
    assert stats.means()["separator"][0, 1] == pytest.approx(4 / 10)
    doc = stats.to_json()
    assert doc["sentences"] == 2 and doc["queries"] == 10 and doc["separators"] == "last token"
    assert doc["stats"]["previous"][0][0] == 1.0


def test_punctuation_strips_subword_markers():
    assert is_punctuation("\u2581,") and is_punctuation("...") and is_punctuation("@@-")
    assert not is_punctuation("\u2581") and not is_punctuation("a.") and not is_punctuation("##s")


def test_shape_mismatch_is_one_line():
    layers, tokens = SENTENCES[0]
    with pytest.raises(AttnkitError, match="does not fit 2 layers x 2 heads x 5 tokens"):
        head_statistics([(layers, tokens[:5])])
