"""Unit tests of lib.mae (chapter 03, the mutual autoencoder)."""

import math

import numpy as np
import pytest
import torch

import lib.mae as mae

torch.set_num_threads(1)


# ----------------------------------------------------------------------------- Gaussians, Thm 4.1
def test_gaussian_helpers_match_torch():
    x, mu, lv = torch.randn(5), torch.randn(5), torch.randn(5)
    ref = torch.distributions.Normal(mu, torch.exp(0.5 * lv))
    assert torch.allclose(mae.gaussian_logpdf(x, mu, lv), ref.log_prob(x), atol=1e-5)
    kl = torch.distributions.kl_divergence(ref, torch.distributions.Normal(0.0, 1.0))
    assert torch.allclose(mae.kl_std_normal(mu, lv), kl, atol=1e-5)
    assert mae.gaussian_entropy(1) == pytest.approx(float(torch.distributions.Normal(0.0, 1.0).entropy()))
    assert mae.gaussian_entropy(3) == pytest.approx(3 * mae.gaussian_entropy(1))
    with pytest.raises(ValueError):
        mae.gaussian_entropy(0)


def test_theorem_4_1_bivariate_gaussian():
    for rho in (0.3, 0.6, 0.9):
        a, s2 = np.meshgrid(np.linspace(-1.5, 1.5, 61), np.logspace(-2, 1, 61))
        gap = mae.bivariate_gaussian_mi(rho) - mae.infomax_bound_bivariate(rho, a, s2)
        assert gap.min() > -1e-12
        assert abs(mae.infomax_bound_bivariate(rho, rho, 1 - rho ** 2) - mae.bivariate_gaussian_mi(rho)) < 1e-12
    assert mae.bivariate_gaussian_mi(0.0) == 0.0
    for bad in (1.0, -1.2, np.nan):
        with pytest.raises(ValueError):
            mae.bivariate_gaussian_mi(bad)
    with pytest.raises(ValueError):
        mae.infomax_bound_bivariate(0.5, 0.5, 0.0)
    with pytest.raises(ValueError):
        mae.infomax_bound_bivariate(0.5, np.nan, 1.0)


def test_z_grid():
    z, log_w = mae.z_grid(101, 6.0)
    assert z.shape == log_w.shape == (101,)
    assert torch.exp(log_w).sum().item() == pytest.approx(1.0)
    assert (torch.exp(log_w) * z ** 2).sum().item() == pytest.approx(1.0, abs=1e-4)
    for G, lim in ((2, 6.0), (101, -1.0), (101, np.inf), (10.5, 6.0)):
        with pytest.raises(ValueError):
            mae.z_grid(G, lim)


# ----------------------------------------------------------------------------- exact quadrature
def _sign_net(dec, scale, logvar_bias=None):
    """Set a BatchedMLP 1-H-H-D so that output 0 = scale*z (via relu(z) - relu(-z)), output 1 = -scale*z."""
    with torch.no_grad():
        for p in dec.parameters():
            p.zero_()
        dec.weights[0][:, 0, 0], dec.weights[0][:, 1, 0] = 1.0, -1.0
        dec.weights[1][:, 0, 0], dec.weights[1][:, 1, 1] = 1.0, 1.0
        dec.weights[2][:, 0, 0], dec.weights[2][:, 0, 1] = scale, -scale
        if logvar_bias is None:
            dec.weights[2][:, 1, 0], dec.weights[2][:, 1, 1] = -scale, scale
        else:
            dec.biases[2][:, 1] = logvar_bias


def test_normal_exact_on_gaussian_channel():
    """Hand-built decoder p(x|z) = N(rho z, 1 - rho^2): I = -1/2 log(1-rho^2), ll = -1/2 log(2 pi e)."""
    rho = 0.9
    model = mae.NormalMAE([0], hidden=4)
    _sign_net(model.dec, rho, logvar_bias=math.log(1 - rho ** 2))
    ex = mae.normal_exact(model)
    assert abs(ex["I"][0] - mae.bivariate_gaussian_mi(rho)) < 5e-3
    assert abs(ex["ll"][0] + mae.gaussian_entropy(1)) < 5e-3
    assert abs(ex["neg_mean_log_sigma"][0] - ex["I"][0]) < 5e-3
    assert abs(ex["mean_sigma"][0] - math.sqrt(1 - rho ** 2)) < 1e-5


