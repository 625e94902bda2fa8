"""Encoder lanes open from the main session's graph; when that file has gone since the model loaded (its graph
directory deleted under the running process), the lanes build it in memory instead of failing to open."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from server.embedding.minilm import MiniLMModel


def test_lanes_open_after_the_graph_directory_is_deleted(tmp_path: Path, caplog):
    graphs = tmp_path / "models"
    model = MiniLMModel(graphs, threads=1)
    assert model.load_info.graph_path is not None and model.load_info.graph_path.exists()
    shutil.rmtree(graphs)
    assert model.set_lanes(1).result(120) == 1  # before the fix: "cannot open encoder lane 0", no lane
    assert "is gone; building it in memory" in caplog.text
    alone = model.encode(["where is my parcel"], 8)
    lane = model.questions.submit("where is my parcel").result(60)  # a lone question with lanes: any runner
    assert np.allclose(alone[0], lane, atol=1e-5)
    assert model.set_lanes(0).result(60) == 0
