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


def test_infomax_bound_bivariate_mc_against_the_closed_form():
    """The Monte Carlo bound agrees with infomax_bound_bivariate within a few of its own standard errors;
    at r = p(z|x) the terms are H(z) - 1/2 log(2 pi (1 - rho^2)) - chi2_1 / 2, whose sd is sqrt(1/2)."""
    for j, (rho, a, s2) in enumerate(((0.3, 0.3, 0.91), (0.9, 0.9, 0.19), (0.6, 0.2, 0.5), (-0.5, 1.0, 2.0))):
        est, se = mae.infomax_bound_bivariate_mc(rho, a, s2, 200_000, seed=j)
        assert abs(est - mae.infomax_bound_bivariate(rho, a, s2)) < 4.5 * se
        if s2 == pytest.approx(1 - rho ** 2):
            assert se == pytest.approx(np.sqrt(0.5 / 200_000), rel=0.02)
    # the sd of H + log r is that of -(z - a x)^2 / (2 s2): for a = 0, s2 = 1 it is the sd of z^2 / 2
    assert mae.infomax_bound_bivariate_mc(0.5, 0.0, 1.0, 200_000, 1)[1] == pytest.approx(np.sqrt(0.5 / 200_000), rel=0.02)
    assert mae.infomax_bound_bivariate_mc(0.5, 0.5, 0.75, 10, 3) == mae.infomax_bound_bivariate_mc(0.5, 0.5, 0.75, 10, 3)
    assert mae.infomax_bound_bivariate_mc(0.5, 0.5, 0.75, 10, 3) != mae.infomax_bound_bivariate_mc(0.5, 0.5, 0.75, 10, 4)
    # hand-worked with two draws: the estimate and standard error of the two terms
    gen = torch.Generator().manual_seed(7)
    z, e = torch.randn(2, generator=gen, dtype=torch.float64), torch.randn(2, generator=gen, dtype=torch.float64)
    x = 0.6 * z + 0.8 * e
    t = mae.gaussian_entropy(1) - 0.5 * np.log(2 * np.pi * 0.64) - (z - 0.6 * x) ** 2 / (2 * 0.64)
    got = mae.infomax_bound_bivariate_mc(0.6, 0.6, 0.64, 2, 7)
    assert got[0] == pytest.approx(float(t.mean()), abs=1e-12)
    assert got[1] == pytest.approx(abs(float(t[0] - t[1])) / 2, abs=1e-12)


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


def test_train_mae_clips_a_sequence_model_by_one_norm(monkeypatch):
    """clip works for SequenceMAE (no model axis): one norm over its model parameters, capped at clip."""
    model = mae.SequenceMAE(_synthetic_tokens(16, 7, 12), 12, latent_dim=2, emb=8, hidden=8, k=2)
    norms, step = [], torch.optim.Adam.step

    def spy(self):
        if self.param_groups[0]["params"][0] is model.model_parameters()[0]:
            norms.append(float(torch.sqrt(sum((p.grad ** 2).sum() for p in self.param_groups[0]["params"]
                                              if p.grad is not None))))
        return step(self)

    monkeypatch.setattr(torch.optim.Adam, "step", spy)
    mae.train_mae(model, [1.0], C=1.0, steps=3, lr=1e-3, batch=4, clip=1e-3)
    assert len(norms) == 3 and max(norms) <= 1e-3 * (1 + 1e-5)
    norms.clear()
    mae.train_mae(model, [1.0], C=1.0, steps=3, lr=1e-3, batch=4)
    assert min(norms) > 1e-3  # unclipped, the gradients are larger: the cap above did something


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


# ----------------------------------------------------------------------------- issue 16: values against
# closed forms, quadrature and hand-worked cases; every error message names its argument

def test_infomax_bound_bivariate_by_gauss_hermite():
    # E log N(z; a x, s2) with z ~ N(0, 1), x = rho z + sqrt(1 - rho^2) e, by 2-D Gauss-Hermite (exact for the
    # quadratic integrand), plus H(z): the bound away from the optimum, where it is strictly below the MI
    t, w = np.polynomial.hermite_e.hermegauss(8)
    w = w / w.sum()
    for rho, a, s2 in ((0.3, -0.7, 0.4), (-0.8, 1.3, 2.5), (0.6, 0.0, 1.0), (0.95, 0.5, 0.05)):
        z, e = np.meshgrid(t, t, indexing="ij")
        x = rho * z + np.sqrt(1 - rho ** 2) * e
        log_r = -0.5 * (np.log(2 * np.pi * s2) + (z - a * x) ** 2 / s2)
        want = 0.5 * np.log(2 * np.pi * np.e) + (np.outer(w, w) * log_r).sum()
        assert mae.infomax_bound_bivariate(rho, a, s2) == pytest.approx(want, abs=1e-12)
        assert want < mae.bivariate_gaussian_mi(rho) - 1e-3
    got = mae.bivariate_gaussian_mi(np.array([0.5, -0.5]))
    assert got == pytest.approx([np.log(2 / np.sqrt(3))] * 2, abs=1e-15)  # 1 - 0.25 = 3/4


def test_gaussian_helpers_broadcast_and_empty():
    x, mu, lv = torch.tensor([[0.0], [1.0]]), torch.tensor([0.5, -1.0, 2.0]), torch.tensor(math.log(4.0))
    got = mae.gaussian_logpdf(x, mu, lv)
    want = torch.distributions.Normal(mu, 2.0).log_prob(x)
    assert got.shape == (2, 3) and torch.allclose(got, want, atol=1e-6)
    assert mae.gaussian_logpdf(torch.empty(0), torch.tensor(0.0), torch.tensor(0.0)).shape == (0,)
    assert mae.kl_std_normal(torch.empty(0, 2), torch.zeros(2)).shape == (0, 2)
    assert mae.kl_std_normal(torch.tensor(2.0), torch.tensor(0.0)).item() == pytest.approx(2.0)  # mu^2 / 2


def test_z_grid_smallest_and_weights():
    z, log_w = mae.z_grid(3, 2.0)
    assert z.tolist() == [-2.0, 0.0, 2.0] and z.dtype == torch.float64
    e = math.exp(-2.0)
    assert torch.exp(log_w).tolist() == pytest.approx([e / (1 + 2 * e), 1 / (1 + 2 * e), e / (1 + 2 * e)], abs=1e-15)
    z, log_w = mae.z_grid()
    assert len(z) == 2001 and z[0] == -7.0 and z[-1] == 7.0


def _channel_model(rho=0.9, n=2):
    """NormalMAE whose encoder, decoder and r are the Gaussian channel of correlation rho: p(x|z) =
    N(rho z, 1 - rho^2) and q(z|x) = r(z|x) = N(rho x, 1 - rho^2), the exact posterior."""
    model = mae.NormalMAE(list(range(n)), hidden=4)
    for net in (model.enc, model.dec, model.r):
        _sign_net(net, rho, logvar_bias=math.log(1 - rho ** 2))
    return model


def test_normal_mae_on_the_gaussian_channel_closed_forms():
    rho = 0.9
    model = _channel_model(rho)
    mi, H = mae.bivariate_gaussian_mi(rho), mae.gaussian_entropy(1)
    ex = mae.normal_exact(model)
    # the rate E_x KL(N(rho x, 1 - rho^2) || N(0, 1)) = -1/2 log(1 - rho^2) = the MI
    assert ex["kl"] == pytest.approx([mi, mi], abs=2e-3)
    coarse = mae.normal_exact(model, G=801, lim=6.0, Gx=801, x_lim=6.5)
    assert coarse["I"] == pytest.approx([mi, mi], abs=5e-3) and coarse["kl"] == pytest.approx([mi, mi], abs=5e-3)
    B = 100_000
    gen = torch.Generator().manual_seed(0)
    torch.set_grad_enabled(False)
    try:
        _channel_monte_carlo(model, rho, B, gen)
    finally:
        torch.set_grad_enabled(True)


def _channel_monte_carlo(model, rho, B, gen):
    H = mae.gaussian_entropy(1)
    # exact posterior as encoder: every ELBO term is log p(x) = log N(x; 0, 1), whose sd is 1/sqrt 2
    elbo = model.elbo(B, gen)
    assert elbo.shape == (2,) and (elbo + H).abs().max() < 5 * math.sqrt(0.5 / B)
    # r = exact posterior: E log r(z|x) = -h(z|x) = -1/2 log(2 pi e (1 - rho^2)); its terms have sd 1/sqrt 2
    want = -0.5 * math.log(2 * math.pi * math.e * (1 - rho ** 2))
    assert (model.expected_log_r(B, gen) - want).abs().max() < 5 * math.sqrt(0.5 / B)
    assert model.r_loss(B, gen).item() == pytest.approx(-2 * want, abs=10 * math.sqrt(0.5 / B))
    z, x = model.sample_joint(B, gen)
    assert z.shape == x.shape == (2, B)
    assert x.std(1) == pytest.approx([1.0, 1.0], abs=0.02)  # x ~ N(0, 1): q(x), the data
    assert ((z * x).mean(1) - rho).abs().max() < 0.02         # corr(z, x) = rho
    assert ((x - rho * z).std(1) - math.sqrt(1 - rho ** 2)).abs().max() < 0.01