def test_finite_exact_independent_and_deterministic():
    """Constant decoder: I = 0, ll = -log K. Deterministic split at z = 0 (K = 2): I = ll + 2 log 2 = log 2."""
    model = mae.FiniteMAE([0, 1], torch.full((2,), 0.5), hidden=4)
    with torch.no_grad():
        for p in model.dec.parameters():
            p.zero_()
    ex = mae.finite_exact(model)
    assert np.allclose(ex["I"], 0.0, atol=1e-9) and np.allclose(ex["ll"], -math.log(2), atol=1e-9)
    _sign_net(model.dec, 200.0)
    ex = mae.finite_exact(model)
    assert np.allclose(ex["I"], math.log(2), atol=1e-2) and np.allclose(ex["ll"], -math.log(2), atol=1e-3)
    dz = ex["z"][1] - ex["z"][0]
    assert np.allclose(ex["posterior"].sum(-1) * dz, 1.0, atol=1e-6)
    assert ex["posterior"].shape == (2, 2, len(ex["z"])) and ex["p_x_given_z"].shape == (2, len(ex["z"]), 2)
    assert np.all(ex["Ihat"] <= ex["I"] + 1e-6)  # Theorem 4.1 for the (untrained) table r
    assert np.all(ex["elbo"] <= ex["ll"] + 1e-6)


def test_finite_model_validation():
    for q in (torch.tensor([0.5, 0.6]), torch.tensor([]), torch.tensor([[0.5, 0.5]]), torch.tensor([np.nan, 1.0])):
        with pytest.raises(ValueError):
            mae.FiniteMAE([0], q)
    with pytest.raises(ValueError):
        mae.FiniteMAE([0], torch.full((3,), 1 / 3), segments=[3], index=torch.tensor([[0], [1], [5]]))
    with pytest.raises(ValueError):
        mae.FiniteMAE([0], torch.full((3,), 1 / 3), k=0)
    with pytest.raises(ValueError):
        mae.NormalMAE([], hidden=4)
    with pytest.raises(ValueError):
        mae.NormalMAE([0], hidden=0)


# ----------------------------------------------------------------------------- Algorithm 4.1
@pytest.mark.parametrize("kind", ["normal", "finite", "iwae"])
def test_train_mae_runs_and_logs(kind):
    if kind == "normal":
        model = mae.NormalMAE([0, 1], hidden=8)
    else:
        model = mae.FiniteMAE([0, 1], torch.full((10,), 0.1), hidden=8, k=5 if kind == "iwae" else 1)
    before = [p.detach().clone() for p in model.r_parameters()]
    trace = mae.train_mae(model, [None, 1.0], C=1.0, steps=4, batch=16, log_every=2, clip=1.0, anneal=0.5)
    steps, elbo, mi = trace.as_arrays()
    assert list(steps) == [2, 4] and elbo.shape == mi.shape == (2, 2) and np.all(np.isfinite(elbo))
    assert any(not torch.equal(a, b) for a, b in zip(before, model.r_parameters()))  # r was updated
    ih = mae.infomax_estimate(model, 100)
    assert ih.shape == (2,) and np.all(np.isfinite(ih))


def test_clip_per_model_and_anneal(monkeypatch):
    """Clipping rescales each model's gradient separately; the annealed model lr ends at lr / 10."""
    a = torch.nn.Parameter(torch.zeros(2, 3))
    a.grad = torch.tensor([[3.0, 4.0, 0.0], [0.3, 0.4, 0.0]])
    mae._clip_per_model([a], 1.0)
    assert torch.allclose(a.grad, torch.tensor([[0.6, 0.8, 0.0], [0.3, 0.4, 0.0]]))
    seen, step = [], torch.optim.Adam.step
    monkeypatch.setattr(torch.optim.Adam, "step", lambda self: (seen.append(self.param_groups[0]["lr"]), step(self)))
    mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], steps=10, lr=1e-2, lr_r=1e-3, batch=8, anneal=0.5)
    model_lrs, r_lrs = seen[0::2], seen[1::2]  # UPDATEMODEL and UPDATEMIESTIMATE alternate
    assert model_lrs[:5] == [1e-2] * 5 and model_lrs[-1] == pytest.approx(1e-3) and r_lrs == [1e-3] * 10


