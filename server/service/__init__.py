"""Answering questions: route, extract parameters, execute, and describe what happened."""
