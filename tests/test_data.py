import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch

from lib import data


@pytest.mark.parametrize("kind", data.SYNTHETIC_KINDS)
def test_synthetic_2d(kind):
    d = data.synthetic_2d(kind, 100, seed=1)
    assert d.X_train.shape == (50, 2) and d.X_test.shape == (50, 2)
    assert d.X_train.dtype == torch.float32 and d.y_train.dtype == torch.int64
    assert set(d.y_train.tolist()) <= {0, 1}
    assert torch.equal(d.X_train, data.synthetic_2d(kind, 100, seed=1).X_train)


@pytest.mark.parametrize("args,match", [(("spiral", 100, 0), "kind"), (("xor", 2, 0), "n must"),
                                        (("xor", 100, 0, -1.0), "noise")])
def test_synthetic_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        data.synthetic_2d(*args)


def test_digits_subset_and_relabel():
    d = data.load_digits_split(classes=[7, 1], seed=0)
    assert set(d.y_train.tolist()) == {0, 1}
    assert float(d.X_train.max()) <= 1.0 and d.X_train.shape[1] == 64
    full = data.load_digits_split()
    assert len(full.y_train) + len(full.y_test) == 1797
    # label 0 is digit 7: its images must match the digit-7 images of the full set
    from sklearn.datasets import load_digits
    sevens = {tuple(r) for r in load_digits().data[load_digits().target == 7] / 16.0}
    assert all(tuple(r) in sevens for r in d.X_train[d.y_train == 0].double().numpy())


@pytest.mark.parametrize("kwargs", [{"classes": [10]}, {"classes": []}, {"classes": [1, 1]}, {"test_fraction": 1.0}])
def test_digits_bad_input(kwargs):
    with pytest.raises(ValueError):
        data.load_digits_split(**kwargs)


def test_mnist1d_generated_offline_and_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail("must not download"))
    state = np.random.get_state()[1].copy()
    d = data.make_mnist1d(num_samples=200, seed=3)
    assert np.array_equal(np.random.get_state()[1], state)  # the global RNG is left alone
    assert d.X_train.shape == (160, 40) and d.X_test.shape == (40, 40)
    assert list(tmp_path.glob("mnist1d_n200_s3.npz"))
    again = data.make_mnist1d(num_samples=200, seed=3)
    assert torch.equal(d.X_train, again.X_train)
    with pytest.raises(ValueError):
        data.make_mnist1d(num_samples=5)


def test_online_only_at_paper_scale():
    with pytest.raises(ValueError, match="REPRO_SCALE=paper only"):
        data.load_online("mnist")
    with pytest.raises(ValueError, match="must be one of"):
        data.load_online("imagenet")


def test_online_offline_error_names_the_scale(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_SCALE", "paper")

    def offline(*args, **kwargs):
        raise OSError("network is unreachable")
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(data.OfflineDataError, match="Only REPRO_SCALE=paper"):
        data.load_online("mnist", root=tmp_path)
    assert not list((tmp_path / "mnist").glob("*"))  # no partial file left


def test_fetch_verifies_checksum(tmp_path, monkeypatch):
    import io

    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: io.BytesIO(b"tampered"))
    with pytest.raises(data.OfflineDataError, match="checksum mismatch"):
        data.fetch("http://example.invalid/x", tmp_path / "x", md5="0" * 32)
    ok = tmp_path / "ok"
    import hashlib
    data.fetch("http://example.invalid/ok", ok, md5=hashlib.md5(b"tampered").hexdigest())
    assert ok.read_bytes() == b"tampered"


def test_fetch_takes_a_str_path_and_refuses_bad_arguments(tmp_path, monkeypatch):
    import hashlib
    import io

    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: io.BytesIO(b"payload"))
    good = hashlib.md5(b"payload").hexdigest()
    assert data.fetch("https://example.invalid/a", str(tmp_path / "a"), good) == tmp_path / "a"
    assert (tmp_path / "a").read_bytes() == b"payload"
    for kwargs, match in [({"url": "ftp://x/a"}, r"^url must be an http\(s\) URL"), ({"url": 3}, r"^url "),
                          ({"path": None}, r"^path must be a str or os.PathLike"), ({"path": ""}, r"^path "),
                          ({"md5": "XYZ"}, r"^md5 must be 32 lowercase hexadecimal digits"),
                          ({"md5": good.upper()}, r"^md5 "), ({"timeout": 0}, r"^timeout ")]:
        args = {"url": "https://example.invalid/b", "path": tmp_path / "b", "md5": good, "timeout": 5.0, **kwargs}
        with pytest.raises(ValueError, match=match):
            data.fetch(**args)
    assert not (tmp_path / "b").exists()


