"""Scoring stages that run after the embedding search (string similarity, reranking, ...)."""

from .base import ScoringStage, StageReport

__all__ = ["ScoringStage", "StageReport"]
