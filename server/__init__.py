"""Intent Router: configuration-driven routing of questions to query templates over many data sources."""

import os

# One BLAS thread unless the environment says otherwise (read when numpy loads, so set before it does):
# the encoder's onnxruntime threads own the cores, and a multi-threaded OpenBLAS spins on them after
# every small product a request makes (at 16 concurrent clients on 2 cores its idle thread burnt
# 3.3 ms of CPU per question, more than the event loop's whole share).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