def test_normal_mae_gradients_reach_the_right_nets():
    model = _channel_model(0.6, n=1)
    gen = torch.Generator().manual_seed(0)
    model.r_loss(64, gen).backward()  # UPDATEMIESTIMATE: samples detached from the model
    assert all(p.grad is None for p in model.model_parameters()) and any(p.grad is not None for p in model.r_parameters())
    model.zero_grad(set_to_none=True)
    model.expected_log_r(64, gen).sum().backward()  # g_MI reaches the decoder through x
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.dec.parameters())
    assert all(p.grad is None for p in model.enc.parameters())
    model.zero_grad(set_to_none=True)
    model.elbo(64, gen).sum().backward()
    assert all(p.grad is None for p in model.r_parameters())
    assert all(p.grad is not None for p in model.model_parameters())
    assert len(model.model_parameters()) == 12 and len(model.r_parameters()) == 6  # 3 layers x (W, b) per net
    assert model.r.weights[-1].abs().sum() > 0  # (set by _sign_net; a fresh r starts at the prior:)
    fresh = mae.NormalMAE([0], hidden=4)
    assert fresh.r.weights[-1].abs().sum() == 0 and fresh.r.biases[-1].abs().sum() == 0
    assert fresh.dec.weights[-1].abs().sum() > 0


_QX = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
_ENC_MU, _ENC_VAR = torch.tensor([0.5, -1.0, 2.0]), torch.tensor([0.25, 1.0, 4.0])
_R_MU, _R_VAR = torch.tensor([1.0, 0.0, -1.0]), torch.tensor([0.5, 2.0, 1.0])


def _constant_decoder_model(k=1, n=1):
    """FiniteMAE on 3 points whose decoder ignores z (p(x|z) = 1/3) with a fixed encoder and r table."""
    model = mae.FiniteMAE(list(range(n)), _QX, hidden=4, k=k)
    with torch.no_grad():
        for p in model.dec.parameters():
            p.zero_()
        model.enc_mu.copy_(_ENC_MU.expand(n, 3))
        model.enc_logvar.copy_(torch.log(_ENC_VAR).expand(n, 3))
        model.r_mu.copy_(_R_MU.expand(n, 3))
        model.r_logvar.copy_(torch.log(_R_VAR).expand(n, 3))
    return model


def test_finite_exact_with_a_constant_decoder_closed_forms():
    model = _constant_decoder_model(n=2)
    ex = mae.finite_exact(model)
    kl_x = 0.5 * (_ENC_MU ** 2 + _ENC_VAR - 1 - torch.log(_ENC_VAR)).double()
    assert ex["kl"] == pytest.approx([float((_QX * kl_x).sum())] * 2, abs=1e-6)
    assert ex["elbo"] == pytest.approx([-math.log(3) - float((_QX * kl_x).sum())] * 2, abs=1e-6)
    assert ex["ll"] == pytest.approx([-math.log(3)] * 2, abs=1e-6) and ex["I"] == pytest.approx([0, 0], abs=1e-6)  # float32 logits
    # I_hat = H(z) + (1/3) sum_x E_{z~N(0,1)} log N(z; r_mu, r_var), in closed form
    e_log_r = -0.5 * (math.log(2 * math.pi) + torch.log(_R_VAR) + (1 + _R_MU ** 2) / _R_VAR)
    assert ex["Ihat"] == pytest.approx([mae.gaussian_entropy(1) + float(e_log_r.mean())] * 2, abs=1e-4)
    z = torch.tensor(ex["z"])
    prior = torch.exp(-0.5 * z ** 2) / math.sqrt(2 * math.pi)  # the posterior is the prior
    assert np.allclose(ex["posterior"], prior.expand(2, 3, -1).numpy(), atol=1e-4)
    assert np.allclose(ex["p_x_given_z"], 1 / 3)
    small = mae.finite_exact(model, G=201, lim=6.0, Q=4)
    assert small["z"].shape == (201,) and small["elbo"] == pytest.approx(ex["elbo"], abs=1e-5)


def test_finite_mae_monte_carlo_bounds_with_a_constant_decoder():
    # k = 1: log w = log(1/3) + log N(z; 0, 1) - log q(z|x), so E log w = -log 3 - KL(q(z|x) || N(0, 1));
    # the IWAE-k bound rises with k towards log p(x) = -log 3 (Burda et al.), and the MI term is
    # E_z (1/3) sum_x log r(z|x)
    model = _constant_decoder_model()
    kl_x = 0.5 * (_ENC_MU ** 2 + _ENC_VAR - 1 - torch.log(_ENC_VAR)).double()
    want = -math.log(3) - float((_QX * kl_x).sum())
    B = 60_000
    elbo = model.elbo(B, torch.Generator().manual_seed(0))
    assert elbo.shape == (1,) and elbo.item() == pytest.approx(want, abs=0.03)
    bounds = []
    for k in (1, 5, 50):
        model.k = k
        bounds.append(model.elbo(3 * 400, torch.Generator().manual_seed(1)).item())
    assert abs(bounds[0] - want) < 0.1 and bounds[0] < bounds[1] - 0.5 and bounds[1] < bounds[2] - 0.1, bounds
    assert bounds[2] < -math.log(3), bounds
    e_log_r = -0.5 * (math.log(2 * math.pi) + torch.log(_R_VAR) + (1 + _R_MU ** 2) / _R_VAR)
    got = model.expected_log_r(40_000, torch.Generator().manual_seed(2))
    assert got.item() == pytest.approx(float(e_log_r.mean()), abs=0.03)
    assert model.r_loss(40_000, torch.Generator().manual_seed(2)).item() == pytest.approx(-got.item(), abs=1e-5)


def test_finite_mae_segments_and_log_p_at():
    # two segments of sizes 2 and 3 and an index with a padded slot: log p(x|z) is the sum of the
    # log-softmaxes of the segments x uses; log_p_at scores sample [:, x, :] at x, like log_p_all
    index = torch.tensor([[0, 2], [1, 4], [0, 5]])  # x=2 uses only column 0 (5 = D, padding)
    model = mae.FiniteMAE([0, 1], torch.full((3,), 1 / 3), segments=[2, 3], index=index, hidden=4)
    z = torch.randn(2, 7)
    logits = model.dec(z.reshape(2, -1, 1)).reshape(2, 7, 5)
    s1, s2 = torch.log_softmax(logits[..., :2], -1), torch.log_softmax(logits[..., 2:], -1)
    want = torch.stack([s1[..., 0] + s2[..., 0], s1[..., 1] + s2[..., 2], s1[..., 0]], -1)
    assert torch.allclose(model.log_p_all(z), want, atol=1e-5)
    zk = torch.randn(2, 3, 4)
    at = model.log_p_at(zk)
    every = model.log_p_all(zk)  # (2, 3, 4, K)
    assert torch.allclose(at, torch.stack([every[:, x, :, x] for x in range(3)], 1), atol=1e-5)
    mu, lv = model.encoder()
    assert mu.shape == lv.shape == (2, 3)
    with torch.no_grad():
        model.enc_logvar.fill_(-50.0)
        model.r_logvar.fill_(50.0)
    assert (model.encoder()[1] == mae.LOGVAR_MIN).all()
    lr = model.log_r_all(torch.zeros(2, 1))
    assert torch.allclose(lr, torch.full_like(lr, -0.5 * (math.log(2 * math.pi) + mae.LOGVAR_MAX)), atol=1e-3)
    assert len(model.model_parameters()) == 2 + 6 and len(model.r_parameters()) == 2


def test_reconstruction_rates_closed_forms():
    # constant decoder: exact = sum_x q(x) / 3 = 1/3 and words = sum_x q(x) sum_x' match[x, x'] / 3,
    # whatever the encoder (Gaussian nodes or resampling draws) and however the inputs are chunked
    match = torch.tensor([[1.0, 0.5, 0.0], [0.5, 1.0, 0.25], [0.0, 0.25, 1.0]], dtype=torch.float64)
    words = float((_QX * match.sum(1)).sum() / 3)
    for k in (1, 4):
        model = _constant_decoder_model(k=k, n=2)
        for chunk in (64, 1, 2):
            exact, w = mae.reconstruction_rates(model, match, Q=6, chunk_size=chunk)
            assert exact == pytest.approx([1 / 3] * 2, abs=1e-6) and w == pytest.approx([words] * 2, abs=1e-6)


def _split_model(scale, mu, var):
    """K = 2, decoder logits (scale z, -scale z): p(x=0|z) = sigmoid(2 scale z); encoder N(mu_x, var_x)."""
    model = mae.FiniteMAE([0], torch.tensor([0.4, 0.6]), hidden=4)
    _sign_net(model.dec, scale)
    with torch.no_grad():
        model.enc_mu.copy_(torch.tensor([mu]))
        model.enc_logvar.copy_(torch.log(torch.tensor([var])))
    return model