def test_mnist_parser_reads_idx(tmp_path):
    imgs = np.arange(2 * 28 * 28).reshape(2, 28, 28) % 256
    labels = np.array([3, 5])
    files = [_idx_file(tmp_path / f"{i}.gz", a) for i, a in enumerate([imgs, labels, imgs, labels])]
    split = data._parse_mnist(files)
    assert split.X_train.shape == (2, 28, 28) and split.y_test.tolist() == [3, 5]
    assert float(split.X_train.max()) == 1.0


@pytest.mark.parametrize("name", ["cifar10", "cifar100"])
def test_cifar_archives_parse(tmp_path, name):
    """A miniature archive with the real member names and keys parses to (N, 3, 32, 32) in [0, 1]."""
    import pickle

    members, label_key = data._CIFAR_LAYOUT[name]
    archive = _tar(tmp_path / f"{name}.tar.gz", {
        member: pickle.dumps({b"data": np.full((2, 3072), 255 * (k % 2), dtype=np.uint8), label_key: [k, k + 1]})
        for names in members.values() for k, member in enumerate(names)})
    split = data._PARSERS[name]([archive])
    n_train = 2 * len(members["train"])
    assert split.X_train.shape == (n_train, 3, 32, 32) and split.X_test.shape == (2, 3, 32, 32)
    assert split.y_train.dtype == torch.int64 and split.y_train.tolist()[:2] == [0, 1]
    assert float(split.X_train.max()) <= 1.0 and float(split.X_train.min()) >= 0.0
    assert split.name == name


# --- paper smoke stand-ins (issue 22) ------------------------------------------------------------

@pytest.mark.parametrize("name,shape,classes", [("mnist", (28, 28), 10), ("cifar10", (3, 32, 32), 10),
                                                ("cifar100", (3, 32, 32), 100)])
def test_smoke_stand_ins_have_the_shapes_of_the_real_sets(monkeypatch, name, shape, classes):
    n_train, n_test, k, _ = data.SMOKE_SIZES[name]
    assert k == classes
    monkeypatch.setenv("REPRO_SCALE", "paper")
    monkeypatch.setenv("REPRO_PAPER_SMOKE", "1")
    monkeypatch.setattr(data, "fetch", lambda *a, **kw: pytest.fail("a smoke run must not download"))
    split = data.load_online(name)
    for X, y, per_class in ((split.X_train, split.y_train, n_train), (split.X_test, split.y_test, n_test)):
        assert X.shape == (per_class * classes, *shape) and X.dtype == torch.float32
        assert float(X.min()) >= 0 and float(X.max()) <= 1 and float(X.std()) > 0.2
        assert y.dtype == torch.int64 and torch.equal(torch.bincount(y, minlength=classes),
                                                      torch.full((classes,), per_class))
        assert not torch.equal(y, torch.sort(y).values)  # shuffled, not sorted by class
    assert split.name == f"{name} (smoke stand-in)"
    again = data.smoke_online(name)
    assert torch.equal(again.X_train, split.X_train) and torch.equal(again.y_test, split.y_test)  # seeded
    assert not torch.equal(data.smoke_online(name, seed=1).X_train, split.X_train)