def test_penalty_sign_pushes_mi_towards_target():
    """A few steps with a large C move the model MI estimate towards M from both sides."""
    res = {}
    for M in (0.0, 2.0):
        model = mae.FiniteMAE([3], torch.full((10,), 0.1), hidden=16)
        ex0 = mae.finite_exact(model)["I"][0]
        mae.train_mae(model, [M], C=10.0, steps=60, lr=1e-2, batch=64, seed=3)
        res[M] = (ex0, mae.finite_exact(model)["I"][0])
    assert res[0.0][1] < res[0.0][0] and res[2.0][1] > res[2.0][0], res


def test_train_mae_validation():
    model = mae.NormalMAE([0], hidden=4)
    for kwargs in ({"targets": [1.0, 2.0]}, {"targets": [-1.0]}, {"targets": [np.nan]},
                   {"targets": [1.0], "C": -1.0}, {"targets": [1.0], "steps": 0},
                   {"targets": [1.0], "clip": 0.0}, {"targets": [1.0], "anneal": 1.5}):
        with pytest.raises(ValueError):
            mae.train_mae(model, **{"steps": 1, **kwargs})
    with pytest.raises(ValueError):
        mae.infomax_estimate(model, 0)


def test_sir_sample_k1_is_encoder():
    model = mae.FiniteMAE([0], torch.full((10,), 0.1), hidden=4)
    s = mae.sir_sample(model, 4000, k=1)
    mu, lv = model.encoder()
    assert s.shape == (1, 10, 4000)
    assert torch.allclose(s.mean(-1), mu, atol=0.1)
    assert mae.sir_sample(model, 10, k=5).shape == (1, 10, 10)
    with pytest.raises(ValueError):
        mae.sir_sample(model, 0)


def _sharp_finite_model():
    """A 10-input FiniteMAE whose decoder is made informative (weights x4), so that posteriors are
    narrow and far from the prior, with its exact quantities on a fine z grid (float64 quadrature)."""
    model = mae.FiniteMAE([0], torch.full((10,), 0.1), hidden=8)
    with torch.no_grad():
        for p in model.dec.parameters():
            p.mul_(4.0)
        model.enc_mu.zero_()
        model.enc_logvar.zero_()
        model.r_mu.copy_(torch.linspace(-1, 1, 10)[None])
        model.r_logvar.fill_(np.log(0.25))
    z, log_w = mae.z_grid(4001, 8.0)
    with torch.no_grad():
        log_p = model.log_p_all(z[None].float()).double()[0]  # (G, K)
        log_r = model.log_r_all(z[None].float()).double()[0]
    return model, z, torch.exp(log_w), log_p, log_r


def test_infomax_estimate_matches_its_quadrature():
    # eq. (4.10): I_hat = H(z) + E_{z ~ p(z)} sum_x p(x|z) log r(z|x), here by quadrature over z
    model, z, w, log_p, log_r = _sharp_finite_model()
    inner = (torch.exp(log_p) * log_r).sum(1)
    exact = mae.gaussian_entropy(1) + float((w * inner).sum())
    se = float(torch.sqrt((w * (inner - (w * inner).sum()) ** 2).sum())) / np.sqrt(20000)
    est = float(mae.infomax_estimate(model, 20000, seed=0)[0])
    assert abs(est - exact) < 4 * se, (est, exact, se)


