"""Testing helpers shipped with the package (the way Datasette ships `datasette.testing`).

Loopback servers and stand-ins (PostgreSQL/MariaDB schemas seeded from the example data, SecantusDB for
MongoDB, a JSON API, a GraphQL API, Elasticsearch, Anthropic and Cohere stand-ins), config-tree writers,
the demo tree and small harnesses. The test suite, the benchmarks and scripts/serve_example_apis.py use
them; the server itself never imports this package.

Some modules need the development requirements (`pip install -r requirements-dev.txt`): `graphql_api`
imports strawberry, `mongo.start_secantus` imports SecantusDB and `servers.missing` imports pytest. Each
imports its dev-only dependency itself (or inside the function that needs it), so importing one helper
does not pull in the others.
"""
