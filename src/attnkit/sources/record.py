"""The one road from a model to every output: `explain_inputs`, one `ExplainedInput` per input.

Every output of attnkit's explorer is made from what this returns, for an attnkit run and a Hugging
Face model alike: the `report` page, `serve`'s `/attention` (and its JSON), `attnkit.show`
(`sources.page`, through `viz.records`), `attnkit attention`'s npz (`sources.npz.write_record`), `plot`
and `plot --view` (`viz.plot`, `viz.views`), and what `heads` and `faithfulness` read of the attention
(`commands.analysis`, `sources.scored`). The source reads its inputs (`Source.read`: a run through its
family's `Family.explain`, a Hugging Face model through hooks) and hands every layer to a `Collector`,
which keeps it as the output needs (`sources.store`) and folds it into the summaries
(`Collector.summary_views`). Nothing else makes a record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from attnkit.sources.options import AttentionOptions
from attnkit.sources.store import FloatStore, Store

if TYPE_CHECKING:
    from attnkit.sources.source import Source
    from attnkit.viz.attention_view import ExplainedInput


def explain_inputs(source: Source, lines: Sequence[str | None], options: AttentionOptions = AttentionOptions(),
                   store: Callable[[], Store] = FloatStore) -> list[ExplainedInput]:  # fmt: skip
    """Per line (None: `options.image` alone), its record through `source`; each input's layers kept by a new `store()`."""
    return source.read(list(lines), options, store)
