"""Routing: what a question is asked of (routable.py: a data source's RoutingSource, a composite), gather
candidates from template stores, score them in stages, decide, explain."""