def test_reconstruction_rates_against_numerical_integration():
    # exact = sum_x q(x) E_{z~N(mu_x, var_x)} p(x|z), the expectation by a fine trapezoid rule (not the
    # Gauss-Hermite nodes of the module); with match = identity, words = exact
    model = _split_model(0.7, [0.8, -0.3], [0.5, 2.0])
    z = np.linspace(-15, 15, 200001)
    p0 = 1 / (1 + np.exp(-1.4 * z))
    want = 0.0
    for x, (mu, var, qx) in enumerate(((0.8, 0.5, 0.4), (-0.3, 2.0, 0.6))):
        dens = np.exp(-0.5 * (z - mu) ** 2 / var) / np.sqrt(2 * np.pi * var)
        want += qx * np.trapezoid(dens * (p0 if x == 0 else 1 - p0), z)
    exact, words = mae.reconstruction_rates(model, torch.eye(2), Q=24)
    assert exact[0] == pytest.approx(want, abs=1e-5) and words[0] == pytest.approx(want, abs=1e-5)
    # a different Q is a different rule for the same integral
    assert mae.reconstruction_rates(model, torch.eye(2), Q=40)[0][0] == pytest.approx(want, abs=1e-5)


def test_sample_reconstructions_and_interpolate_by_hand():
    # a near-deterministic decoder: x = 0 when z > 0, x = 1 when z < 0; encoder means +-3 with sd 0.1
    model = _split_model(200.0, [3.0, -3.0], [0.01, 0.01])
    assert mae.sample_reconstructions(model, 0, n=5).tolist() == [[0] * 5]
    assert mae.sample_reconstructions(model, 1, n=4, seed=3).tolist() == [[1] * 4]
    model.k = 3  # the resampling encoder: its draws are near the same means
    assert mae.sample_reconstructions(model, 0, n=6).tolist() == [[0] * 6]
    assert mae.sample_reconstructions(model, 1, n=6).tolist() == [[1] * 6]
    # greedy decodes on the line from mu_0 = 3 to mu_1 = -3: z = 3 - 6 lambda changes sign at lambda = 1/2
    assert mae.interpolate(model, 0, 1, n=5).tolist() == [[0, 0, 0, 1, 1]]
    assert mae.interpolate(model, 1, 0, n=4).tolist() == [[1, 1, 0, 0]]
    assert mae.interpolate(model, 0, 0, n=2).tolist() == [[0, 0]]
    assert mae.interpolate(model, 0, 1).shape == (1, 10)


def test_sample_reconstructions_follow_the_decoder_probabilities():
    # z ~ N(0, 1e-4) (encoder), p(x=0|z) = sigmoid(2 * 0.5 * z) ~ 1/2: a fair coin per draw
    model = _split_model(0.5, [0.0, 0.0], [1e-4, 1e-4])
    rec = mae.sample_reconstructions(model, 0, n=4000, seed=1)
    assert rec.shape == (1, 4000) and abs(rec.double().mean().item() - 0.5) < 4 * 0.5 / math.sqrt(4000)


def test_train_mae_logging_and_learning_rates(monkeypatch):
    trace = mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], steps=5, batch=8, log_every=2)
    steps, elbo, mi = trace.as_arrays()
    assert steps.tolist() == [2, 4, 5] and elbo.shape == mi.shape == (3, 1)  # the last step is always logged
    assert mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], steps=3, batch=8).as_arrays()[0].tolist() == [3]
    seen, step = [], torch.optim.Adam.step
    monkeypatch.setattr(torch.optim.Adam, "step", lambda self: (seen.append(self.param_groups[0]["lr"]), step(self)))
    mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], steps=10, lr=0.1, batch=8, anneal=0.5)
    # lr * max(0.1, min(1, (steps - step) / (anneal * steps))): flat, then linear to lr / 10; r keeps lr (lr_r None)
    want = [0.1] * 5 + [0.08, 0.06, 0.04, 0.02, 0.01]
    assert seen[0::2] == pytest.approx(want) and seen[1::2] == [0.1] * 10
    seen.clear()
    mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], steps=4, lr=0.1, batch=8)
    assert seen == [0.1] * 8  # anneal = 0: constant


def test_train_mae_vae_ignores_c_and_targets_move_the_objective():
    # a VAE (target None) has no penalty: its training does not depend on C
    runs = []
    for C in (0.0, 7.0):
        model = mae.NormalMAE([5], hidden=4)
        mae.train_mae(model, [None], C=C, steps=3, batch=16, seed=2)
        runs.append([p.detach().clone() for p in model.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*runs))
    # a target with C = 0 trains exactly like a VAE, C > 0 does not
    runs = []
    for M, C in ((None, 1.0), (1.0, 0.0), (1.0, 1.0)):
        model = mae.NormalMAE([5], hidden=4)
        mae.train_mae(model, [M], C=C, steps=3, batch=16, seed=2)
        runs.append([p.detach().clone() for p in model.model_parameters()])
    assert all(torch.equal(a, b) for a, b in zip(runs[0], runs[1]))
    assert not all(torch.equal(a, b) for a, b in zip(runs[0], runs[2]))
    # the logged MI estimate is H(z) + E log r on the step's generative batch: r starts at the prior, so
    # at step 1 it is H(z) + E log N(z; 0, 1) = 0 up to sampling noise
    model = mae.NormalMAE([0], hidden=4)
    trace = mae.train_mae(model, [1.0], steps=1, batch=4096, lr=1e-9)
    assert abs(trace.as_arrays()[2][0, 0]) < 5 * math.sqrt(0.5 / 4096)


def test_clip_per_model_leaves_small_gradients_and_skips_missing_ones():
    a, b = torch.nn.Parameter(torch.zeros(2, 2)), torch.nn.Parameter(torch.zeros(2, 1, 1))
    a.grad = torch.tensor([[3.0, 0.0], [0.1, 0.0]])
    b.grad = torch.tensor([[[4.0]], [[0.2]]])
    c = torch.nn.Parameter(torch.zeros(2, 3))  # no gradient: skipped
    mae._clip_per_model([a, c, b], 2.5)
    assert torch.allclose(a.grad, torch.tensor([[1.5, 0.0], [0.1, 0.0]])) and torch.allclose(b.grad[:, 0, 0], torch.tensor([2.0, 0.2]))
    assert c.grad is None
    a.grad = torch.tensor([[0.6, 0.8], [0.0, 0.0]])  # norm exactly 1 = max_norm: unchanged, zero stays zero
    mae._clip_per_model([a], 1.0)
    assert torch.allclose(a.grad, torch.tensor([[0.6, 0.8], [0.0, 0.0]])) and torch.isfinite(a.grad).all()


def test_split_sentences_rules():
    text = "One two three.Four!  Five six? seven<br>eight<BR/>nine . ten, eleven"
    assert mae.split_sentences([text], max_len=2) == [["five", "six", "?"], ["ten", ",", "eleven"]]
    assert mae.split_sentences([text], max_len=3) == [["five", "six", "?"], ["seven", "eight", "nine", "."],
                                                      ["ten", ",", "eleven"]]
    assert mae.split_sentences([text], max_len=8) == [["one", "two", "three", ".", "four", "!"],
                                                      ["five", "six", "?"], ["seven", "eight", "nine", "."],
                                                      ["ten", ",", "eleven"]]
    assert mae.split_sentences(["a b c.", "... !", "x y"], max_len=3) == [["a", "b", "c", "."], ["x", "y"]]
    assert mae.split_sentences(("it's ok",)) == [["it's", "ok"]]  # default max_len 8, tuples accepted


def test_sequence_helpers_by_hand():
    vocab = list(mae.SPECIALS) + ["a", "b"]
    assert mae.decode_tokens([4, 5, mae.PAD, 4], vocab) == "a b"  # stops at padding too
    assert mae.decode_tokens(torch.tensor([5, 4]), vocab) == "b a"
    assert mae.decode_tokens([mae.EOS, 4], vocab) == ""
    tok = mae.encode_sentences([["a"], ["b", "c", "a"]], vocab, max_tokens=2)
    assert tok.tolist() == [[4, mae.EOS, mae.PAD], [5, mae.UNK, mae.EOS]]
    assert mae.build_vocab([["b", "a", "b"], ("c",)], 10) == [*mae.SPECIALS, "b", "a", "c"]


def _small_sequence_model():
    tok = _synthetic_tokens(30, 6, 11, seed=2)
    return mae.SequenceMAE(tok, 11, latent_dim=2, emb=6, hidden=5, k=3, seed=4), tok


def _stepwise_log_p(model, x, z):
    """log p(x|z) decoded one token at a time with the LSTM state carried (an independent pass)."""
    state, prev, total = None, torch.full((x.shape[0],), mae.BOS), torch.zeros(x.shape[0])
    alive = torch.ones(x.shape[0], dtype=torch.bool)
    for t in range(x.shape[1]):
        out, state = model.dec_rnn(torch.cat([model.dec_emb(prev), z], -1)[:, None], state)
        logp = torch.log_softmax(model.dec_out(out[:, 0]), -1).gather(1, x[:, t:t + 1])[:, 0]
        total = total + torch.where(alive, logp, torch.zeros(()))
        alive = alive & (x[:, t] != mae.EOS)
        prev = x[:, t]
    return total


