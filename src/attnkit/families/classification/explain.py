"""`attnkit explain`: the paper's picture of a self-attentive sentence embedding (Lin et al. 2017, Fig. 2
and 5), each word shaded by attention, over the mean of the r hops and for each hop.

The family draws neither picture itself. `write_png` hands each sentence's hops (`explore.hop_views`,
the view the record holds) to `viz.views.plot_hops_view`, the one drawing of the hops in a file (as
`attnkit plot --view hops`), one panel a sentence. The HTML page is the core's report page
(`Family.add_commands` hands the verb `families.protocol.WritePage`): the records of the one road,
drawn by the family's renderer (`static/classify-view.js`), as `attnkit report` and `serve` draw them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attnkit.families.classification.explore import HOPS, hop_views
from attnkit.families.classification.infer import ClassifyResult
from attnkit.viz import views


def hops_map(result: ClassifyResult) -> views.HopsMap:
    """The hops of one classified sentence (R, n) with their labels, titled by the class and probabilities."""
    (view,) = [v for v in hop_views(result) if v.kind == HOPS.name]
    return views.HopsMap(view.layers[0][0].numpy(), view.rows, view.cols, view.note or "")  # (R, n): one layer of one head


def write_png(path: str | Path, results: Sequence[ClassifyResult]) -> Path:
    """One panel a sentence (`viz.views.plot_hops_view`), written atomically."""
    return views.plot_hops_view([hops_map(r) for r in results], path)
