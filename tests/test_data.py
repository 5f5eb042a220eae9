import urllib.request

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
    import gzip

    def idx(path, arr):
        header = bytes([0, 0, 8, arr.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
        with gzip.open(path, "wb") as fh:
            fh.write(header + arr.astype(np.uint8).tobytes())
        return path
    imgs = np.arange(2 * 28 * 28).reshape(2, 28, 28) % 256
    labels = np.array([3, 5])
    files = [idx(tmp_path / f"{i}.gz", a) for i, a in enumerate([imgs, labels, imgs, labels])]
    split = data._parse_mnist(files)
    assert split.X_train.shape == (2, 28, 28) and split.y_test.tolist() == [3, 5]
    assert float(split.X_train.max()) == 1.0


@pytest.mark.parametrize("name", ["cifar10", "cifar100"])
def test_cifar_archives_parse(tmp_path, name):
    """A miniature archive with the real member names and keys parses to (N, 3, 32, 32) in [0, 1]."""
    import io
    import pickle
    import tarfile

    members, label_key = data._CIFAR_LAYOUT[name]
    archive = tmp_path / f"{name}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for split, names in members.items():
            for k, member in enumerate(names):
                batch = {b"data": np.full((2, 3072), 255 * (k % 2), dtype=np.uint8), label_key: [k, k + 1]}
                blob = pickle.dumps(batch)
                info = tarfile.TarInfo(member)
                info.size = len(blob)
                tar.addfile(info, io.BytesIO(blob))
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