def test_sequence_mae_log_likelihood_and_decoding_stepwise():
    model, tok = _small_sequence_model()
    z = torch.randn(8, 2, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.allclose(model.log_p_x_given_z(tok[:8], z), _stepwise_log_p(model, tok[:8], z), atol=1e-5)
        # greedy decoding picks the most likely token among all but <pad> and <bos> at each step
        x = model.sample_x(z, None, greedy=True)
        state, prev = None, torch.full((8,), mae.BOS)
        done = torch.zeros(8, dtype=torch.bool)
        for t in range(x.shape[1]):
            out, state = model.dec_rnn(torch.cat([model.dec_emb(prev), z], -1)[:, None], state)
            logits = model.dec_out(out[:, 0])
            logits[:, [mae.PAD, mae.BOS]] = -math.inf
            tok_t = logits.argmax(-1) if t < x.shape[1] - 1 else torch.full((8,), mae.EOS)
            assert torch.equal(x[:, t], torch.where(done, torch.full_like(tok_t, mae.PAD), tok_t)), t
            done |= tok_t == mae.EOS
            prev = tok_t
    assert ((x == mae.EOS).sum(1) == 1).all()
    ends = (x == mae.EOS).float().argmax(1)
    assert all((x[i, ends[i] + 1:] == mae.PAD).all() for i in range(8))


def test_sequence_mae_encoder_ignores_padding_and_objective_values():
    model, tok = _small_sequence_model()
    x = tok[:5]
    padded = torch.cat([x, torch.full((5, 3), mae.PAD)], 1)
    with torch.no_grad():
        for a, b in zip(model.encoder(x), model.encoder(padded)):
            assert a.shape == (5, 2) and torch.allclose(a, b, atol=1e-6)
        changed = x.clone()
        changed[:, 0] = 4 + (changed[:, 0] - 3) % 7  # another word first: another code
        assert not torch.allclose(model.encoder(changed)[0], model.encoder(x)[0])
    # the MI estimate's value is mean log r(z|x) on generative samples (the REINFORCE term is 0 in value),
    # r_loss is its negative on fresh samples: replay the generator
    gen = torch.Generator().manual_seed(5)
    got = model.expected_log_r(7, gen)
    replay = torch.Generator().manual_seed(5)
    z = torch.randn(7, 2, generator=replay)
    with torch.no_grad():
        want = model.log_r(z, model.sample_x(z, replay)).mean()
    assert got.shape == (1,) and torch.allclose(got, want.reshape(1), atol=1e-6)
    loss = model.r_loss(7, torch.Generator().manual_seed(5))
    assert torch.allclose(loss, -want, atol=1e-6)
    # log r sums over the latent dimensions: r starts at the prior, so log r = log N(z; 0, I)
    assert torch.allclose(model.log_r(z, tok[:7]), -0.5 * (z ** 2).sum(-1) - math.log(2 * math.pi), atol=1e-6)
    with torch.no_grad():
        e = model.elbo(6, torch.Generator().manual_seed(1))
    assert e.shape == (1,) and e.item() < 0
    assert [n for n, _ in model.named_parameters() if n.startswith("r_")] and \
        len(model.r_parameters()) + len(model.model_parameters()) == len(list(model.parameters()))
    assert all(not any(p is q for q in model.r_parameters()) for p in model.model_parameters())


def test_sequence_reconstruction_rates_by_hand(monkeypatch):
    model, tok = _small_sequence_model()
    x = torch.tensor([[4, 5, 6, mae.EOS, 0, 0], [7, 8, mae.EOS, 0, 0, 0]])
    y = torch.tensor([[4, 9, 6, mae.EOS, 0, 0], [7, 8, mae.EOS, 0, 0, 0]])
    monkeypatch.setattr(model, "sample_x", lambda z, gen, greedy=False: y)
    exact, words, out = mae.sequence_reconstruction_rates(model, x)
    assert exact == 0.5 and words == pytest.approx((2 / 3 + 1) / 2) and torch.equal(out, y)
    longer = torch.tensor([[4, 5, 6, 9, 10, mae.EOS], [7, 8, 9, mae.EOS, 0, 0]])
    monkeypatch.setattr(model, "sample_x", lambda z, gen, greedy=False: longer)
    assert mae.sequence_reconstruction_rates(model, x)[:2] == pytest.approx((0.0, (3 / 5 + 2 / 3) / 2))


_Q3 = torch.full((3,), 1 / 3)
_MAE_BAD = [
    (lambda: mae.gaussian_entropy(0), r"^d \(the dimension\) must be an int >= 1, got 0$"),
    (lambda: mae.gaussian_logpdf(torch.zeros(2), torch.zeros(3), torch.zeros(())),
     r"^x, mu, logvar must broadcast together, got shapes \[\(2,\), \(3,\), \(\)\]$"),
    (lambda: mae.gaussian_logpdf("a", torch.zeros(()), torch.zeros(())), r"^x must be"),
    (lambda: mae.gaussian_logpdf(torch.zeros(()), "m", torch.zeros(())), r"^mu must be"),
    (lambda: mae.gaussian_logpdf(torch.zeros(()), torch.zeros(()), torch.tensor(np.nan)), r"^logvar must be"),
    (lambda: mae.kl_std_normal(torch.zeros(2), torch.zeros(3)), r"^mu, logvar must broadcast together, got shapes"),
    (lambda: mae.bivariate_gaussian_mi(1.0), r"^correlation rho must be finite with \|rho\| < 1, got 1.0$"),
    (lambda: mae.infomax_bound_bivariate_mc([0.5, 0.2], 0.5, 0.75), r"^rho must be one correlation \(a number\), got an array of shape \(2,\)$"),
    (lambda: mae.infomax_bound_bivariate_mc(1.0, 0.5, 0.75), r"^correlation rho must be finite with \|rho\| < 1, got 1.0$"),
    (lambda: mae.infomax_bound_bivariate_mc(0.5, np.nan, 0.75), r"^a must be a finite number, got nan$"),
    (lambda: mae.infomax_bound_bivariate_mc(0.5, 0.5, 0.0), r"^s2 must be a finite number > 0, got 0\.0$"),
    (lambda: mae.infomax_bound_bivariate_mc(0.5, 0.5, 0.75, 1), r"^n_samples must be an int >= 2, got 1$"),
    (lambda: mae.infomax_bound_bivariate_mc(0.5, 0.5, 0.75, 10, -1), r"^seed must be"),
    (lambda: mae.bivariate_gaussian_mi(-1.0), r"^correlation rho must be finite with \|rho\| < 1"),
    (lambda: mae.bivariate_gaussian_mi([]), r"^correlation rho must be finite with \|rho\| < 1, got \[\]$"),
    (lambda: mae.bivariate_gaussian_mi([0.2, np.inf]), r"^correlation rho must be finite"),
    (lambda: mae.bivariate_gaussian_mi("a"), r"^rho \(correlation\) must be"),
    (lambda: mae.infomax_bound_bivariate(0.5, 0.5, 0.0), r"^a must be finite and s2 finite and positive$"),
    (lambda: mae.infomax_bound_bivariate(0.5, 0.5, -1.0), r"^a must be finite and s2 finite and positive$"),
    (lambda: mae.infomax_bound_bivariate(0.5, np.inf, 1.0), r"^a must be finite and s2 finite and positive$"),
    (lambda: mae.infomax_bound_bivariate(0.5, 0.5, np.nan), r"^a must be finite and s2 finite and positive$"),
    (lambda: mae.infomax_bound_bivariate(0.5, "x", 1.0), r"^a must be"),
    (lambda: mae.infomax_bound_bivariate(0.5, 0.5, "x"), r"^s2 must be"),
    (lambda: mae.infomax_bound_bivariate(1.5, 0.5, 1.0), r"^correlation rho must be"),
    (lambda: mae.z_grid(2), r"^G must be an int >= 3, got 2$"),
    (lambda: mae.z_grid(11, 0.0), r"^lim must be"),
    (lambda: mae.NormalMAE([], hidden=4), r"^need a non-empty list of non-negative seeds, got \[\]$"),
    (lambda: mae.NormalMAE([-1]), r"^seeds\[i\] must be"),
    (lambda: mae.NormalMAE(3), r"^seeds must be"),
    (lambda: mae.NormalMAE([0], hidden=0), r"^hidden must be a positive int, got 0$"),
    (lambda: mae.NormalMAE([0], hidden=2.0), r"^hidden must be a positive int, got 2.0$"),
    (lambda: mae.FiniteMAE([0], [0.5, 0.6]), r"^q_x must be a 1-D probability vector$"),
    (lambda: mae.FiniteMAE([0], [0.5, 0.5 - 2e-6]), r"^q_x must be a 1-D probability vector$"),
    (lambda: mae.FiniteMAE([0], [[0.5, 0.5]]), r"^q_x must be a 1-D probability vector$"),
    (lambda: mae.FiniteMAE([0], [-0.5, 1.5]), r"^q_x must be a 1-D probability vector$"),
    (lambda: mae.FiniteMAE([0], "ab"), r"^q_x must be"),
    (lambda: mae.FiniteMAE([0], _Q3, segments=[3], index=[[0], [1], [4]]),
     r"^need positive segment sizes and an integer index of shape \(3, S\) with entries in \[0, 3\]$"),
    (lambda: mae.FiniteMAE([0], _Q3, segments=[3], index=[[0], [1], [-1]]), r"^need positive segment sizes"),
    (lambda: mae.FiniteMAE([0], _Q3, segments=[3], index=[[0.0], [1.0], [2.0]]), r"^need positive segment sizes"),
    (lambda: mae.FiniteMAE([0], _Q3, segments=[3], index=[0, 1, 2]), r"^need positive segment sizes"),
    (lambda: mae.FiniteMAE([0], _Q3, segments=[3], index=[[0], [1]]), r"^need positive segment sizes"),
    (lambda: mae.FiniteMAE([0], _Q3, segments=[3, 0], index=[[0], [1], [2]]),
     r"^need positive segment sizes and an integer index of shape \(3, S\) with entries in \[0, 3\]$"),
    (lambda: mae.FiniteMAE([0], _Q3, k=0), r"^k and hidden must be positive ints, got k=0, hidden=32$"),
    (lambda: mae.FiniteMAE([0], _Q3, hidden=0), r"^k and hidden must be positive ints, got k=1, hidden=0$"),
    (lambda: mae.FiniteMAE([0], _Q3, k=2.0), r"^k and hidden must be positive ints"),
    (lambda: mae.FiniteMAE([0], _Q3, hidden=2.0), r"^k and hidden must be positive ints"),
    (lambda: mae.FiniteMAE([-2], _Q3), r"^seeds\[i\] must be"),
    (lambda: mae.train_mae("m", [1.0]), r"^model must be"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0, 2.0]), r"^targets needs one value per model \(1\), got 2$"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], C=[1.0, 2.0]), r"^C needs one value per model \(1\), got 2$"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [-1.0]), r"^targets\[i\] \(an MI target M\) must be"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], C=-1.0), r"^C\[i\] \(a penalty weight\) must be"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], lr=0.0), r"^lr must be"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], lr_r=0.0), r"^lr_r must be"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], seed=-1), r"^seed must be"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], log_every=0), r"^log_every must be"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], clip=0.0), r"^clip must be"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], anneal=1.5), r"^anneal must be"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], steps=0), r"^steps and batch must be positive ints, got 0, 256$"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], steps=1, batch=0), r"^steps and batch must be positive ints, got 1, 0$"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], steps=1.0), r"^steps and batch must be positive ints"),
    (lambda: mae.train_mae(mae.NormalMAE([0], hidden=4), [1.0], steps=1, batch=2.0), r"^steps and batch must be positive ints"),
    (lambda: mae.training_objective("m", [1.0]), r"^model must be"),
    (lambda: mae.training_objective(mae.NormalMAE([0], hidden=4), [1.0], seed=-1), r"^seed must be"),
    (lambda: mae.training_objective(mae.NormalMAE([0], hidden=4), [1.0, 2.0]), r"^targets needs one value per model"),
    (lambda: mae.best_of_restarts(np.zeros((2, 2)), 2), r"^objective must be"),
    (lambda: mae.best_of_restarts(np.zeros(5), 2), r"^need a 1-D objective whose length is a multiple of restarts=2, got shape \(5,\)$"),
    (lambda: mae.restart_seeds([0], rows=0, restarts=1), r"^rows must be"),
    (lambda: mae.restart_seeds(0, rows=1, restarts=1), r"^seeds must be"),
    (lambda: mae.infomax_estimate("m"), r"^model must be"),
    (lambda: mae.infomax_estimate(mae.NormalMAE([0], hidden=4), 0), r"^n_samples must be a positive int, got 0$"),
    (lambda: mae.infomax_estimate(mae.NormalMAE([0], hidden=4), 2.0), r"^n_samples must be a positive int, got 2.0$"),
    (lambda: mae.infomax_estimate(mae.NormalMAE([0], hidden=4), 5, seed=-1), r"^seed must be"),
    (lambda: mae.normal_exact(mae.FiniteMAE([0], _Q3)), r"^model must be a NormalMAE"),
    (lambda: mae.normal_exact(mae.NormalMAE([0], hidden=4), Gx=1), r"^Gx must be an int >= 2, got 1$"),
    (lambda: mae.normal_exact(mae.NormalMAE([0], hidden=4), x_lim=0.0), r"^x_lim must be"),
    (lambda: mae.normal_exact(mae.NormalMAE([0], hidden=4), G=2), r"^G must be an int >= 3"),
    (lambda: mae.finite_exact(mae.NormalMAE([0], hidden=4)), r"^model must be a FiniteMAE"),
    (lambda: mae.finite_exact(mae.FiniteMAE([0], _Q3), Q=0), r"^Q must be"),
    (lambda: mae.sir_sample(mae.NormalMAE([0], hidden=4), 3), r"^model must be a FiniteMAE"),
    (lambda: mae.sir_sample(mae.FiniteMAE([0], _Q3), 0), r"^n_samples and k must be positive ints, got 0, 1$"),
    (lambda: mae.sir_sample(mae.FiniteMAE([0], _Q3), 3, k=0), r"^n_samples and k must be positive ints, got 3, 0$"),
    (lambda: mae.sir_sample(mae.FiniteMAE([0], _Q3), 3.0), r"^n_samples and k must be positive ints, got 3.0, 1$"),
    (lambda: mae.sir_sample(mae.FiniteMAE([0], _Q3), 3, k=2.0), r"^n_samples and k must be positive ints"),
    (lambda: mae.sir_sample(mae.FiniteMAE([0], _Q3), 3, seed=-1), r"^seed must be"),
    (lambda: mae.encoder_posterior_kl(mae.FiniteMAE([0], _Q3), seed=-1), r"^seed must be"),
    (lambda: mae.word_match_matrix([]), r"^sentences must be"),
    (lambda: mae.word_match_matrix(["a b", 3]), r"^sentences\[i\] must be a str \(a sentence\)"),
    (lambda: mae.reconstruction_rates("m", torch.eye(3)), r"^model must be a FiniteMAE"),
    (lambda: mae.reconstruction_rates(mae.FiniteMAE([0], _Q3), torch.eye(2)), r"^match must have shape \(3, 3\), got \(2, 2\)$"),
    (lambda: mae.reconstruction_rates(mae.FiniteMAE([0], _Q3), "m"), r"^match must be"),
    (lambda: mae.reconstruction_rates(mae.FiniteMAE([0], _Q3), torch.eye(3), Q=0), r"^Q must be"),
    (lambda: mae.reconstruction_rates(mae.FiniteMAE([0], _Q3), torch.eye(3), chunk_size=0), r"^chunk_size must be"),
    (lambda: mae.reconstruction_rates(mae.FiniteMAE([0], _Q3), torch.eye(3), seed=-1), r"^seed must be"),
    (lambda: mae.sample_reconstructions("m", 0), r"^model must be a FiniteMAE"),
    (lambda: mae.sample_reconstructions(mae.FiniteMAE([0], _Q3), 3), r"^x \(an input index\) must be an int >= 0 and <= 2, got 3$"),
    (lambda: mae.sample_reconstructions(mae.FiniteMAE([0], _Q3), 0, n=0), r"^n must be"),
    (lambda: mae.sample_reconstructions(mae.FiniteMAE([0], _Q3), 0, seed=-1), r"^seed must be"),
    (lambda: mae.interpolate("m", 0, 1), r"^model must be a FiniteMAE"),
    (lambda: mae.interpolate(mae.FiniteMAE([0], _Q3), -1, 1), r"^x_a \(an input index\) must be an int >= 0 and <= 2, got -1$"),
    (lambda: mae.interpolate(mae.FiniteMAE([0], _Q3), 0, 3), r"^x_b \(an input index\) must be an int >= 0 and <= 2, got 3$"),
    (lambda: mae.interpolate(mae.FiniteMAE([0], _Q3), 0, 1, n=1), r"^n must be an int >= 2, got 1$"),
    (lambda: mae.split_sentences("a string", 8), r"^texts must be"),
    (lambda: mae.split_sentences(["ok", 3], 8), r"^texts\[i\] must be a str \(a review\)"),
    (lambda: mae.split_sentences(["ok"], 0), r"^max_len must be"),
    (lambda: mae.build_vocab([["a"]], 0), r"^size \(of the vocabulary\) must be"),
    (lambda: mae.build_vocab("ab", 3), r"^sentences must be"),
    (lambda: mae.build_vocab(["ab"], 3), r"^sentences must hold token lists, got str 'ab'$"),
    (lambda: mae.build_vocab([3], 3), r"^sentences must hold token lists, got 3$"),
    (lambda: mae.encode_sentences([], ["a"], 4), r"^sentences: no sentences to encode$"),
    (lambda: mae.encode_sentences([["a"]], [], 4), r"^vocab must be"),
    (lambda: mae.encode_sentences([["a"]], ["a"], 0), r"^max_tokens must be"),
    (lambda: mae.decode_tokens([0, 5], ["a", "b", "c"]), r"^row must hold token ids in \[0, 3\) \(the vocabulary's size\), got \[0, 5\]$"),
    (lambda: mae.decode_tokens([-1], ["a", "b", "c"]), r"^row must hold token ids in \[0, 3\)"),
    (lambda: mae.decode_tokens([0], "abc"), r"^vocab must be"),
    (lambda: mae.decode_tokens([0, 3], ["a", "b", "c"]), r"^row must hold token ids in \[0, 3\) \(the vocabulary's size\), got \[0, 3\]$"),
    (lambda: mae.decode_tokens([0.5], ["a", "b", "c"]), r"^row must be an array of whole numbers"),
    (lambda: mae.decode_tokens([[0]], ["a"]), r"^row must be"),
    (lambda: mae.SequenceMAE(torch.tensor([[4, 10]]), 10), r"^tokens must be a non-empty \(N, T\) long tensor with ids in \[0, 10\)$"),
    (lambda: mae.SequenceMAE(torch.tensor([[4, -1]]), 10), r"^tokens must be a non-empty \(N, T\) long tensor"),
    (lambda: mae.SequenceMAE(torch.tensor([4, 5]), 10), r"^tokens must be a non-empty \(N, T\) long tensor"),
    (lambda: mae.SequenceMAE(torch.tensor([[4, 5]], dtype=torch.int32), 10), r"^tokens must be a non-empty \(N, T\) long tensor"),
    (lambda: mae.SequenceMAE(torch.tensor([[4, 5]]), 0), r"^vocab_size must be"),
    (lambda: mae.SequenceMAE(torch.tensor([[4, 5]]), 10, seed=-1), r"^seed must be"),
    (lambda: mae.SequenceMAE(torch.tensor([[4, 5]]), 10, latent_dim=0), r"^latent_dim, emb, hidden and k must be positive ints$"),
    (lambda: mae.SequenceMAE(torch.tensor([[4, 5]]), 10, emb=0), r"^latent_dim, emb, hidden and k must be positive ints$"),
    (lambda: mae.SequenceMAE(torch.tensor([[4, 5]]), 10, k=0), r"^latent_dim, emb, hidden and k must be positive ints$"),
    (lambda: mae.SequenceMAE(torch.tensor([[4, 5]]), 10, hidden=1.5), r"^latent_dim, emb, hidden and k must be positive ints$"),
    (lambda: mae.sequence_reconstruction_rates("m", torch.tensor([[4]])), r"^model must be a SequenceMAE"),
    (lambda: mae.sequence_reconstruction_rates(_small_sequence_model()[0], torch.tensor([[4, 20]])),
     r"^x must hold token ids in \[0, 11\) \(the model's vocabulary\), got ids from 4 to 20$"),
    (lambda: mae.sequence_reconstruction_rates(_small_sequence_model()[0], torch.tensor([[-1, 2]])),
     r"^x must hold token ids in \[0, 11\)"),
    (lambda: mae.sequence_reconstruction_rates(_small_sequence_model()[0], torch.tensor([4, 5])), r"^x must be"),
    (lambda: mae.sequence_reconstruction_rates(_small_sequence_model()[0], torch.tensor([[4]]), seed=-1), r"^seed must be"),
]


