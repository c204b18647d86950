"""Sentence encoding and the bucketing iterator of the legacy ``mx.rnn`` API."""

import bisect
import random

import numpy as np

from .. import ndarray
from ..io import DataBatch, DataDesc, DataIter


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key="\n", start_label=0,
                     unknown_token=None):
    """Maps each word to an integer id. With ``vocab=None`` a vocabulary is built (ids from
    ``start_label``, skipping ``invalid_label``, which ``invalid_key`` maps to); with a given
    vocabulary an unknown word is an error unless ``unknown_token`` names its stand-in.
    Returns ``(encoded sentences, vocab)``."""
    idx = start_label
    if vocab is None:
        vocab = {invalid_key: invalid_label}
        new_vocab = True
    else:
        new_vocab = False
    res = []
    for sent in sentences:
        coded = []
        for word in sent:
            if word not in vocab:
                if not new_vocab and unknown_token is None:
                    raise KeyError(f"encode_sentences: unknown token {word!r} not in the given "
                                   "vocabulary (pass unknown_token= to map unknown words)")
                if not new_vocab:
                    word = unknown_token
                else:
                    if idx == invalid_label:
                        idx += 1
                    vocab[word] = idx
                    idx += 1
            coded.append(vocab[word])
        res.append(coded)
    return res, vocab


class BucketSentenceIter(DataIter):
    """Batches of equal-length (padded) sentences for a BucketingModule: each sentence goes to
    the smallest bucket that holds it (longer ones are discarded), padded with ``invalid_label``;
    the label is the sentence shifted left by one. ``layout`` is ``NT`` or ``TN``."""

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1, data_name="data",
                 label_name="softmax_label", dtype="float32", layout="NT"):
        super().__init__()
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [i for i, n in enumerate(counts) if n >= batch_size]
        buckets = sorted(buckets)
        if not buckets:
            raise ValueError("BucketSentenceIter: no bucket holds a full batch; pass buckets= "
                             "or a smaller batch_size")
        self.data = [[] for _ in buckets]
        ndiscard = 0
        for sent in sentences:
            b = bisect.bisect_left(buckets, len(sent))
            if b == len(buckets):
                ndiscard += 1
                continue
            buff = np.full((buckets[b],), invalid_label, dtype=dtype)
            buff[:len(sent)] = sent
            self.data[b].append(buff)
        self.data = [np.asarray(d, dtype=dtype).reshape(-1, buckets[i])
                     for i, d in enumerate(self.data)]
        if ndiscard:
            print(f"WARNING: discarded {ndiscard} sentences longer than the largest bucket.")
        self.batch_size, self.buckets = batch_size, buckets
        self.data_name, self.label_name = data_name, label_name
        self.dtype, self.invalid_label = dtype, invalid_label
        self.nddata, self.ndlabel = [], []
        self.major_axis = layout.find("N")
        self.layout = layout
        self.default_bucket_key = max(buckets)
        shape = ((batch_size, self.default_bucket_key) if self.major_axis == 0
                 else (self.default_bucket_key, batch_size))
        self.provide_data = [DataDesc(data_name, shape, layout=layout)]
        self.provide_label = [DataDesc(label_name, shape, layout=layout)]
        self.idx = [(i, j) for i, d in enumerate(self.data)
                    for j in range(0, len(d) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.reset()

    def reset(self):
        """Shuffles the batches and the sentences within each bucket."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for d in self.data:
            np.random.shuffle(d)
        self.nddata, self.ndlabel = [], []
        for d in self.data:
            label = np.empty_like(d)
            if d.size:
                label[:, :-1] = d[:, 1:]
                label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(d, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self):
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(self.data_name, data.shape, layout=self.layout)],
                         provide_label=[DataDesc(self.label_name, label.shape,
                                                 layout=self.layout)])
