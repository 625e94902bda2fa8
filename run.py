#!/usr/bin/env python3
"""Intent Router entry point: `python run.py [serve|route|validate|reindex] --help`."""

import sys

from server.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