def test_smoke_imdb_stand_in_is_reviews_of_sentences(monkeypatch):
    monkeypatch.setenv("REPRO_SCALE", "paper")
    monkeypatch.setenv("REPRO_PAPER_SMOKE", "1")
    imdb = data.load_online("imdb")
    n_train, n_test, k, _ = data.SMOKE_SIZES["imdb"]
    assert sorted(imdb) == ["test", "train"]
    for split, n in (("train", n_train * k), ("test", n_test * k)):
        text, label = imdb[split]["text"], imdb[split]["label"]
        assert len(text) == n and label.tolist() == [0, 1] * (n // 2)
        assert all(isinstance(t, str) and t.count(".") == 4 and t.endswith("<br /><br />") for t in text)
        words = {w.strip(".") for t in text for w in t.replace("<br /><br />", "").split()}
        assert words <= set(data._SMOKE_WORDS) and len(words) > 10
    from lib.mae import split_sentences

    sentences = split_sentences(imdb["train"]["text"], 8)
    assert len(sentences) == 4 * n_train * k and all(s[-1] == "." and 3 <= len(s) - 1 <= 8 for s in sentences)


def test_smoke_online_bad_input():
    with pytest.raises(ValueError, match="^name \\(the online data set\\) must be one of"):
        data.smoke_online("svhn")
    with pytest.raises(ValueError, match="seed"):
        data.smoke_online("mnist", seed=-1)


def test_smoke_switch_needs_the_paper_scale(monkeypatch):
    monkeypatch.setenv("REPRO_PAPER_SMOKE", "1")  # at the quick scale of conftest
    with pytest.raises(ValueError, match="is for REPRO_SCALE=paper only"):
        data.load_online("mnist")  # the scale's own refusal comes first


# --- values, not only shapes (issue 37: data's mutation record) ------------------------------------

def test_split_is_a_seeded_permutation_with_rows_and_labels_kept_together():
    X = np.arange(20, dtype=float).reshape(10, 2)
    y = np.arange(10) % 3
    s = data._split(X, y, 0.3, seed=5, name="toy")
    assert (len(s.y_test), len(s.y_train)) == (3, 7) and s.name == "toy"
    rows = np.concatenate([s.X_test.numpy(), s.X_train.numpy()])
    order = np.random.default_rng(5).permutation(10)  # the same permutation, drawn independently
    assert np.array_equal(rows, X[order])
    assert np.array_equal(np.concatenate([s.y_test, s.y_train]), y[order])
    assert s.X_train.dtype == torch.float32 and s.y_test.dtype == torch.int64
    assert len(data._split(X, y, 0.01, seed=0, name="").y_test) == 1  # never an empty test set
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="test_fraction"):
            data._split(X, y, bad, seed=0, name="")


def test_synthetic_2d_labels_follow_the_geometry():
    xor = data.synthetic_2d("xor", 400, seed=2, noise=0.01, test_fraction=0.25)
    assert len(xor.y_test) == 100 and xor.name == "xor-400"
    X, y = xor.X_train.numpy(), xor.y_train.numpy()
    assert np.allclose(np.abs(X), 0.5, atol=0.05)  # the four blobs sit at (+-0.5, +-0.5)
    assert np.array_equal(y, (X[:, 0] > 0) ^ (X[:, 1] > 0))
    circles = data.synthetic_2d("circles", 200, seed=0, noise=0.0)
    r = np.linalg.norm(circles.X_train.numpy(), axis=1)
    assert np.allclose(r, np.where(circles.y_train.numpy() == 1, 0.5, 1.0), atol=1e-6)
    moons = data.synthetic_2d("moons", 200, seed=0, noise=0.0)
    X, y = moons.X_train.numpy().astype(float), moons.y_train.numpy()
    centre = np.where(y[:, None] == 0, [0.0, 0.0], [1.0, 0.5])  # sklearn's two half circles of radius 1
    assert np.allclose(np.linalg.norm(X - centre, axis=1), 1.0, atol=1e-5)
    noisy = data.synthetic_2d("moons", 200, seed=0, noise=0.3)
    assert not np.allclose(np.linalg.norm(noisy.X_train.numpy() - centre, axis=1), 1.0, atol=0.05)


def test_digits_unscaled_and_the_default_test_fraction():
    raw = data.load_digits_split(standardize=False, seed=3)
    assert float(raw.X_train.max()) == 16.0 and len(raw.y_test) == round(0.25 * 1797)
    scaled = data.load_digits_split(seed=3)
    assert torch.equal(scaled.X_train * 16.0, raw.X_train) and raw.name == "digits"


def test_datasplit_repr_names_shapes_and_classes():
    s = data.synthetic_2d("xor", 8, seed=0)
    assert repr(s) == "DataSplit('xor-8': train (4, 2), test (4, 2), classes [0, 1])"


