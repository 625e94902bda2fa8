"""Where each template's example vectors sit in its store's pack, for the intent model to read them there.

The intent model scores a question against every example's raw vector, which the composite's in-memory
stores already hold in their packs (stores/packed.py); reading them there instead of a copy of its own
saves 1.5 KB per MiniLM example (issue 34). `IntentModel.share` takes only rows that hold exactly the
vectors it was fitted on, so a store that changed since (an edit while the model refits) keeps its own.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ...stores.memory import MemoryTemplateStore


def pack_rows(children: Sequence[Any]) -> dict[Hashable, tuple[np.ndarray, np.ndarray]]:
    """Template key (child name, template id) -> (its store's packed matrix, the rows of its examples): a
    template's texts are its description, then each example (Template.embedding_texts), so the rows after
    the first; a template without examples has the description's row alone (what the model uses then)."""
    found: dict[Hashable, tuple[np.ndarray, np.ndarray]] = {}
    for child in children:
        store = getattr(child, "store", None)
        pack = store.packed() if isinstance(store, MemoryTemplateStore) else None
        if pack is None:
            continue
        for t, template_id in enumerate(pack.ids):
            lo, hi = int(pack.bounds[t]), int(pack.bounds[t + 1])
            found[(child.name, template_id)] = (pack.matrix, np.arange(lo + 1 if hi - lo > 1 else lo, hi))
    return found
