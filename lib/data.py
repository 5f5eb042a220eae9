"""Data for the chapters: offline sets for the quick and full scales, online sets for ``paper``.

Offline (no network, ever): :func:`synthetic_2d` (toy 2-D problems), :func:`load_digits_split`
(scikit-learn's bundled 8x8 digits) and :func:`make_mnist1d` (MNIST-1D, generated procedurally by
the ``mnist1d`` package and cached; never downloaded). Online: :func:`load_online` fetches MNIST,
CIFAR-10, CIFAR-100 or IMDB, verifies the MD5 checksum and caches the files; it runs only at the ``paper``
scale and fails with a clear message when the machine is offline. In a paper smoke run
(``REPRO_PAPER_SMOKE=1``, a test-only switch; see :mod:`lib.scale`) it downloads nothing and returns
:func:`smoke_online`: tiny synthetic data of each set's shapes, dtypes and label range.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import pickle
import re
import tarfile
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from lib import validate as V
from lib.scale import current_scale, paper_smoke

CACHE_DIR = Path(os.environ.get("REPRO_CACHE", Path.home() / ".cache" / "relu-book"))


@dataclass(frozen=True)
class DataSplit:
    """A train/test split: ``X_*`` float32 tensors of shape ``(n, ...)``, ``y_*`` int64 labels."""

    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    name: str = ""

    def __repr__(self) -> str:
        return (f"DataSplit({self.name!r}: train {tuple(self.X_train.shape)}, "
                f"test {tuple(self.X_test.shape)}, classes {sorted(set(self.y_train.tolist()))})")


def _split(X: np.ndarray, y: np.ndarray, test_fraction: float, seed: int, name: str) -> DataSplit:
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = max(1, int(round(test_fraction * len(y))))
    test, train = order[:n_test], order[n_test:]
    t = lambda a, dt: torch.as_tensor(np.ascontiguousarray(a), dtype=dt)  # noqa: E731
    return DataSplit(t(X[train], torch.float32), t(y[train], torch.int64),
                     t(X[test], torch.float32), t(y[test], torch.int64), name)


SYNTHETIC_KINDS = ("moons", "circles", "xor")


def synthetic_2d(kind: str, n: int, seed: int, noise: float = 0.1, test_fraction: float = 0.5) -> DataSplit:
    """A 2-D binary problem (labels 0/1): ``moons``, ``circles`` or ``xor`` (four Gaussian blobs)."""
    from sklearn.datasets import make_circles, make_moons

    n = V.integer(n, "n", min=4)
    noise = V.nonnegative(noise, "noise")
    seed = V.seed(seed)
    test_fraction = V.fraction(test_fraction, "test_fraction", low_open=True)
    if kind == "moons":
        X, y = make_moons(n, noise=noise, random_state=seed)
    elif kind == "circles":
        X, y = make_circles(n, noise=noise, factor=0.5, random_state=seed)
    elif kind == "xor":
        rng = np.random.default_rng(seed)
        corners = rng.integers(0, 2, size=(n, 2))
        X = (2.0 * corners - 1.0) * 0.5 + noise * rng.standard_normal((n, 2))
        y = corners[:, 0] ^ corners[:, 1]
    else:
        raise ValueError(f"kind must be one of {SYNTHETIC_KINDS}, got {kind!r}")
    return _split(X, y, test_fraction, seed, f"{kind}-{n}")


def load_digits_split(classes=None, test_fraction: float = 0.25, seed: int = 0,
                      standardize: bool = True) -> DataSplit:
    """scikit-learn's bundled 8x8 digits (1797 images, 64 features), optionally only some ``classes``.

    Labels are re-indexed ``0..len(classes)-1`` in the order given. With ``standardize``, features are
    scaled to [0, 1] (pixel values 0..16 divided by 16).
    """
    from sklearn.datasets import load_digits

    seed = V.seed(seed)
    test_fraction = V.fraction(test_fraction, "test_fraction", low_open=True)
    if classes is not None:
        classes = V.sequence(classes, "classes")
    digits = load_digits()
    X, y = digits.data.astype(np.float64), digits.target
    if classes is not None:
        classes = list(classes)
        if not classes or any(c not in range(10) for c in classes) or len(set(classes)) != len(classes):
            raise ValueError(f"classes must be distinct digits 0..9, got {classes!r}")
        keep = np.isin(y, classes)
        index = {c: i for i, c in enumerate(classes)}
        X, y = X[keep], np.array([index[c] for c in y[keep]])
    if standardize:
        X = X / 16.0
    return _split(X, y, test_fraction, seed, "digits")


def _atomic_save_npz(path: Path, **arrays) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz")
    os.close(fd)
    try:
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def make_mnist1d(num_samples: int = 5000, seed: int = 42, cache: bool = True) -> DataSplit:
    """MNIST-1D (Greydanus 2020): 10 classes of length-40 signals, generated procedurally.

    Uses the ``mnist1d`` package's generator with its default arguments (``num_samples`` and ``seed``
    aside) and its 80/20 train/test split; never downloads. The result is cached under
    ``~/.cache/relu-book`` (override with ``REPRO_CACHE``) since generation takes seconds.
    """
    num_samples = V.integer(num_samples, "num_samples", min=10)
    seed = V.seed(seed)
    path = CACHE_DIR / f"mnist1d_n{num_samples}_s{seed}.npz"
    if cache and path.exists():
        d = np.load(path)
    else:
        from mnist1d.data import get_dataset_args, make_dataset

        args = get_dataset_args()
        args.num_samples, args.seed = num_samples, seed
        state = np.random.get_state()  # make_dataset seeds numpy's global RNG; restore it after
        try:
            d = make_dataset(args)
        finally:
            np.random.set_state(state)
        d = {k: d[k] for k in ("x", "y", "x_test", "y_test")}
        if cache:
            _atomic_save_npz(path, **d)
    f = lambda a, dt: torch.as_tensor(np.asarray(a), dtype=dt)  # noqa: E731
    return DataSplit(f(d["x"], torch.float32), f(d["y"], torch.int64),
                     f(d["x_test"], torch.float32), f(d["y_test"], torch.int64), "mnist1d")


# name -> list of (url, file name, md5); the published checksums of the original files.
ONLINE_SOURCES = {
    "mnist": [
        ("https://ossci-datasets.s3.amazonaws.com/mnist/train-images-idx3-ubyte.gz",
         "train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("https://ossci-datasets.s3.amazonaws.com/mnist/train-labels-idx1-ubyte.gz",
         "train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("https://ossci-datasets.s3.amazonaws.com/mnist/t10k-images-idx3-ubyte.gz",
         "t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("https://ossci-datasets.s3.amazonaws.com/mnist/t10k-labels-idx1-ubyte.gz",
         "t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ],
    "cifar10": [
        ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
         "cifar-10-python.tar.gz", "c58f30108f718f92721af3b95e74349a"),
    ],
    "cifar100": [
        ("https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
         "cifar-100-python.tar.gz", "eb9058c3a382ffc7106e4002c42a8d85"),
    ],
    "imdb": [
        ("https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz",
         "aclImdb_v1.tar.gz", "7c2ac02c03563afcf9b574c7e56c153a"),
    ],
}


class OfflineDataError(RuntimeError):
    """An online data set could not be fetched (the machine is offline or the source is down)."""


def md5sum(path: Path) -> str:
    """MD5 of a file, read in chunks."""
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(url: str, path: Path, md5: str, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``path`` unless a file with the right checksum is there; verify the MD5.

    ``path`` may be a ``str`` or a ``Path``; ``md5`` is 32 hexadecimal digits; ``timeout`` > 0 seconds."""
    V.instance(url, "url", str, "a str (an http(s) URL)")
    if not url.startswith(("http://", "https://")):
        raise V.ArgumentValueError(f"url must be an http(s) URL, got {url!r}")
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise V.ArgumentTypeError(f"path must be a str or os.PathLike naming a file, got {V.describe(path)}")
    if not isinstance(md5, str) or not re.fullmatch(r"[0-9a-f]{32}", md5):
        raise V.ArgumentValueError(f"md5 must be 32 lowercase hexadecimal digits, got {md5!r}")
    V.positive(timeout, "timeout")
    path = Path(path)
    if path.exists() and md5sum(path) == md5:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".part")
    os.close(fd)
    try:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as src, open(tmp, "wb") as dst:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    dst.write(chunk)
        except OSError as err:
            raise OfflineDataError(
                f"could not download {url} ({err}). Only REPRO_SCALE=paper uses this data set and it "
                "needs the internet (e.g. Colab); the quick and full scales use offline stand-ins.") from err
        got = md5sum(Path(tmp))
        if got != md5:
            raise OfflineDataError(f"checksum mismatch for {url}: expected md5 {md5}, got {got}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _read_idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as fh:
        data = fh.read()
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _parse_mnist(files) -> DataSplit:
    Xtr, ytr, Xte, yte = (_read_idx(p) for p in files)
    f = lambda a, dt: torch.as_tensor(a.astype(np.float32) / 255.0 if dt == torch.float32 else a.astype(np.int64))  # noqa: E731
    return DataSplit(f(Xtr, torch.float32), f(ytr, torch.int64), f(Xte, torch.float32), f(yte, torch.int64), "mnist")


# Members of the CIFAR archives per split, and the key of their labels (CIFAR-10: 5 training batches).
_CIFAR_LAYOUT = {
    "cifar10": ({"train": [f"cifar-10-batches-py/data_batch_{i}" for i in range(1, 6)],
                 "test": ["cifar-10-batches-py/test_batch"]}, b"labels"),
    "cifar100": ({"train": ["cifar-100-python/train"], "test": ["cifar-100-python/test"]}, b"fine_labels"),
}


def _parse_cifar(name: str, files) -> DataSplit:
    members, label_key = _CIFAR_LAYOUT[name]
    parts = {}
    with tarfile.open(files[0]) as tar:
        for split, names in members.items():
            batches = [pickle.load(tar.extractfile(m), encoding="bytes") for m in names]
            X = np.concatenate([np.asarray(d[b"data"], dtype=np.float32) for d in batches]).reshape(-1, 3, 32, 32)
            y = np.concatenate([np.asarray(d[label_key], dtype=np.int64) for d in batches])
            parts[split] = (torch.from_numpy(X / 255.0), torch.from_numpy(y))
    return DataSplit(*parts["train"], *parts["test"], name)


def _parse_imdb(files) -> dict:
    texts = {"train": ([], []), "test": ([], [])}
    with tarfile.open(files[0]) as tar:
        for member in tar:
            parts = member.name.split("/")
            if len(parts) == 4 and parts[1] in texts and parts[2] in ("pos", "neg") and member.isfile():
                texts[parts[1]][0].append(tar.extractfile(member).read().decode("utf-8"))
                texts[parts[1]][1].append(int(parts[2] == "pos"))
    return {split: {"text": t, "label": np.array(l)} for split, (t, l) in texts.items()}


_PARSERS = {"mnist": _parse_mnist, "imdb": _parse_imdb,
            "cifar10": lambda files: _parse_cifar("cifar10", files),
            "cifar100": lambda files: _parse_cifar("cifar100", files)}


# name -> (training and test examples per class, number of classes, one example's shape); a smoke
# stand-in has these many examples per class (MNIST: enough 0s and 1s for chapter 04's transfer pool).
SMOKE_SIZES = {"mnist": (100, 20, 10, (28, 28)), "cifar10": (20, 5, 10, (3, 32, 32)),
               "cifar100": (6, 2, 100, (3, 32, 32)), "imdb": (40, 20, 2, ())}
_SMOKE_WORDS = ("the film was good bad long short funny dull and i liked hated it a story actor plot "
                "great boring this movie is not very").split()


def smoke_online(name: str, seed: int = 0):
    """The smoke stand-in of :func:`load_online` ``(name)``: random data of the set's type and shapes.

    MNIST: ``(n, 28, 28)`` pixels in [0, 1]; CIFAR-10/100: ``(n, 3, 32, 32)`` in [0, 1]; both with every
    class equally often (:data:`SMOKE_SIZES`), as float32/int64 tensors. IMDB: ``{split: {"text",
    "label"}}`` with short reviews of several sentences drawn from a small vocabulary and labels 0/1.
    Only for testing the paper path's code (``REPRO_PAPER_SMOKE=1``); nothing can be learned from it.
    """
    V.choice(name, "name (the online data set)", tuple(ONLINE_SOURCES))
    seed = V.seed(seed)
    n_train, n_test, n_classes, shape = SMOKE_SIZES[name]
    rng = np.random.default_rng(seed)
    if name == "imdb":
        def reviews(n):
            text = [" ".join(" ".join(rng.choice(_SMOKE_WORDS, size=rng.integers(3, 9))) + "."
                             for _ in range(4)) + "<br /><br />" for _ in range(n)]
            return {"text": text, "label": np.arange(n) % 2}
        return {"train": reviews(n_train * n_classes), "test": reviews(n_test * n_classes)}

    def part(per_class):
        y = np.repeat(np.arange(n_classes), per_class)[rng.permutation(per_class * n_classes)]
        X = rng.random((len(y), *shape), dtype=np.float32)
        return torch.from_numpy(X), torch.from_numpy(y.astype(np.int64))

    return DataSplit(*part(n_train), *part(n_test), f"{name} (smoke stand-in)")


def load_online(name: str, root: Path | None = None):
    """MNIST, CIFAR-10 or CIFAR-100 as a :class:`DataSplit`, or IMDB as ``{split: {"text", "label"}}``.

    Only at ``REPRO_SCALE=paper``: the other scales never touch the network. Files are MD5-verified
    and cached under ``root`` (default ``~/.cache/relu-book``). In a paper smoke run
    (``REPRO_PAPER_SMOKE=1``) nothing is downloaded: :func:`smoke_online` stands in.
    """
    if name not in ONLINE_SOURCES:
        raise ValueError(f"online data set must be one of {sorted(ONLINE_SOURCES)}, got {name!r}")
    scale = current_scale()
    if scale != "paper":
        raise ValueError(f"load_online({name!r}) is for REPRO_SCALE=paper only (the current scale is "
                         f"{scale!r}, which uses offline stand-ins)")
    if paper_smoke():
        return smoke_online(name)
    root = Path(root or CACHE_DIR)
    files = [fetch(url, root / name / fname, md5) for url, fname, md5 in ONLINE_SOURCES[name]]
    return _PARSERS[name](files)