@pytest.mark.parametrize("i", range(len(_MAE_BAD)))
def test_error_messages_name_the_argument(i):
    call, pattern = _MAE_BAD[i]
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()


# ----------------------------------------------------------------------------- documented defaults: a call
# without the argument equals the call with the documented value (mutation testing changes defaults too)

def _same(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return np.array_equal(np.asarray(a), np.asarray(b))


def test_defaults_of_the_exact_evaluations():
    assert mae.gaussian_entropy() == 0.5 * math.log(2 * math.pi * math.e)
    normal = _channel_model(0.5, n=1)
    assert _same(mae.normal_exact(normal), mae.normal_exact(normal, G=2001, lim=7.0, Gx=1601, x_lim=6.0))
    finite = _sharp_finite_model()[0]
    ex = mae.finite_exact(finite)
    assert _same(ex, mae.finite_exact(finite, G=2001, lim=7.0, Q=48)) and len(ex["z"]) == 2001 and ex["z"][-1] == 7.0
    assert not _same(ex["elbo"], mae.finite_exact(finite, Q=47)["elbo"])  # Q is felt at the last digits
    assert _same(mae.infomax_estimate(finite), mae.infomax_estimate(finite, 20000, seed=0))
    assert _same(mae.sir_sample(finite, 5), mae.sir_sample(finite, 5, k=1, seed=0))
    finite.k = 3
    assert _same(mae.sir_sample(finite, 5), mae.sir_sample(finite, 5, k=3, seed=0))
    small = _constant_decoder_model(k=2)
    _sign_net(small.dec, 0.8)
    assert _same(mae.encoder_posterior_kl(small), mae.encoder_posterior_kl(small, n_inner=1000, G=2001, lim=7.0, seed=0))
    assert not _same(mae.encoder_posterior_kl(small)["kl"], mae.encoder_posterior_kl(small, n_inner=999)["kl"])
    obj = mae.training_objective(normal, [1.0])
    assert _same(obj, mae.training_objective(normal, [1.0], C=1.0, n_samples=20000, seed=0))


def test_defaults_of_the_models():
    normal = mae.NormalMAE([0])
    assert [normal.enc.weights[i].shape[1] for i in range(3)] == [32, 32, 2]
    finite = mae.FiniteMAE([0], _Q3)
    assert finite.k == 1 and finite.segments == [3] and finite.dec.weights[0].shape[1] == 32
    assert torch.equal(finite.uses, torch.eye(3)) and finite.D == 3
    model = mae.SequenceMAE(torch.tensor([[4, 5, mae.EOS]]), 8)
    assert (model.latent_dim, model.k, model.enc_emb.embedding_dim, model.enc_rnn.hidden_size) == (16, 5, 128, 256)
    assert torch.equal(model.dec_out.weight, mae.SequenceMAE(torch.tensor([[4, 5, mae.EOS]]), 8, seed=0).dec_out.weight)
    assert not torch.equal(model.dec_out.weight, mae.SequenceMAE(torch.tensor([[4, 5, mae.EOS]]), 8, seed=1).dec_out.weight)


def test_defaults_of_the_reconstructions():
    model = _split_model(0.7, [0.8, -0.3], [0.5, 2.0])
    rates = mae.reconstruction_rates(model, torch.eye(2))
    assert _same(rates, mae.reconstruction_rates(model, torch.eye(2), Q=24, chunk_size=64, seed=0))
    assert not _same(rates, mae.reconstruction_rates(model, torch.eye(2), Q=23))
    model.k = 2  # the smallest k that resamples: its draws depend on the seed
    rates = mae.reconstruction_rates(model, torch.eye(2))
    assert _same(rates, mae.reconstruction_rates(model, torch.eye(2), Q=24, seed=0))
    assert not _same(rates, mae.reconstruction_rates(model, torch.eye(2), seed=1))
    model = _split_model(0.5, [0.0, 0.0], [1.0, 1.0])
    rec = mae.sample_reconstructions(model, 1)
    assert rec.shape == (1, 3) and _same(rec, mae.sample_reconstructions(model, 1, n=3, seed=0))
    seq, tok = _small_sequence_model()
    out = mae.sequence_reconstruction_rates(seq, tok[:6])
    assert _same(out, mae.sequence_reconstruction_rates(seq, tok[:6], seed=0, greedy=False))
    assert not _same(out[2], mae.sequence_reconstruction_rates(seq, tok[:6], greedy=True)[2])
    z = torch.randn(4, 2)
    with torch.no_grad():
        a = seq.sample_x(z, torch.Generator().manual_seed(0))
        b = seq.sample_x(z, torch.Generator().manual_seed(0), greedy=False)
    assert torch.equal(a, b)


def test_defaults_of_train_mae(monkeypatch):
    # tqdm is replaced by step 50 of the default 1000 alone: one Algorithm 4.1 step with every default
    # (lr 1e-3, batch 256, seed 0, C 1, lr_r = lr, no clip, no annealing), logged since 50 % 50 == 0
    seen = []

    def one_step(it, **kw):
        seen.append((len(it), kw.get("desc")))
        return [50]

    monkeypatch.setattr(mae, "tqdm", one_step)
    params, traces = [], []
    for kwargs in ({}, dict(C=1.0, steps=1000, lr=1e-3, lr_r=1e-3, batch=256, seed=0, log_every=50, desc="MAE",
                            clip=None, anneal=0.0)):
        model = mae.NormalMAE([0], hidden=4)
        traces.append(mae.train_mae(model, [0.5], **kwargs))
        params.append([p.detach().clone() for p in model.parameters()])
    assert seen == [(1000, "MAE"), (1000, "MAE")]
    assert all(torch.equal(a, b) for a, b in zip(*params))
    assert traces[0].steps == [50] and _same(traces[0].elbo, traces[1].elbo)
    model = mae.NormalMAE([0], hidden=4)
    mae.train_mae(model, [0.5], anneal=1.0)  # decayed to 0.95 lr at step 50: another step
    assert not all(torch.equal(a, b.detach()) for a, b in zip(params[0], model.parameters()))


def test_split_sentences_default_length_and_load_imdb_sentences(monkeypatch):
    nine = "one two three four five six seven eight nine ."
    eight = "one two three four five six seven eight ."
    assert mae.split_sentences([nine + " " + eight]) == [eight.split()]
    import lib.data

    reviews = ["A good film. A really really really really really really really long one!<br />Bad.",
               "A good film? Bad, bad."]
    monkeypatch.setattr(lib.data, "load_online", lambda name: {"train": {"text": reviews, "label": [1, 0]}}
                        if name == "imdb" else None)
    tok, vocab = mae.load_imdb_sentences()
    # sentences of at most 8 words (the 9-word one is dropped), vocabulary by count, 12 tokens + <eos>
    assert vocab == [*mae.SPECIALS, ".", "bad", "a", "film", "good", ",", "?"]  # ties alphabetical
    assert tok.shape == (4, 13) and tok[3, :6].tolist() == [5, 9, 5, 4, mae.EOS, mae.PAD]
    tok2, vocab2 = mae.load_imdb_sentences(max_len=8, vocab_size=20000, max_tokens=12)
    assert torch.equal(tok, tok2) and vocab2 == vocab
    tok3, vocab3 = mae.load_imdb_sentences(max_len=12, vocab_size=2, max_tokens=3)
    assert vocab3 == [*mae.SPECIALS, "really", "."] and tok3.shape == (5, 4)  # the 10-word sentence is in


# ----------------------------------------------------------------------------- model construction edge cases,
# seeded initialisation, training direction, divergence

def test_finite_mae_index_edge_cases():
    # a zero-probability input and a size-1 segment are allowed; a column used twice counts twice
    model = mae.FiniteMAE([0], [0.5, 0.5, 0.0], segments=[3, 1], index=[[0, 3], [1, 3], [2, 4]], hidden=1)
    z = torch.randn(1, 5)
    logits = model.dec(z.reshape(1, -1, 1)).reshape(1, 5, 4)
    assert torch.allclose(model.log_p_all(z), torch.log_softmax(logits[..., :3], -1), atol=1e-6)  # log 1 = 0 added
    twice = mae.FiniteMAE([0], [0.5, 0.5], index=[[0, 0], [1, 1]], hidden=3)
    once = mae.FiniteMAE([0], [0.5, 0.5], index=[[0], [1]], hidden=3)
    assert torch.allclose(twice.log_p_all(z), 2 * once.log_p_all(z), atol=1e-6)
    # three segments of sizes 2, 3, 2 with nonzero logits: each x scores one column per segment
    three = mae.FiniteMAE([1], torch.full((2,), 0.5), segments=[2, 3, 2], index=[[0, 4, 5], [1, 2, 6]], hidden=4)
    logits = three.dec(z.reshape(1, -1, 1)).reshape(1, 5, 7)
    s = [torch.log_softmax(logits[..., a:b], -1) for a, b in ((0, 2), (2, 5), (5, 7))]
    want = torch.stack([s[0][..., 0] + s[1][..., 2] + s[2][..., 0], s[0][..., 1] + s[1][..., 0] + s[2][..., 1]], -1)
    assert torch.allclose(three.log_p_all(z), want, atol=1e-5)
    assert mae.NormalMAE([0], hidden=1).dec.weights[0].shape == (1, 1, 1)


def test_models_are_seeded_per_component():
    # model seed s: encoder stream 10 s, decoder 10 s + 1, r 10 s + 2 (independent, reproducible)
    from lib.nets import BatchedMLP

    normal = mae.NormalMAE([3, 4], hidden=5)
    for net, j in ((normal.enc, 0), (normal.dec, 1)):
        ref = BatchedMLP([1, 5, 5, 2], seeds=[30 + j, 40 + j])
        assert all(torch.equal(a, b) for a, b in zip(net.parameters(), ref.parameters())), j
    ref = BatchedMLP([1, 5, 5, 2], seeds=[32, 42])
    assert torch.equal(normal.r.weights[0], ref.weights[0]) and torch.equal(normal.r.weights[1], ref.weights[1])
    finite = mae.FiniteMAE([3], torch.full((2000,), 1 / 2000), hidden=5)
    ref = BatchedMLP([1, 5, 5, 2000], seeds=[31])
    assert all(torch.equal(a, b) for a, b in zip(finite.dec.parameters(), ref.parameters()))
    assert torch.equal(finite.enc_mu[0], 0.1 * torch.randn(2000, generator=torch.Generator().manual_seed(30)))
    assert finite.enc_mu.std().item() == pytest.approx(0.1, rel=0.1)  # near the prior's mean, as documented
    assert (finite.enc_logvar == 0).all() and (finite.r_mu == 0).all() and (finite.r_logvar == 0).all()


def test_sequence_mae_smallest_sizes_and_list_tokens():
    model = mae.SequenceMAE([[4, mae.EOS]], 6, latent_dim=1, emb=1, hidden=1, k=1)
    assert model.tokens.tolist() == [[4, mae.EOS]] and model.latent_dim == 1 and model.k == 1
    one = mae.SequenceMAE(torch.tensor([[mae.EOS]]), 3, latent_dim=2, emb=2, hidden=2, k=2)
    assert one.encoder(one.tokens)[0].shape == (1, 2)


def test_vae_training_raises_the_exact_elbo():
    # Algorithm 4.1 without a target is VAE training: a few Adam steps raise the exact ELBO (quadrature)
    model = mae.FiniteMAE([2], torch.full((4,), 0.25), hidden=8)
    before = mae.finite_exact(model)["elbo"][0]
    mae.train_mae(model, [None], steps=40, lr=2e-2, batch=64, seed=1)
    assert mae.finite_exact(model)["elbo"][0] > before + 0.05


def test_train_mae_names_the_step_at_which_the_elbo_diverged(monkeypatch):
    model = mae.FiniteMAE([0], torch.full((3,), 1 / 3), hidden=4)
    orig = mae.FiniteMAE.elbo
    monkeypatch.setattr(mae.FiniteMAE, "elbo", lambda self, B, gen: orig(self, B, gen) * float("nan"))
    with pytest.raises(mae.V.TrainingDivergedError, match=r"^the training ELBO became NaN or infinite by step 1 with lr=0\.01:"):
        mae.train_mae(model, [1.0], steps=5, lr=0.01, batch=8, log_every=1)


def test_gaussian_helpers_take_numbers_and_small_grids():
    assert mae.kl_std_normal(2.0, torch.tensor(0.0)).item() == pytest.approx(2.0)
    assert mae.gaussian_logpdf(1.0, torch.tensor(0.0), torch.tensor(0.0)).item() == pytest.approx(-0.5 * (math.log(2 * math.pi) + 1))
    z, log_w = mae.z_grid(5, 0.5)
    assert z.tolist() == [-0.5, -0.25, 0.0, 0.25, 0.5] and torch.exp(log_w).sum().item() == pytest.approx(1.0)


def _unpacked_gauss(x_row, emb, rnn, out):
    """The Gaussian head of one unpadded sentence, run without packing (a second computation)."""
    _, (h, _) = rnn(emb(x_row[None]))
    return out(torch.cat([h[0], h[1]], -1)).chunk(2, -1)


def test_sequence_mae_encoder_and_r_by_an_unpacked_pass():
    model, tok = _small_sequence_model()
    with torch.no_grad():
        model.r_out.weight.normal_(0, 0.3)  # r away from its prior start, so that its head is exercised
        mu, lv = model.encoder(tok[:4])
        r_mu, r_lv = model._gauss(tok[:4], model.r_emb, model.r_rnn, model.r_out)
        for i in range(4):
            L = int((tok[i] != mae.PAD).sum())
            m, v = _unpacked_gauss(tok[i, :L], model.enc_emb, model.enc_rnn, model.enc_out)
            assert torch.allclose(mu[i], m[0], atol=1e-5) and torch.allclose(lv[i], v[0], atol=1e-5)
            m, v = _unpacked_gauss(tok[i, :L], model.r_emb, model.r_rnn, model.r_out)
            assert torch.allclose(r_mu[i], m[0], atol=1e-5) and torch.allclose(r_lv[i], v[0], atol=1e-5)
        z = torch.randn(4, 2)
        want = torch.distributions.Normal(r_mu, torch.exp(0.5 * r_lv)).log_prob(z).sum(-1)
        assert torch.allclose(model.log_r(z, tok[:4]), want, atol=1e-5)
        model.enc_out.bias[2:].fill_(100.0)  # log-variances far out of range are clamped
        model.enc_out.bias[:2].fill_(0.0)
        model.enc_out.weight.zero_()
        assert (model.encoder(tok[:2])[1] == mae.LOGVAR_MAX).all()
        model.enc_out.bias[2:].fill_(-100.0)
        assert (model.encoder(tok[:2])[1] == mae.LOGVAR_MIN).all()


def test_sequence_mae_iwae_bound_by_replaying_the_generator():
    # elbo(B) draws B sentences, k codes per sentence from q(z|x), and averages log mean_k p(x, z) / q(z|x)
    model, tok = _small_sequence_model()
    with torch.no_grad():
        got = model.elbo(5, torch.Generator().manual_seed(7))
        gen = torch.Generator().manual_seed(7)
        x = tok[torch.randint(len(tok), (5,), generator=gen)]
        mu, lv = model.encoder(x)
        q = torch.distributions.Normal(mu[:, None], torch.exp(0.5 * lv)[:, None])
        z = q.loc + q.scale * torch.randn(5, 3, 2, generator=gen)
        log_px = torch.stack([_stepwise_log_p(model, x, z[:, j]) for j in range(3)], 1)
        log_w = log_px + torch.distributions.Normal(0.0, 1.0).log_prob(z).sum(-1) - q.log_prob(z).sum(-1)
        want = (torch.logsumexp(log_w, 1) - math.log(3)).mean()
    assert got.shape == (1,) and got.item() == pytest.approx(want.item(), abs=1e-4)


def test_sequence_mae_mi_gradient_is_reinforce_with_the_batch_mean_baseline():
    model, _ = _small_sequence_model()
    with torch.no_grad():
        model.r_out.weight.normal_(0, 0.3)
    model.zero_grad()
    model.expected_log_r(6, torch.Generator().manual_seed(9)).sum().backward()
    got = [p.grad.clone() for p in model.dec_out.parameters()]
    r_got = [p.grad.clone() for p in model.r_out.parameters()]
    # the same samples, and the estimator of (C.19) written out: mean log r + mean (log r - its mean) * score
    gen = torch.Generator().manual_seed(9)
    z = torch.randn(6, 2, generator=gen)
    x = model.sample_x(z, gen)
    model.zero_grad()
    log_r = model.log_r(z, x)
    score = _stepwise_log_p(model, x, z)
    (log_r.mean() + ((log_r - log_r.mean()).detach() * score).mean()).backward()
    assert all(torch.allclose(a, p.grad, atol=1e-5) for a, p in zip(got, model.dec_out.parameters()))
    assert all(torch.allclose(a, p.grad, atol=1e-5) for a, p in zip(r_got, model.r_out.parameters()))
    assert any(g.abs().sum() > 0 for g in got)


def test_text_helpers_at_their_smallest():
    assert mae.split_sentences(["a b. c. d e f!"], max_len=1) == [["c", "."]]
    assert mae.word_match_matrix(["a b"]).tolist() == [[1.0]]
    assert mae.encode_sentences([["x", "y"]], ["<pad>"], 1).tolist() == [[mae.UNK, mae.EOS]]
    assert mae.encode_sentences([["<pad>"]], ["<pad>"], 2).tolist() == [[0, mae.EOS, mae.PAD]]
    _, q, segs, index = mae.SentenceGrammar().build()
    assert q.dtype == torch.float64 and index.dtype == torch.int64 and segs[0] == 4


def test_elbos_and_joint_samples_by_replaying_the_generator():
    from torch.distributions import Normal, kl_divergence

    model = mae.NormalMAE([0, 1], hidden=4)
    with torch.no_grad():
        got = model.elbo(7, torch.Generator().manual_seed(3))
        gen = torch.Generator().manual_seed(3)
        x = torch.randn(2, 7, generator=gen)
        mu, lv = model.encoder(x)
        q = Normal(mu, torch.exp(0.5 * lv))
        z = mu + q.scale * torch.randn(mu.shape, generator=gen)
        dmu, dlv = model.decoder(z)
        want = (Normal(dmu, torch.exp(0.5 * dlv)).log_prob(x) - kl_divergence(q, Normal(0.0, 1.0))).mean(1)
        assert got.shape == (2,) and torch.allclose(got, want, atol=1e-5)
        gz, gx = model.sample_joint(5, torch.Generator().manual_seed(4))
        gen = torch.Generator().manual_seed(4)
        z = torch.randn(2, 5, generator=gen)
        dmu, dlv = model.decoder(z)
        assert torch.equal(gz, z) and torch.allclose(gx, dmu + torch.exp(0.5 * dlv) * torch.randn(2, 5, generator=gen))
        # FiniteMAE, IWAE-2: S = ceil(B / K) draws per input, k = 2 proposals each, x scored by log_p_all
        fm, *_ = _sharp_finite_model()
        fm.k = 2
        with torch.no_grad():
            fm.enc_mu.copy_(torch.linspace(-1, 1, 10)[None])
            fm.enc_logvar.fill_(math.log(0.3))
        got = fm.elbo(15, torch.Generator().manual_seed(5))
        gen = torch.Generator().manual_seed(5)
        mu, lv = fm.encoder()
        qz = Normal(mu[..., None], torch.exp(0.5 * lv)[..., None])
        z = qz.loc + qz.scale * torch.randn(1, 10, 4, generator=gen)
        log_px = fm.log_p_all(z).gather(-1, torch.arange(10)[None, :, None, None].expand(1, 10, 4, 1))[..., 0]
        log_w = (log_px + Normal(0.0, 1.0).log_prob(z) - qz.log_prob(z)).reshape(1, 10, 2, 2)
        want = ((torch.logsumexp(log_w, -1) - math.log(2)).mean(-1) * fm.q_x).sum(-1)
        assert torch.allclose(got, want, atol=1e-5)
        # a batch smaller than K still draws one code per input (S = 1)
        got = fm.elbo(5, torch.Generator().manual_seed(6))
        gen = torch.Generator().manual_seed(6)
        z = qz.loc + qz.scale * torch.randn(1, 10, 2, generator=gen)
        log_px = fm.log_p_all(z).gather(-1, torch.arange(10)[None, :, None, None].expand(1, 10, 2, 1))[..., 0]
        log_w = log_px + Normal(0.0, 1.0).log_prob(z) - qz.log_prob(z)
        want = ((torch.logsumexp(log_w, -1) - math.log(2)) * fm.q_x).sum(-1)
        assert torch.allclose(got, want, atol=1e-5)


def test_finite_mae_r_loss_does_not_reach_the_model():
    model = mae.FiniteMAE([0], torch.full((3,), 1 / 3), hidden=4)
    model.r_loss(16, torch.Generator().manual_seed(0)).backward()
    assert all(p.grad is None for p in model.dec.parameters()) and model.r_mu.grad is not None
    model.zero_grad(set_to_none=True)
    model.expected_log_r(16, torch.Generator().manual_seed(0)).sum().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in model.dec.parameters())


