#!/usr/bin/env python3
"""Intent Router entry point: `python run.py [--config PATH] [COMMAND] ...`; `python run.py COMMAND --help`.

Commands (the README's "Command line" section has them all, with their options):
  serve           serve HTTP: the JSON API, /mcp, /dashboard, /docs, /metrics (the default command)
  route           print the routing decision for a question (or, with --execute, the answer)
  validate        check all YAML; exit 1 with file:line messages on errors
  reindex         rebuild every template store from scratch
  mcp             serve the MCP tools over stdio (for desktop assistants)
  fit-thresholds  fit the confidence threshold and margin from labelled questions
  tune-encoder    tune the local encoder on the templates' examples (needs requirements-tune.txt)
"""

import sys

from server.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
