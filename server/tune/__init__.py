"""Tuning the local encoder on the templates (`run.py tune-encoder`); needs requirements-tune.txt (JAX)."""

import os

# CPU only: without this JAX looks for TPU and GPU plugins first and logs that it found none.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
