"""``mx.gluon.contrib.nn``: Concurrent/HybridConcurrent, Identity, PixelShuffle1D/2D/3D,
SyncBatchNorm (one device) and SparseEmbedding (needs sparse storage)."""

from .basic_layers import (
    Concurrent,
    HybridConcurrent,
    Identity,
    PixelShuffle1D,
    PixelShuffle2D,
    PixelShuffle3D,
    SparseEmbedding,
    SyncBatchNorm,
)

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm",
           "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]
