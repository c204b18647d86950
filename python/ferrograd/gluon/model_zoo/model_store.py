"""The store of pretrained model files: a local cache directory filled from MXNet's repository.

A model ``name`` is kept as ``{root}/{name}-{first 8 hex digits of its SHA-1}.params``. A file
that is there with the right SHA-1 is used as is (no network); otherwise the zip
``{MXNET_GLUON_REPO}gluon/models/{name}-{short hash}.zip`` is downloaded, unpacked and checked.
Downloads go through temporary names and are renamed only when complete and verified, so a
failure leaves nothing behind that a later call could mistake for the model.
"""

import logging
import os
import shutil
import tempfile
import zipfile

from ... import base
from ...base import MXNetError
from ..utils import _get_repo_url, check_sha1, download, replace_file

__all__ = ["get_model_file", "purge", "short_hash"]

# SHA-1 of each published parameter file (data from MXNet's model repository).
_model_sha1 = {
    "alexnet": "44335d1f0046b328243b32a26a4fbd62d9057b45",
    "densenet121": "f27dbf2dbd5ce9a80b102d89c7483342cd33cb31",
    "densenet161": "b6c8a95717e3e761bd88d145f4d0a214aaa515dc",
    "densenet169": "2603f878403c6aa5a71a124c4a3307143d6820e9",
    "densenet201": "1cdbc116bc3a1b65832b18cf53e1cb8e7da017eb",
    "inceptionv3": "ed47ec45a937b656fcc94dabde85495bbef5ba1f",
    "mobilenet0.25": "9f83e440996887baf91a6aff1cccc1c903a64274",
    "mobilenet0.5": "8e9d539cc66aa5efa71c4b6af983b936ab8701c3",
    "mobilenet0.75": "529b2c7f4934e6cb851155b22c96c9ab0a7c4dc2",
    "mobilenet1.0": "6b8c5106c730e8750bcd82ceb75220a3351157cd",
    "mobilenetv2_1.0": "36da4ff1867abccd32b29592d79fc753bca5a215",
    "mobilenetv2_0.75": "e2be7b72a79fe4a750d1dd415afedf01c3ea818d",
    "mobilenetv2_0.5": "aabd26cd335379fcb72ae6c8fac45a70eab11785",
    "mobilenetv2_0.25": "ae8f9392789b04822cbb1d98c27283fc5f8aa0a7",
    "resnet18_v1": "a0666292f0a30ff61f857b0b66efc0228eb6a54b",
    "resnet34_v1": "48216ba99a8b1005d75c0f3a0c422301a0473233",
    "resnet50_v1": "0aee57f96768c0a2d5b23a6ec91eb08dfb0a45ce",
    "resnet101_v1": "d988c13d6159779e907140a638c56f229634cb02",
    "resnet152_v1": "671c637a14387ab9e2654eafd0d493d86b1c8579",
    "resnet18_v2": "a81db45fd7b7a2d12ab97cd88ef0a5ac48b8f657",
    "resnet34_v2": "9d6b80bbc35169de6b6edecffdd6047c56fdd322",
    "resnet50_v2": "ecdde35339c1aadbec4f547857078e734a76fb49",
    "resnet101_v2": "18e93e4f48947e002547f50eabbcc9c83e516aa6",
    "resnet152_v2": "f2695542de38cf7e71ed58f02893d82bb409415e",
    "squeezenet1.0": "264ba4970a0cc87a4f15c96e25246a1307caf523",
    "squeezenet1.1": "33ba0f93753c83d86e1eb397f38a667eaf2e9376",
    "vgg11": "dd221b160977f36a53f464cb54648d227c707a05",
    "vgg11_bn": "ee79a8098a91fbe05b7a973fed2017a6117723a8",
    "vgg13": "6bc5de58a05a5e2e7f493e2d75a580d83efde38c",
    "vgg13_bn": "7d97a06c3c7a1aecc88b6e7385c2b373a249e95e",
    "vgg16": "e660d4569ccb679ec68f1fd3cce07a387252a90a",
    "vgg16_bn": "7f01cf050d357127a73826045c245041b0df7363",
    "vgg19": "ad2f660d101905472b83590b59708b71ea22b2e5",
    "vgg19_bn": "f360b758e856f1074a85abd5fd873ed1d98297c3",
}

apache_repo_url = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"
_url_format = "{repo_url}gluon/models/{file_name}.zip"


def default_root():
    """``$MXNET_HOME/models`` (``~/.mxnet/models`` by default), read at call time."""
    return os.path.join(base.data_dir(), "models")


def short_hash(name):
    """The first 8 hex digits of the model file's SHA-1, part of its file name."""
    if name not in _model_sha1:
        raise ValueError(f"Pretrained model for {name} is not available.")
    return _model_sha1[name][:8]


def get_model_file(name, root=None):
    """Path of the parameter file of pretrained model ``name``, downloading it if it is not in
    ``root`` (default ``$MXNET_HOME/models``) or its content does not match the known SHA-1."""
    file_name = f"{name}-{short_hash(name)}"
    root = os.path.expanduser(default_root() if root is None else root)
    file_path = os.path.join(root, file_name + ".params")
    sha1_hash = _model_sha1[name]
    if os.path.exists(file_path):
        if check_sha1(file_path, sha1_hash):
            return file_path
        logging.warning("Mismatch in the content of model file detected. Downloading again.")
    else:
        logging.info("Model file not found. Downloading to %s.", file_path)
    os.makedirs(root, exist_ok=True)
    url = _url_format.format(repo_url=_get_repo_url(), file_name=file_name)
    # Everything in flight lives in a private directory under root, removed whatever happens.
    work = tempfile.mkdtemp(prefix=f".{file_name}-", dir=root)
    try:
        archive = download(url, path=os.path.join(work, file_name + ".zip"), overwrite=True)
        try:
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(os.path.join(work, "unpacked"))
        except zipfile.BadZipFile as e:
            raise MXNetError(f"get_model_file: the download of '{name}' from {url} is not a "
                             f"zip archive ({e})") from e
        unpacked = os.path.join(work, "unpacked", file_name + ".params")
        if not os.path.exists(unpacked):
            raise MXNetError(f"get_model_file: the archive {url} does not contain "
                             f"{file_name}.params")
        if not check_sha1(unpacked, sha1_hash):
            raise ValueError(f"Downloaded file has different hash. Please try again. (model "
                             f"'{name}' from {url}: expected SHA-1 {sha1_hash})")
        replace_file(unpacked, file_path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return file_path


def purge(root=None):
    """Deletes every ``.params`` file in ``root`` (default ``$MXNET_HOME/models``)."""
    root = os.path.expanduser(default_root() if root is None else root)
    for f in os.listdir(root):
        if f.endswith(".params"):
            os.remove(os.path.join(root, f))


def load_pretrained(net, name, root, ctx):
    """Loads the pretrained parameters of ``name`` from the store into ``net``."""
    net.load_parameters(get_model_file(name, root=root), ctx=ctx)
    return net
