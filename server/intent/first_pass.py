"""The intent model's example products from the search's int8 first pass, exact only where they can matter.

On the request path the intent model needs every question's dot product with every example (its kNN
terms are per template, and each question's scores are standardised over all templates). Read in float32
that is the whole matrix per question: at 1,000 templates x 20 examples 1.8-2.0 ms of one core per
question in batches of one or two (what 8 concurrent clients give), the largest part of the stage and
the reason the event loop's scoring threads fought the encoder for memory bandwidth (issue 34). The
composite's stacked search already holds the same vectors as int8 codes in one onnxruntime session
(stores/bounded_scores.py), whose pass reads a quarter of the bytes (0.1 ms a question), and it has just run
that pass for the same questions: the view keeps the last questions' products (`StackedView.products`), so
the intent model mostly reads them instead of running the pass again.

So: every example's product is the int8 estimate, within its proven bound of the exact value (~0.001
typical), and the examples of the templates the caller names (the stage's candidates: the only templates
it reports scores for) are scored in float32 from their rows, so their kNN terms are what the float32 path
gives (up to the last bits BLAS sums differently). The other templates' estimates only enter the
per-question standardisation over all templates and the margin to the best other template: on 128 questions
at 1,000 templates every question's best template was the same, and its calibrated confidence moved by at
most 0.0006. The exact part costs candidates x examples rows, whatever the number of templates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..stores.bounded_scores import query_of
from ..stores.stacked import StackedView
from .example_rows import ExampleRows


@dataclass(frozen=True, eq=False)
class FirstPass:
    """A stacked view's int8 pass read for one model's examples: example i is row `rows[i]` of the view."""

    view: StackedView
    examples: ExampleRows
    rows: np.ndarray
    scale: np.ndarray  # the int8 pass's code scale of each example's row: estimate = product * sq * scale

    @classmethod
    def of(cls, view: StackedView | None, examples: ExampleRows) -> FirstPass | None:
        """The pass for these examples when the view has an int8 pass and holds every one of them (the
        model reads all its rows from the view's packs); else None (the model multiplies in float32)."""
        if view is None or view.int8 is None:
            return None
        offsets = {id(pack.matrix): int(start) for pack, start in zip(view.packs, view.vector_starts, strict=False)}
        if any(id(m) not in offsets for m in examples.matrices):
            return None
        rows = examples.placed(np.arange(len(examples)), offsets)
        return cls(view, examples, rows, view.int8.scale[rows])

    def dots(self, queries: np.ndarray, exact: Sequence[np.ndarray]) -> np.ndarray:
        """(questions, examples) float32: each example's int8 estimate, exact at the example positions
        `exact[i]` of question i (above)."""
        int8 = self.view.int8
        assert int8 is not None
        asked = [query_of(q) for q in np.asarray(queries, np.float32)]
        out = np.zeros((len(asked), len(self.rows)), np.float32)
        live = [i for i, query in enumerate(asked) if query.norm != 0]  # a zero question: every product is 0
        if not live:
            return out
        products = self.view.products([asked[i] for i in live])  # those the search just ran, mostly
        for row, i in enumerate(live):
            sq = asked[i].int8()[1]
            np.multiply(products[row][self.rows], sq * self.scale, out=out[i], casting="same_kind")  # Int8Pass.bounds
            wanted = np.asarray(exact[i], np.int64)
            if len(wanted):
                out[i, wanted] = self.examples.rows(wanted) @ asked[i].q32
        return out
