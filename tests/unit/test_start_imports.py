"""Packages a warm start does not need stay unloaded: each was a measurable share of the start (issue 17)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running `code` (this checkout's `server`)."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_the_serve_path_loads_neither_redis_nor_sqlalchemy():
    """Redis only with a Redis setting; SQLAlchemy once the routing log opens its database (after listening)."""
    loaded = modules_after("import server.cli.main, server.cli.serve, server.runtime.build, server.web.app")
    assert "aiohttp.web" in loaded  # the path was imported
    assert not {m for m in loaded if m.split(".")[0] in ("redis", "sqlalchemy")}


def test_a_redis_link_loads_the_client_itself():
    loaded = modules_after(
        "import logging\nfrom server.shared_redis import RedisLink\n"
        "RedisLink('redis://127.0.0.1:1/0', 0.1, 'cache', 'local only', logging.getLogger('t'))"
    )
    assert "redis.asyncio" in loaded


def test_the_int8_first_pass_needs_neither_onnx_nor_numpy_random():
    loaded = modules_after(
        "import numpy as np\n"
        "from server.stores.bounded_scores import build_int8_pass, quantise\n"
        "m = (np.arange(5000 * 384, dtype=np.float32).reshape(5000, 384) % 7 - 3) / 10\n"
        "assert build_int8_pass([quantise(m, np.arange(0, 5001, 10))]) is not None"
    )
    assert "onnxruntime" in loaded
    assert "onnx" not in loaded and "numpy.random" not in loaded


def test_serving_never_imports_the_training_runtime():
    """JAX is an optional extra of tune-encoder (requirements-tune.txt): serving runs without it, tuned or not."""
    loaded = modules_after(
        "import server.cli.main, server.cli.serve, server.runtime.build, server.web.app, server.runtime.encoder_check"
    )
    assert "server.runtime.encoder_check" in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("jax", "jaxlib")}