def test_sir_sample_with_many_draws_approaches_the_posterior():
    # The resampling encoder with proposal N(0, 1) = p(z) keeps draws in proportion to p(x|z): as k grows
    # its samples follow the exact posterior p(z|x) (quadrature), while k = 1 stays at the proposal.
    model, z, w, log_p, _ = _sharp_finite_model()
    post = w[:, None] * torch.exp(log_p)
    post_mean = (post * z[:, None]).sum(0) / post.sum(0)
    post_sd = torch.sqrt((post * (z[:, None] - post_mean) ** 2).sum(0) / post.sum(0))
    s = mae.sir_sample(model, 1000, k=200, seed=1)[0].double()
    # within 5 standard errors (over 20 seeds the largest of the ten inputs' deviations reached 4.0 SE:
    # with k = 200 draws from N(0, 1) and posteriors as narrow as sd 0.04, a small bias remains)
    assert ((s.mean(-1) - post_mean).abs() < 5 * post_sd / np.sqrt(1000)).all(), (s.mean(-1), post_mean)
    assert torch.allclose(s.std(-1), post_sd, rtol=0.2)
    s1 = mae.sir_sample(model, 2000, k=1, seed=1)[0].double()
    assert (s1.mean(-1) - post_mean).abs().max() > 0.5
    assert torch.allclose(s1.std(-1), torch.ones(10, dtype=torch.float64), atol=0.05)


# ----------------------------------------------------------------------------- sentence stand-in
def test_sentence_grammar():
    g = mae.SentenceGrammar()
    sents, q, segs, index = g.build()
    assert len(sents) == len(set(sents)) == 544 and q.sum().item() == pytest.approx(1.0)
    H = math.log(4) + 0.25 * (math.log(256) + math.log(48) + math.log(48) + math.log(192))
    assert g.entropy() == pytest.approx(H) and g.collision_prob() == pytest.approx(float((q ** 2).sum()))
    assert index.shape == (544, 4) and sum(segs) == 70 and int(index.max()) == 70
    # a decoder with all logits equal reproduces q exactly (the independent solution is representable)
    model = mae.FiniteMAE([0], q, segs, index, hidden=4)
    with torch.no_grad():
        for p in model.dec.parameters():
            p.zero_()
    assert torch.allclose(torch.exp(model.log_p_all(torch.zeros(1, 1)))[0, 0].double(), q, atol=1e-6)
    match = mae.word_match_matrix(sents)
    exact, words = mae.reconstruction_rates(model, match)
    assert exact[0] == pytest.approx(g.collision_prob(), rel=1e-4)
    assert 0 < words[0] < 1


def test_word_match_matrix():
    m = mae.word_match_matrix(["a b c", "a x c", "a b"])
    assert torch.allclose(torch.diagonal(m), torch.ones(3, dtype=torch.float64)) and torch.equal(m, m.T)
    assert m[0, 1].item() == pytest.approx(2 / 3) and m[0, 2].item() == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        mae.word_match_matrix([])


def test_reconstruction_helpers():
    sents, q, segs, index = mae.SentenceGrammar().build()
    model = mae.FiniteMAE([0, 1], q, segs, index, hidden=4)
    rec = mae.sample_reconstructions(model, 5, n=3)
    assert rec.shape == (2, 3) and int(rec.max()) < 544
    path = mae.interpolate(model, 0, 543, n=10)
    assert path.shape == (2, 10)
    with pytest.raises(ValueError):
        mae.sample_reconstructions(model, 544)
    with pytest.raises(ValueError):
        mae.interpolate(model, 0, 1, n=1)
    with pytest.raises(ValueError):
        mae.reconstruction_rates(model, torch.ones(3, 3))


# ----------------------------------------------------------------------------- configurations
def test_configs_and_paper_scale_one_step():
    """Every scale is well formed; one Algorithm 4.1 step of each paper-scale model with its shapes."""
    for scale in ("quick", "full", "paper"):
        cfg = mae.CONFIGS.for_scale(scale)
        assert max(cfg.cat_targets) <= math.log(10) + 1e-12 and max(cfg.text_targets) < mae.SentenceGrammar().entropy()
    cfg = mae.CONFIGS.paper
    n = cfg.n_seeds
    normal = mae.NormalMAE(list(range(n * (len(cfg.normal_targets) + 1))), hidden=cfg.normal_hidden)
    mae.train_mae(normal, [None, *cfg.normal_targets] * n, C=cfg.normal_C, steps=1, lr=cfg.normal_lr, batch=cfg.batch)
    cat = mae.FiniteMAE(list(range(n)), torch.full((10,), 0.1), hidden=cfg.cat_hidden, k=cfg.resample_k)
    mae.train_mae(cat, [math.log(10)] * n, C=cfg.C, steps=1, lr=cfg.cat_lr, batch=cfg.batch)
    sents, q, segs, index = mae.SentenceGrammar().build()
    text = mae.FiniteMAE(list(range(2)), q, segs, index, hidden=cfg.text_hidden)
    trace = mae.train_mae(text, [None, cfg.text_targets[-1]], C=cfg.text_C, steps=1, lr=cfg.text_lr,
                          batch=cfg.text_batch)
    assert np.all(np.isfinite(trace.as_arrays()[1]))


