"""Moved: the testing helpers live in the package now, `server.testing` (same module names; `server` is
`server.testing.app` and `demo_tree` is `server.testing.demo`). This stub only says so while branches
started before the move are rebased; delete it once none import tests.support."""

raise ImportError(
    "tests.support moved to server.testing: e.g. `from server.testing.configs import people_tree`, "
    "`from server.testing.app import running_app`, `from server.testing.demo import seed_demo_tree`; "
    "the pg_database/mariadb_database/mongo_server fixtures come from tests/conftest.py (no re-binding)"
)
