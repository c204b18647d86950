"""``gluon.model_zoo``: predefined vision models and the store of their pretrained weights."""

from . import model_store, vision

__all__ = ["model_store", "vision"]