# ----------------------------------------------------------------------------- IMDB sentences (paper scale)
def test_sentence_preprocessing_on_a_string():
    reviews = ["This movie was GREAT!<br /><br />I loved it. The plot, however, was thin and the ending "
               "was far too long for me to enjoy it.", "Bad. Don't watch it?", 42]
    with pytest.raises(ValueError):
        mae.split_sentences("a single string", 8)
    with pytest.raises(ValueError):
        mae.split_sentences(reviews[:2], 0)
    sents = mae.split_sentences(reviews[:2], max_len=8)
    assert sents == [["this", "movie", "was", "great", "!"], ["i", "loved", "it", "."], ["bad", "."],
                     ["don't", "watch", "it", "?"]]  # the 17-word sentence is dropped
    assert mae.split_sentences(["a b c d ."], max_len=3) == []  # punctuation does not count, words do
    vocab = mae.build_vocab(sents, 3)
    assert vocab == ["<pad>", "<bos>", "<eos>", "<unk>", ".", "it", "!"]  # by count, ties alphabetical
    tok = mae.encode_sentences(sents, vocab, max_tokens=4)
    assert tok.shape == (4, 5) and tok.dtype == torch.long
    assert tok[1].tolist() == [mae.UNK, mae.UNK, 5, 4, mae.EOS] and tok[2].tolist() == [mae.UNK, 4, mae.EOS, 0, 0]
    assert mae.decode_tokens(tok[1], vocab) == "<unk> <unk> it ."
    with pytest.raises(ValueError):
        mae.build_vocab(sents, 0)
    with pytest.raises(ValueError):
        mae.encode_sentences([], vocab, 4)


def _synthetic_tokens(n, T, vocab_size, seed=0):
    gen = torch.Generator().manual_seed(seed)
    tok = torch.randint(4, vocab_size, (n, T), generator=gen)
    lengths = torch.randint(2, T, (n,), generator=gen)
    for i, L in enumerate(lengths.tolist()):
        tok[i, L], tok[i, L + 1:] = mae.EOS, mae.PAD
    return tok


def test_sequence_mae_paper_shapes_one_step():
    """One Algorithm 4.1 step of the paper-scale text model (biLSTM resampling encoder, LSTM decoder fed z,
    biLSTM r, REINFORCE MI gradient) with the paper configuration's shapes on synthetic tokens."""
    cfg = mae.CONFIGS.paper
    tok = _synthetic_tokens(32, cfg.imdb_max_tokens + 1, cfg.imdb_vocab)
    model = mae.SequenceMAE(tok, cfg.imdb_vocab, latent_dim=cfg.imdb_latent, emb=cfg.imdb_emb,
                            hidden=cfg.imdb_hidden, k=cfg.resample_k)
    dec_before = model.dec_out.weight.detach().clone()
    r_before = model.r_out.weight.detach().clone()
    trace = mae.train_mae(model, [cfg.imdb_targets[-1]], C=cfg.imdb_C, steps=1, lr=cfg.imdb_lr, batch=8)
    assert np.all(np.isfinite(trace.as_arrays()[1]))
    assert not torch.equal(dec_before, model.dec_out.weight) and not torch.equal(r_before, model.r_out.weight)
    x = model.sample_x(torch.randn(5, cfg.imdb_latent), torch.Generator().manual_seed(0))
    assert x.shape == (5, tok.shape[1]) and not ((x == mae.PAD) | (x == mae.BOS))[:, 0].any()
    assert ((x == mae.EOS).sum(1) == 1).all()  # every sample ends exactly once