def test_mnist1d_without_cache_writes_nothing_and_a_cached_set_is_read_back(tmp_path, monkeypatch):
    import mnist1d.data

    monkeypatch.setattr(data, "CACHE_DIR", tmp_path)
    d = data.make_mnist1d(num_samples=100, seed=1, cache=False)
    assert not list(tmp_path.iterdir())
    other = data.make_mnist1d(num_samples=100, seed=2, cache=False)
    assert not torch.equal(other.X_train, d.X_train)
    data.make_mnist1d(num_samples=100, seed=1)
    monkeypatch.setattr(mnist1d.data, "make_dataset", lambda args: pytest.fail("must read the cache"))
    again = data.make_mnist1d(num_samples=100, seed=1)
    assert torch.equal(again.X_test, d.X_test) and torch.equal(again.y_train, d.y_train)
    assert again.y_train.dtype == torch.int64 and again.X_train.dtype == torch.float32
    assert again.name == "mnist1d" and [p.name for p in tmp_path.iterdir()] == ["mnist1d_n100_s1.npz"]


def test_md5sum_reads_files_larger_than_one_chunk(tmp_path):
    import hashlib

    blob = np.random.default_rng(0).bytes(3 * (1 << 20) + 17)
    (tmp_path / "f").write_bytes(blob)
    assert data.md5sum(tmp_path / "f") == hashlib.md5(blob).hexdigest()


def test_fetch_keeps_a_verified_file_and_replaces_a_wrong_one(tmp_path, monkeypatch):
    import hashlib
    import io

    good = hashlib.md5(b"right").hexdigest()
    (tmp_path / "sub").mkdir()
    kept = tmp_path / "sub" / "f"
    kept.write_bytes(b"right")
    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: pytest.fail("must not download"))
    assert data.fetch("https://example.invalid/f", kept, good) == kept
    calls = []

    def serve(url, timeout):
        calls.append((url, timeout))
        return io.BytesIO(b"right")
    monkeypatch.setattr(urllib.request, "urlopen", serve)
    kept.write_bytes(b"wrong")
    new = tmp_path / "a" / "b" / "g"  # parent folders are made
    assert data.fetch("https://example.invalid/f", kept, good, timeout=7.5) == kept
    assert data.fetch("https://example.invalid/g", new, good) == new
    assert kept.read_bytes() == b"right" and new.read_bytes() == b"right"
    assert calls == [("https://example.invalid/f", 7.5), ("https://example.invalid/g", 60.0)]
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["f", "g"]  # no .part files


def test_fetch_checksum_mismatch_leaves_no_file(tmp_path, monkeypatch):
    import io

    monkeypatch.setattr(urllib.request, "urlopen", lambda *a, **k: io.BytesIO(b"x" * 10))
    with pytest.raises(data.OfflineDataError, match=r"^checksum mismatch for https://e\.invalid/x: expected md5 0{32}"):
        data.fetch("https://e.invalid/x", tmp_path / "x", "0" * 32)
    assert not list(tmp_path.iterdir())


