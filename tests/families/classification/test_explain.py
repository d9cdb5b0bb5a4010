"""The explain page: words shaded by attention summed over hops and per hop, escaped, offline."""

from attnkit.families.classification.explain import hop_sums, render_html, write_png
from attnkit.families.classification.infer import ClassifyResult

RESULT = ClassifyResult("pos", {"neg": 0.25, "pos": 0.75}, ["a", "<b>", "c"], [[0.5, 0.5, 0.0], [0.0, 0.9, 0.1]])


def test_summed_and_per_hop_shading_relative_to_the_row_maximum():
    assert hop_sums(RESULT.attention) == [0.5, 1.4, 0.1]
    page = render_html([RESULT], title="t & t")
    # Sum row: 0.5 / 1.4, 1.4 / 1.4, 0.1 / 1.4; hop 2: 0, 0.9 / 0.9, 0.1 / 0.9.
    for alpha, word in (("0.357", "a"), ("1.000", "&lt;b&gt;"), ("0.071", "c"), ("0.111", "c")):
        assert f'rgba(220, 40, 40, {alpha})" title' in page and f">{word}</span>" in page
    assert "<title>t &amp; t</title>" in page and "pos</span> <span class='probs'>(neg 0.250, pos 0.750)" in page
    assert page.count("<b>hop ") == 2 and "<script" not in page and "http" not in page


def test_png(tmp_path):
    write_png(tmp_path / "e.png", [RESULT, RESULT])
    assert (tmp_path / "e.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
