"""``gluon.data.vision``: image datasets and transforms."""

from . import transforms
from .datasets import CIFAR10, CIFAR100, MNIST, FashionMNIST, ImageFolderDataset, ImageRecordDataset

__all__ = ["transforms", "CIFAR10", "CIFAR100", "MNIST", "FashionMNIST", "ImageFolderDataset",
           "ImageRecordDataset"]