def _idx_file(path, arr):
    """An IDX file as MNIST's (magic 0 0 8 ndim, big-endian 4-byte sizes, uint8 data), gzipped."""
    import gzip

    header = bytes([0, 0, 8, arr.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
    with gzip.open(path, "wb") as fh:
        fh.write(header + arr.astype(np.uint8).tobytes())
    return path


def test_read_idx_round_trips_any_shape(tmp_path):
    rng = np.random.default_rng(0)
    for shape in [(7,), (3, 300), (2, 5, 4)]:  # 300 > 255: the sizes are 4 bytes, not 1
        arr = rng.integers(0, 256, size=shape)
        assert np.array_equal(data._read_idx(_idx_file(tmp_path / "a.gz", arr)), arr)


def test_mnist_parser_keeps_splits_and_values_apart(tmp_path):
    rng = np.random.default_rng(1)
    arrays = [rng.integers(0, 256, (3, 28, 28)), np.array([1, 2, 3]),
              rng.integers(0, 256, (2, 28, 28)), np.array([9, 0])]
    files = [_idx_file(tmp_path / f"{i}.gz", a) for i, a in enumerate(arrays)]
    s = data._parse_mnist(files)
    assert torch.equal(s.X_train, torch.from_numpy(arrays[0].astype(np.float32) / np.float32(255)))
    assert torch.equal(s.X_test, torch.from_numpy(arrays[2].astype(np.float32) / np.float32(255)))
    assert s.y_train.tolist() == [1, 2, 3] and s.y_test.tolist() == [9, 0]
    assert s.y_train.dtype == torch.int64 and s.X_test.dtype == torch.float32 and s.name == "mnist"


def _tar(path, members):
    """A .tar.gz with the given ``{name: bytes}`` files (``None``: a folder)."""
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for name, blob in members.items():
            info = tarfile.TarInfo(name)
            if blob is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(blob)
                tar.addfile(info, io.BytesIO(blob))
    return path


def test_cifar_parser_values_and_batch_order(tmp_path):
    import pickle

    members, key = data._CIFAR_LAYOUT["cifar10"]
    rng = np.random.default_rng(2)
    blobs, expected = {}, {"train": [], "test": []}
    for split, names in members.items():
        for member in names:
            pixels = rng.integers(0, 256, (2, 3072)).astype(np.uint8)
            labels = rng.integers(0, 10, 2).tolist()
            blobs[member] = pickle.dumps({b"data": pixels, key: labels})
            expected[split].append((pixels, labels))
    s = data._parse_cifar("cifar10", [_tar(tmp_path / "c.tar.gz", blobs)])
    for X, y, parts in ((s.X_train, s.y_train, expected["train"]), (s.X_test, s.y_test, expected["test"])):
        pixels = np.concatenate([p for p, _ in parts]).reshape(-1, 3, 32, 32)
        assert np.allclose(X.numpy(), pixels / 255.0, atol=1e-7) and X.dtype == torch.float32
        assert y.tolist() == sum((l for _, l in parts), [])
    assert s.X_train.shape == (10, 3, 32, 32) and s.X_test.shape == (2, 3, 32, 32)


def test_imdb_parser_reads_labelled_reviews_only(tmp_path):
    archive = _tar(tmp_path / "imdb.tar.gz", {
        "aclImdb/train/pos": None,
        "aclImdb/train/pos/0_9.txt": "great film".encode(),
        "aclImdb/train/neg/1_2.txt": "dull, très".encode(),
        "aclImdb/test/pos/2_8.txt": b"fine",
        "aclImdb/train/unsup/3_0.txt": b"unlabelled",  # no label: skipped
        "aclImdb/imdb.vocab": b"words",
        "aclImdb/train/pos/deep/x.txt": b"nested",  # not a review file of a split
        "aclImdb/valid/pos/4_7.txt": b"unknown split"})
    imdb = data._parse_imdb([archive])
    assert sorted(imdb) == ["test", "train"]
    assert imdb["train"]["text"] == ["great film", "dull, très"] and imdb["train"]["label"].tolist() == [1, 0]
    assert imdb["test"]["text"] == ["fine"] and imdb["test"]["label"].tolist() == [1]


def test_load_online_fetches_every_file_into_its_folder_and_parses(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_SCALE", "paper")
    fetched = []
    monkeypatch.setattr(data, "fetch", lambda url, path, md5: fetched.append((url, path, md5)) or path)
    monkeypatch.setitem(data._PARSERS, "mnist", lambda files: ("parsed", files))
    out = data.load_online("mnist", root=tmp_path)
    sources = data.ONLINE_SOURCES["mnist"]
    assert fetched == [(u, tmp_path / "mnist" / f, m) for u, f, m in sources]
    assert out == ("parsed", [tmp_path / "mnist" / f for _, f, _ in sources])
    monkeypatch.setattr(data, "CACHE_DIR", tmp_path / "cache")
    fetched.clear()
    data.load_online("mnist")
    assert fetched[0][1] == tmp_path / "cache" / "mnist" / sources[0][1]


def test_online_sources_are_well_formed():
    assert sorted(data.ONLINE_SOURCES) == ["cifar10", "cifar100", "imdb", "mnist"] == sorted(data._PARSERS)
    for name, files in data.ONLINE_SOURCES.items():
        for url, fname, md5 in files:
            assert url.startswith("https://") and url.endswith("/" + fname) and len(md5) == 32


# --- the edges the first mutation record found untested (defaults, messages, dtypes, file handling) --

def test_defaults_are_the_documented_ones(tmp_path, monkeypatch):
    assert torch.equal(data.synthetic_2d("xor", 40, seed=1).X_train,
                       data.synthetic_2d("xor", 40, seed=1, noise=0.1, test_fraction=0.5).X_train)
    assert torch.equal(data.load_digits_split().y_test, data.load_digits_split(seed=0).y_test)
    import mnist1d.data

    seen = []

    def fake(args):
        seen.append((args.num_samples, args.seed))
        return {"x": np.zeros((8, 40)), "y": np.zeros(8, dtype=np.int32),
                "x_test": np.ones((2, 40)), "y_test": np.ones(2, dtype=np.int32)}
    monkeypatch.setattr(mnist1d.data, "make_dataset", fake)
    monkeypatch.setattr(data, "CACHE_DIR", tmp_path / "a" / "b")  # parent folders are made
    d = data.make_mnist1d()
    assert seen == [(5000, 42)] and (tmp_path / "a" / "b" / "mnist1d_n5000_s42.npz").exists()
    # whatever dtypes the generator returns, the split has float32 signals and int64 labels
    assert [t.dtype for t in (d.X_train, d.y_train, d.X_test, d.y_test)] == [torch.float32, torch.int64] * 2


def test_the_smallest_sizes_allowed_are_accepted():
    assert len(data.synthetic_2d("xor", 4, seed=0).y_train) == 2
    assert len(data.synthetic_2d("moons", 200, seed=0).y_train) == 100  # n reaches sklearn
    assert len(data.synthetic_2d("circles", 200, seed=0).y_train) == 100


def test_bad_input_messages_name_the_argument():
    cases = [(lambda: data.synthetic_2d("xor", 10, 0, noise=-1), r"^noise must be a finite number >= 0"),
             (lambda: data.synthetic_2d("xor", 10, 0, test_fraction=0.0), r"^test_fraction must be a finite number > 0"),
             (lambda: data.load_digits_split(test_fraction=0.0), r"^test_fraction must be a finite number > 0"),
             (lambda: data.load_digits_split(classes=5), r"^classes must be a list or tuple"),
             (lambda: data.load_digits_split(classes=[11]), r"^classes must be distinct digits 0\.\.9, got \[11\]"),
             (lambda: data.make_mnist1d(num_samples=9), r"^num_samples must be an int >= 10"),
             (lambda: data.fetch(3, "x", "0" * 32), r"^url must be a str \(an http\(s\) URL\), got 3$"),
             (lambda: data.fetch("https://a/b", None, "0" * 32), r"^path must be a str or os.PathLike naming a file, got None$"),
             (lambda: data.fetch("https://a/b", 3, "0" * 32), r"^path must be a str or os.PathLike naming a file, got 3$")]
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()


def test_noise_is_drawn_per_point():
    for kind in ("xor", "circles", "moons"):  # the same points (same seed), with and without noise
        clean = data.synthetic_2d(kind, 400, seed=4, noise=0.0).X_train.numpy()
        shift = data.synthetic_2d(kind, 400, seed=4, noise=0.2).X_train.numpy() - clean
        assert 0.15 < shift.std() < 0.25 and len(np.unique(np.round(shift, 6))) > 350, kind  # of 400 values


def test_split_keeps_the_dtypes_it_promises_for_other_label_types():
    s = data._split(np.zeros((6, 2), dtype=np.float64), np.arange(6, dtype=np.int32), 0.5, seed=0, name="")
    assert [t.dtype for t in (s.X_train, s.y_train, s.X_test, s.y_test)] == [torch.float32, torch.int64] * 2


def test_read_idx_reads_four_byte_sizes(tmp_path):
    for shape in [(1, 1, 70_000), (0, 2 ** 24)]:  # a third size >= 2^16; a second size with its top byte set
        arr = np.zeros(shape, dtype=np.uint8)
        assert data._read_idx(_idx_file(tmp_path / "big.gz", arr)).shape == shape


def _py2_pickle(d):
    """The bytes Python 2's ``cPickle.dump(d, f, 2)`` writes for a dict of str keys and lists of small
    ints (CIFAR's batches were pickled so): keys are SHORT_BINSTRING, which Python 3 reads as ``str``
    unless ``encoding="bytes"`` is given."""
    def obj(v):
        if isinstance(v, list):
            return b"](" + b"".join(obj(x) for x in v) + b"e"
        assert 0 <= v < 256
        return b"K" + bytes([v])
    items = b"".join(b"U" + bytes([len(k)]) + k.encode() + obj(v) for k, v in d.items())
    return b"\x80\x02}(" + items + b"u."


def test_cifar_parser_reads_python2_pickles(tmp_path):
    import pickle

    blob = _py2_pickle({"data": [[255] * 3072, [0] * 3072], "labels": [3, 4]})
    assert pickle.loads(blob, encoding="bytes") == {b"data": [[255] * 3072, [0] * 3072], b"labels": [3, 4]}
    assert set(pickle.loads(blob)) == {"data", "labels"}  # without encoding="bytes": str keys
    members, _ = data._CIFAR_LAYOUT["cifar10"]
    s = data._parse_cifar("cifar10", [_tar(tmp_path / "c.tar.gz", {m: blob for ms in members.values() for m in ms})])
    assert s.y_train.tolist() == [3, 4] * 5 and float(s.X_test[0].min()) == 1.0 and float(s.X_test[1].max()) == 0.0


class _Source:
    """A fake HTTP response that records, at each read, the files in the target's folder."""

    def __init__(self, payload, folder, seen):
        self.payload, self.folder, self.seen = payload, folder, seen

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def read(self, n):
        self.seen.append(sorted(p.name for p in self.folder.iterdir()))
        out, self.payload = self.payload[:n], self.payload[n:]
        return out


def test_a_download_in_progress_is_a_part_file_beside_the_target(tmp_path, monkeypatch):
    import hashlib

    seen = []
    payload = b"y" * (3 * (1 << 20) + 5)  # more than one read of 1 MiB
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: _Source(payload, tmp_path, seen))
    data.fetch("https://e.invalid/f", tmp_path / "f", hashlib.md5(payload).hexdigest())
    assert len(seen) >= 4 and all(len(names) == 1 and names[0].endswith(".part") for names in seen)
    assert (tmp_path / "f").read_bytes() == payload and [p.name for p in tmp_path.iterdir()] == ["f"]


def test_offline_message_says_what_to_do(tmp_path, monkeypatch):
    def offline(*a, **k):
        raise OSError("down")
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(data.OfflineDataError) as err:
        data.fetch("https://e.invalid/f", tmp_path / "f", "0" * 32)
    assert str(err.value) == ("could not download https://e.invalid/f (down). Only REPRO_SCALE=paper uses this data set "
                              "and it needs the internet (e.g. Colab); the quick and full scales use offline stand-ins.")


def test_atomic_save_writes_beside_the_target_and_cleans_up_on_failure(tmp_path, monkeypatch):
    written = []
    real = np.savez_compressed
    monkeypatch.setattr(np, "savez_compressed", lambda f, **a: written.append(f) or real(f, **a))
    data._atomic_save_npz(tmp_path / "x" / "y" / "a.npz", v=np.arange(3))
    assert Path(written[0]).parent == tmp_path / "x" / "y" and written[0].endswith(".npz")
    assert np.array_equal(np.load(tmp_path / "x" / "y" / "a.npz")["v"], np.arange(3))

    def broken(f, **a):
        Path(f).write_bytes(b"half")
        raise RuntimeError("disk full")
    monkeypatch.setattr(np, "savez_compressed", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        data._atomic_save_npz(tmp_path / "x" / "y" / "b.npz", v=np.arange(3))
    assert sorted(p.name for p in (tmp_path / "x" / "y").iterdir()) == ["a.npz"]


def test_smoke_reviews_have_sentences_of_three_to_eight_words():
    from lib.mae import split_sentences

    imdb = data.smoke_online("imdb", seed=0)
    lengths = {len(s) - 1 for s in split_sentences(imdb["train"]["text"], 8)}
    assert lengths == set(range(3, 9))
