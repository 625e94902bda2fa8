"""`python -m server.cli ...`: the same entry point as run.py (the background tune starts its child so)."""

import sys

from server.cli.main import main

sys.exit(main())