def test_sequence_mae_small():
    tok = _synthetic_tokens(40, 7, 12)
    with pytest.raises(ValueError):
        mae.SequenceMAE(tok, 10)  # token ids beyond the vocabulary
    with pytest.raises(ValueError):
        mae.SequenceMAE(tok, 12, hidden=0)
    state = torch.random.get_rng_state()
    model = mae.SequenceMAE(tok, 12, latent_dim=2, emb=8, hidden=8, k=3)
    assert torch.equal(state, torch.random.get_rng_state())  # seeded without touching the global RNG
    assert torch.equal(mae.SequenceMAE(tok, 12, latent_dim=2, emb=8, hidden=8).dec_out.weight, model.dec_out.weight)
    gen = torch.Generator().manual_seed(1)
    # log p(x|z) scores tokens up to <eos> only: what follows (padding) does not change it
    x, z = tok[:6].clone(), torch.randn(6, 2, generator=gen)
    lp = model.log_p_x_given_z(x, z)
    x[x == mae.PAD] = 5
    assert torch.all(lp < 0) and torch.allclose(model.log_p_x_given_z(x, z), lp)
    assert mae.infomax_estimate(model, 16).shape == (1,)
    exact, words, y = mae.sequence_reconstruction_rates(model, tok[:10])
    assert 0.0 <= exact <= words <= 1.0 and y.shape == (10, 7)
    assert model.encode_sample(tok[:3], gen).shape == (3, 2)


def test_training_objective_on_gaussian_channel():
    """Decoder N(rho z, 1 - rho^2) and r = its exact posterior: the estimate is the closed-form MI, so the
    penalty of a target M is C |I - M|; a VAE's objective is -ELBO >= -log-lik = H(N(0,1)) (closed form)."""
    rho, C = 0.9, 2.0
    model = mae.NormalMAE([0, 0, 0], hidden=4)
    _sign_net(model.dec, rho, logvar_bias=math.log(1 - rho ** 2))
    _sign_net(model.r, rho, logvar_bias=math.log(1 - rho ** 2))
    mi = mae.bivariate_gaussian_mi(rho)
    obj = mae.training_objective(model, [None, 0.5, 3.0], C=C, n_samples=200_000, seed=1)
    assert obj.shape == (3,) and obj.dtype == np.float64
    assert obj[0] > mae.gaussian_entropy(1) - 0.01  # the ELBO bounds the log-likelihood from below
    assert abs(obj[1] - obj[0] - C * abs(mi - 0.5)) < 0.02
    assert abs(obj[2] - obj[0] - C * abs(mi - 3.0)) < 0.02
    assert abs(obj[1] - obj[0] - C * (mi - 0.5)) < 0.02 and abs(obj[2] - obj[0] - C * (3.0 - mi)) < 0.02
    with pytest.raises(ValueError, match="n_samples"):
        mae.training_objective(model, [None] * 3, n_samples=0)


def test_best_of_restarts_and_restart_seeds():
    rng = np.random.default_rng(0)
    for restarts in (1, 2, 3):
        obj = rng.normal(size=4 * restarts)
        keep = mae.best_of_restarts(obj, restarts)
        brute = [min(range(g * restarts, (g + 1) * restarts), key=lambda i: obj[i]) for g in range(4)]
        assert keep.tolist() == brute
    with pytest.raises(ValueError, match="multiple"):
        mae.best_of_restarts(np.zeros(5), 2)
    with pytest.raises(ValueError, match="restarts must be"):
        mae.best_of_restarts(np.zeros(4), 0)
    assert mae.restart_seeds([7, 1007], rows=3, restarts=1) == [7, 7, 7, 1007, 1007, 1007]
    two = mae.restart_seeds([7, 1007], rows=2, restarts=2)
    assert two == [7, 7 + mae.RESTART_SEED_STEP, 7, 7 + mae.RESTART_SEED_STEP,
                   1007, 1007 + mae.RESTART_SEED_STEP, 1007, 1007 + mae.RESTART_SEED_STEP]
    assert mae.RESTART_SEED_STEP > 1000 * 999  # no restart seed equals a run seed of REPRO_SEED < 1000
    with pytest.raises(ValueError, match="restarts must be an int >= 1"):
        mae.restart_seeds([0], rows=1, restarts=0)
    with pytest.raises(ValueError, match=r"seeds\[i\] must be"):
        mae.restart_seeds([-1], rows=1, restarts=1)


