"""A package of readers."""
from .base import Reader

__all__ = ["Reader"]