@pytest.mark.parametrize("change, match", [
    (dict(batch=0), r"MAEConfig\.batch must be an int >= 1"), (dict(n_seeds="3"), r"MAEConfig\.n_seeds must be an int"),
    (dict(normal_steps=2.5), r"MAEConfig\.normal_steps must be an int"), (dict(cat_lr=0.0), r"MAEConfig\.cat_lr must be"),
    (dict(C=-1.0), r"MAEConfig\.C must be"), (dict(normal_anneal=1.5), r"MAEConfig\.normal_anneal must be"),
    (dict(cat_targets=()), r"MAEConfig\.cat_targets must be a sequence of at least 1"),
    (dict(text_targets=(1.0, float("nan"))), r"MAEConfig\.text_targets\[1\] must be"),
    (dict(imdb_batch=True), r"MAEConfig\.imdb_batch must be an int")])
def test_config_fields_are_checked_at_construction(change, match):
    with pytest.raises(ValueError, match=match):
        mae.MAEConfig(**change)


def test_configs_of_every_scale_are_valid():
    from dataclasses import replace

    from lib.smoke import smoke_config

    for cfg in (mae.CONFIGS.quick, mae.CONFIGS.full, mae.CONFIGS.paper,
                smoke_config(mae.CONFIGS.paper, mae.CONFIGS.chapter, mae.CONFIGS.quick)):
        assert replace(cfg) == cfg
    assert mae.MAEConfig(normal_anneal=1.0, C=0.0, c_sweep=()).c_sweep == ()  # edges that mean something