def test_restarts_keep_the_run_that_met_its_target():
    """A run stalled at the uninformative code (decoder ignoring z) loses to one on the Gaussian channel;
    both have the optimal likelihood and exact posteriors as encoders, so only the penalty tells them apart."""
    model = mae.NormalMAE([0, 1], hidden=4)
    for net in (model.enc, model.dec, model.r):
        _sign_net(net, 0.9, logvar_bias=math.log(1 - 0.9 ** 2))
    with torch.no_grad():  # model 0 stalled: p(x|z) = N(0, 1), q(z|x) = r(z|x) = N(0, 1)
        for layer in (model.enc, model.dec, model.r):
            layer.weights[-1][0].zero_()
            layer.biases[-1][0].zero_()
    M = mae.bivariate_gaussian_mi(0.9)
    obj = mae.training_objective(model, [M, M], n_samples=50_000, seed=3)
    assert mae.best_of_restarts(obj, 2).tolist() == [1]


# ----------------------------------------------------------------------------- Fig. 4.2: encoder vs posterior
def test_encoder_posterior_kl_gaussian_encoder_is_the_elbo_gap():
    # k = 1: E_x KL(q(z|x) || p(z|x)) on the grid = log p(x) - ELBO of finite_exact (Gauss-Hermite), an
    # independent computation; a trained-looking encoder (means spread, variances small) keeps it non-trivial
    model, *_ = _sharp_finite_model()
    with torch.no_grad():
        model.enc_mu.copy_(torch.linspace(-1.2, 1.2, 10)[None])
        model.enc_logvar.fill_(math.log(0.09))
    ex = mae.finite_exact(model)
    out = mae.encoder_posterior_kl(model)
    gap = ex["ll"] - ex["elbo"]
    assert gap[0] > 0.05
    assert out["kl"].shape == (1,) and abs(out["kl"][0] - gap[0]) < 1e-3 * max(1.0, gap[0]), (out["kl"], gap)
    dz = float(out["z"][1] - out["z"][0])
    assert np.allclose(out["q"].sum(-1) * dz, 1.0) and np.allclose(out["posterior"].sum(-1) * dz, 1.0)
    assert np.allclose(out["posterior"], ex["posterior"], atol=1e-6)


def test_encoder_posterior_kl_resampling_encoder_density():
    # k > 1: the grid density q_EW is the law of one SIR draw (its mean and sd match sir_sample, a second
    # algorithm), and more proposals bring it closer to the posterior (k = 1 > 5 > 50 in KL)
    model, *_ = _sharp_finite_model()
    kls = {}
    for k in (1, 5, 50):
        model.k = k
        out = mae.encoder_posterior_kl(model, n_inner=10000 if k == 5 else 500, G=801, lim=5.0, seed=3)
        kls[k] = float(out["kl"][0])
        if k == 5:
            z = torch.tensor(out["z"])
            dz = float(z[1] - z[0])
            q = torch.tensor(out["q"][0]) * dz
            mean = (q * z).sum(-1)
            sd = torch.sqrt((q * z ** 2).sum(-1) - mean ** 2)
            s = mae.sir_sample(model, 20000, seed=4)[0].double()
            assert ((s.mean(-1) - mean).abs() < 5 * sd / np.sqrt(20000) + 1e-3).all(), (s.mean(-1), mean)
            assert torch.allclose(s.std(-1), sd, rtol=0.04)  # a proposal N(0, 1) far wider than the posteriors:
            # the inner expectation needs many draws here (with 500, one sd was 8 % off; 20,000: all within 1 %)
    assert kls[1] > 1.5 * kls[5] > 0 and kls[5] > 1.5 * kls[50], kls
    with pytest.raises(ValueError, match="n_inner"):
        mae.encoder_posterior_kl(model, n_inner=0)
    with pytest.raises(ValueError, match="model"):
        mae.encoder_posterior_kl(object())