def test_word_match_matrix_of_empty_sentences():
    """Two empty sentences match 1 (defined, not 0/0); an empty and a non-empty one match 0."""
    M = mae.word_match_matrix(["", "a b", "", "a c d"])
    assert torch.isfinite(M).all()
    assert M.tolist() == [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1 / 3], [1.0, 0.0, 1.0, 0.0], [0.0, 1 / 3, 0.0, 1.0]]
    assert mae.word_match_matrix([""]).tolist() == [[1.0]]


@pytest.mark.parametrize("change, match", [
    (dict(templates=()), r"SentenceGrammar\.templates must be a sequence of at least 1"),
    (dict(templates=("the {noun} .", 3)), r"SentenceGrammar\.templates\[1\] must be a str"),
    (dict(templates=("the {villain} .",)), r"SentenceGrammar\.templates: 'the \{villain\} \.' uses the slot\(s\) \['villain'\]"),
    (dict(slots=(("noun", ()),)), r"SentenceGrammar\.slots\[0\]\[1\] must be a sequence of at least 1"),
    (dict(slots=(("noun",),)), r"SentenceGrammar\.slots\[0\] must be a tuple of 2 items")])
def test_sentence_grammar_checks_its_templates_and_slots(change, match):
    with pytest.raises(ValueError, match=match):
        mae.SentenceGrammar(**change)
    small = mae.SentenceGrammar(templates=("the {noun} .",), slots=(("noun", ("movie", "film")),))
    assert small.build()[0] == ["the movie .", "the film ."]


def test_sizes_and_counts_refuse_bools():
    with pytest.raises(ValueError, match="hidden"):
        mae.NormalMAE([0], hidden=True)
