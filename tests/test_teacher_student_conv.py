"""lib.teacher_student_conv: Fig. 10's CIFAR-10 configuration, one step on random data of CIFAR-10's shape."""

import math

import numpy as np
import pytest
import torch

from lib import teacher_student_conv as TC


def cifar_batch(n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, *TC.PAPER.image, generator=g)


def test_paper_configuration_one_step_on_cifar_shaped_data():
    cfg = TC.PAPER
    assert cfg.channels == (64, 64, 64, 64) and cfg.image == (3, 32, 32) and cfg.classes == 10
    teacher = TC.ConvNet(cfg.channels, cfg.classes, cfg.image, cfg.kernel, seed=0)
    x = cifar_batch()
    hidden, out = teacher(x)
    assert [tuple(h.shape) for h in hidden] == [(6, 64, 30, 30), (6, 64, 28, 28), (6, 64, 26, 26), (6, 64, 24, 24)]
    assert out.shape == (6, 10)
    pruned = TC.prune_channels(teacher, cfg.prune_ratio)
    assert [c.out_channels for c in pruned.convs] == [32, 32, 32, 32]
    for multi in cfg.multis:
        student = TC.make_student(pruned, multi, seed=1)
        assert [c.out_channels for c in student.convs] == [32 * multi] * 4
    student = TC.make_student(pruned, 2, seed=1)
    before = [p.detach().clone() for p in student.parameters()]
    loss0 = TC.train_step(pruned, student, x, cfg.lr)
    # the loss and the update against an autograd computation written out here
    ref = TC.make_student(pruned, 2, seed=1)
    with torch.no_grad():
        target = pruned(x)[1]
    loss = 0.5 * ((target - ref(x)[1]) ** 2).sum(1).mean()
    loss.backward()
    assert abs(loss0 - loss.detach().item()) < 1e-5 * max(1.0, loss.detach().item())
    for p, p0, r in zip(student.parameters(), before, ref.parameters()):
        assert torch.allclose(p, p0 - cfg.lr * r.grad, atol=1e-6)
    assert TC.train_step(pruned, student, x, cfg.lr) < loss0          # one small step lowers the batch loss
    rho = TC.channel_best_correlations(pruned, student, x)
    assert [r.shape for r in rho] == [(32,)] * 4 and all(((r > -1 - 1e-6) & (r < 1 + 1e-6)).all() for r in rho)


def test_pruning_keeps_the_strongest_channels_and_the_function_on_them():
    teacher = TC.ConvNet((4, 3), 2, (1, 6, 6), seed=0)
    with torch.no_grad():
        teacher.convs[1].weight[:, 2] *= 10.0          # channel 2 of layer 1: the largest fan-out
        teacher.convs[1].weight[:, 0] *= 0.01          # channel 0: the smallest
    small = TC.prune_channels(teacher, 0.5)
    assert [c.out_channels for c in small.convs] == [2, 2]
    fan = teacher.convs[1].weight.detach().abs().mean(dim=(0, 2, 3))
    keep0 = sorted(torch.argsort(fan, descending=True)[:2].tolist())
    assert 2 in keep0 and 0 not in keep0
    # brute force: zero the pruned channels of the full teacher (their outgoing weights), compare outputs
    x = torch.randn(5, 1, 6, 6, generator=torch.Generator().manual_seed(1))
    masked = TC.ConvNet((4, 3), 2, (1, 6, 6), seed=0)
    masked.load_state_dict(teacher.state_dict())
    fc_fan = teacher.fc.weight.detach().abs().reshape(2, 3, -1).mean(dim=(0, 2))
    keep1 = sorted(torch.argsort(fc_fan, descending=True)[:2].tolist())    # round(3 * 0.5) = 2 of 3
    with torch.no_grad():
        for c in set(range(4)) - set(keep0):
            masked.convs[1].weight[:, c] = 0.0
        for c in set(range(3)) - set(keep1):
            masked.fc.weight.reshape(2, 3, -1)[:, c] = 0.0
    assert torch.allclose(small(x)[1], masked(x)[1], atol=1e-5)
    assert torch.allclose(small(x)[0][0], masked(x)[0][0][:, keep0], atol=1e-6)


def test_channel_correlation_of_a_copy_is_one_and_errors_name_the_argument():
    teacher = TC.ConvNet((3, 2), 2, (1, 7, 7), seed=0)
    x = torch.randn(4, 1, 7, 7, generator=torch.Generator().manual_seed(2))
    assert all(torch.allclose(r, torch.ones_like(r), atol=1e-5) for r in TC.channel_best_correlations(teacher, teacher, x))
    with pytest.raises(ValueError, match=r"^x must hold images of shape \(1, 7, 7\)"):
        TC.channel_best_correlations(teacher, teacher, torch.zeros(2, 1, 6, 6))
    with pytest.raises(ValueError, match="^image must be"):
        TC.ConvNet((3, 2, 2), 2, (1, 6, 6))
    with pytest.raises(ValueError, match="^ratio"):
        TC.prune_channels(teacher, 1.0)
    with pytest.raises(ValueError, match="^teacher must be a ConvNet"):
        TC.make_student("x", 2)
    with pytest.raises(ValueError, match="^multi must be"):
        TC.make_student(teacher, 0)
    with pytest.raises(ValueError, match="same number of outputs"):
        TC.train_step(teacher, TC.ConvNet((3, 2), 3, (1, 7, 7)), x, 0.1)
    with pytest.raises(ValueError, match="^lr must be"):
        TC.train_step(teacher, teacher, x, 0.0)
    state = torch.random.get_rng_state()
    TC.ConvNet((2,), 2, (1, 4, 4), seed=5)
    assert torch.equal(state, torch.random.get_rng_state())          # the seeded init leaves the global RNG alone
    again, other = TC.ConvNet((3, 2), 2, (1, 7, 7), seed=0), TC.ConvNet((3, 2), 2, (1, 7, 7), seed=1)
    assert torch.equal(again.convs[0].weight, teacher.convs[0].weight) and not torch.equal(other.convs[0].weight, teacher.convs[0].weight)


# ------------------------------------------------------------------ independent references

def reference_forward(net, x):
    """Hidden activations and output of ``net`` by torch.nn.functional ops written out here."""
    h, hidden = x.double(), []
    for conv in net.convs:
        h = torch.relu(torch.nn.functional.conv2d(h, conv.weight.double(), conv.bias.double()))
        hidden.append(h)
    return hidden, h.flatten(1) @ net.fc.weight.double().T + net.fc.bias.double()


def brute_force_correlations(Ht, Hs):
    """Each teacher channel's best Pearson correlation with a student channel, by loops over channel
    pairs (numpy's corrcoef in float64; a constant channel correlates 0)."""
    out = []
    for t, s in zip(Ht, Hs):
        T = t.detach().double().transpose(0, 1).flatten(1).numpy()
        S = s.detach().double().transpose(0, 1).flatten(1).numpy()
        best = []
        for a in T:
            rs = [0.0 if a.std() == 0 or b.std() == 0 else float(np.corrcoef(a, b)[0, 1]) for b in S]
            best.append(max(rs))
        out.append(np.array(best))
    return out


def brute_force_keep(net, ratio):
    """The channels prune_channels must keep, by loops: mean |weight| leaving each channel."""
    keeps = []
    for l, conv in enumerate(net.convs):
        c = conv.out_channels
        if l + 1 < len(net.convs):
            W = net.convs[l + 1].weight.detach()
            fan = [float(W[:, j].abs().mean()) for j in range(c)]
        else:
            W = net.fc.weight.detach()
            per = W.shape[1] // c          # the flattened (channel, row, column) layout of the linear layer
            fan = [float(W[:, j * per:(j + 1) * per].abs().mean()) for j in range(c)]
        k = max(1, int(math.floor(c * (1 - ratio) + 0.5)))   # (the cases below avoid ties: round() halves to even)
        keeps.append(sorted(sorted(range(c), key=lambda j: -fan[j])[:k]))
    return keeps


def masked_copy(net, keeps, shape):
    """``net`` with the pruned channels' outgoing weights set to zero."""
    masked = TC.ConvNet([c.out_channels for c in net.convs], net.fc.out_features, shape,
                        net.convs[0].kernel_size[0], seed=0)
    masked.load_state_dict(net.state_dict())
    with torch.no_grad():
        for l, keep in enumerate(keeps):
            drop = [j for j in range(net.convs[l].out_channels) if j not in keep]
            if l + 1 < len(net.convs):
                masked.convs[l + 1].weight[:, drop] = 0.0
            else:
                masked.fc.weight.view(net.fc.out_features, net.convs[l].out_channels, -1)[:, drop] = 0.0
    return masked


# ------------------------------------------------------------------ the network

def test_forward_equals_functional_ops_on_non_square_images_and_other_kernels():
    for channels, image, kernel in [((3, 2), (2, 5, 7), 3), ((4,), (1, 6, 4), 2), ((2,), (1, 3, 3), 3),
                                    ((2, 3, 1), (3, 9, 8), 2)]:
        net = TC.ConvNet(channels, 4, image, kernel, seed=3)
        x = torch.randn(3, *image, generator=torch.Generator().manual_seed(0))
        hidden, out = net(x)
        ref_hidden, ref_out = reference_forward(net, x)
        assert net.fc.in_features == channels[-1] * (image[1] - len(channels) * (kernel - 1)) * (image[2] - len(channels) * (kernel - 1))
        assert all(c.kernel_size == (kernel, kernel) for c in net.convs)
        assert torch.allclose(out.double(), ref_out, atol=1e-5)
        assert all(torch.allclose(h.double(), r, atol=1e-5) for h, r in zip(hidden, ref_hidden))


def test_convnet_defaults_seed_and_room_for_the_convolutions():
    net = TC.ConvNet((2,), image=(1, 4, 4))
    assert net.fc.out_features == 10 and net.convs[0].kernel_size == (3, 3)
    assert torch.equal(net.convs[0].weight, TC.ConvNet((2,), 10, (1, 4, 4), 3, seed=0).convs[0].weight)
    assert TC.ConvNet((2,), image=(1, 3, 3)).fc.in_features == 2        # the last pixel: a 1x1 output fits
    with pytest.raises(ValueError, match=r"^image must be \(channels, height, width\) with room for 2 unpadded 3x3"):
        TC.ConvNet((2, 2), 2, (1, 4, 8))                               # height 4 leaves 0 rows after two convs
    with pytest.raises(ValueError, match=r"^image must be \(channels, height, width\)"):
        TC.ConvNet((2, 2), 2, (1, 8, 4))


def test_convnet_errors_name_the_argument():
    with pytest.raises(ValueError, match="^channels must be a list or tuple"):
        TC.ConvNet(5)
    with pytest.raises(ValueError, match=r"^channels must be a sequence of at least 1"):
        TC.ConvNet(())
    with pytest.raises(ValueError, match=r"^channels\[1\] must be"):
        TC.ConvNet((2, 0))
    with pytest.raises(ValueError, match="^classes must be"):
        TC.ConvNet((2,), 0, (1, 4, 4))
    with pytest.raises(ValueError, match="^kernel must be"):
        TC.ConvNet((2,), 2, (1, 4, 4), 0)
    with pytest.raises(ValueError, match="^image must be a list or tuple"):
        TC.ConvNet((2,), 2, 4)
    with pytest.raises(ValueError, match="^image must be a sequence of at least 3"):
        TC.ConvNet((2,), 2, (4, 4))
    with pytest.raises(ValueError, match=r"^image\[1\] must be"):
        TC.ConvNet((2,), 2, (1, 0, 4))


# ------------------------------------------------------------------ pruning and students

@pytest.mark.parametrize("channels, image, kernel, ratio", [
    ((4, 3, 5), (2, 8, 9), 3, 0.4),     # three layers of different widths (the last one feeds the linear layer)
    ((3, 4), (1, 6, 6), 2, 0.9),        # round(0.3) = 0 channels: at least one is kept
    ((5,), (1, 5, 6), 2, 0.4),          # one layer, kernel 2
])
def test_pruned_net_is_the_masked_teacher(channels, image, kernel, ratio):
    net = TC.ConvNet(channels, 3, image, kernel, seed=2)
    keeps = brute_force_keep(net, ratio)
    small = TC.prune_channels(net, ratio)
    assert [c.out_channels for c in small.convs] == [len(k) for k in keeps]
    assert all(c.kernel_size == (kernel, kernel) for c in small.convs)
    x = torch.randn(4, *image, generator=torch.Generator().manual_seed(5))
    masked = masked_copy(net, keeps, image)
    hs, out = small(x)
    hm, ref = masked(x)
    assert torch.allclose(out, ref, atol=1e-5)
    for h, m, keep in zip(hs, hm, keeps):
        assert torch.allclose(h, m[:, keep], atol=1e-5)
    if ratio == 0.9:
        assert [len(k) for k in keeps] == [1, 1]


def test_students_copy_the_teachers_shapes_and_kernel():
    for channels, image, kernel in [((3, 2), (1, 7, 6), 2), ((2,), (2, 5, 5), 4)]:
        teacher = TC.ConvNet(channels, 3, image, kernel, seed=0)
        student = TC.make_student(teacher, 3)
        assert [c.out_channels for c in student.convs] == [3 * c for c in channels]
        assert all(c.kernel_size == (kernel, kernel) for c in student.convs)
        assert student.image == image and student.fc.out_features == 3
        same = TC.ConvNet([3 * c for c in channels], 3, image, kernel, seed=0)  # default seed 0
        assert all(torch.equal(a, b) for a, b in zip(student.state_dict().values(), same.state_dict().values()))
    with pytest.raises(ValueError, match="^net must be a ConvNet"):
        TC.prune_channels("net", 0.5)


# ------------------------------------------------------------------ correlations

def test_channel_correlations_equal_a_brute_force_over_channel_pairs():
    teacher = TC.ConvNet((3, 4), 2, (2, 7, 6), seed=0)
    student = TC.ConvNet((5, 2), 2, (2, 7, 6), seed=1)
    x = torch.randn(6, 2, 7, 6, generator=torch.Generator().manual_seed(3))
    got = TC.channel_best_correlations(teacher, student, x)
    ref = brute_force_correlations(teacher(x)[0], student(x)[0])
    assert [r.shape for r in got] == [(3,), (4,)]
    for r, e in zip(got, ref):
        assert np.allclose(r.numpy(), e, atol=1e-5)
    # a numpy array is converted; a dead (constant) teacher channel correlates 0
    with torch.no_grad():
        teacher.convs[1].bias[0] = -1e3
    got = TC.channel_best_correlations(teacher, student, x.numpy())
    assert float(got[1][0]) == 0.0
    assert np.allclose(got[1].numpy(), brute_force_correlations(teacher(x)[0], student(x)[0])[1], atol=1e-5)


def test_channel_correlations_of_tiny_channels_are_scale_free():
    """Pearson correlation ignores scale: a channel of activations near 1e-15, in a layer whose other
    channels are of order 1, has the correlations of the unscaled channel (the constant-channel test is
    relative to the channel's own size)."""
    teacher = TC.ConvNet((3,), 2, (1, 6, 6), seed=0)
    student = TC.ConvNet((4,), 2, (1, 6, 6), seed=1)
    x = torch.randn(5, 1, 6, 6, generator=torch.Generator().manual_seed(4))
    before = TC.channel_best_correlations(teacher, student, x)[0]
    tiny = TC.ConvNet((3,), 2, (1, 6, 6), seed=0)
    with torch.no_grad():
        tiny.convs[0].weight[1] *= 1e-15
        tiny.convs[0].bias[1] *= 1e-15
    assert 0 < float(tiny(x)[0][0][:, 1].detach().max()) < 1e-13
    after = TC.channel_best_correlations(tiny, student, x)[0]
    assert float(before[1]) > 0.1 and torch.allclose(after, before, atol=1e-4)
    with torch.no_grad():                                   # every channel tiny
        tiny.convs[0].weight *= 1e-15
        tiny.convs[0].bias *= 1e-15
        tiny.convs[0].weight[1] *= 1e15
        tiny.convs[0].bias[1] *= 1e15
    assert torch.allclose(TC.channel_best_correlations(tiny, student, x)[0], before, atol=1e-4)


def test_check_images_and_the_pair_checks_name_the_argument():
    teacher = TC.ConvNet((3, 2), 2, (1, 7, 7), seed=0)
    x = torch.randn(4, 1, 7, 7, generator=torch.Generator().manual_seed(2))
    for fn in (TC.channel_best_correlations, lambda t, s, x: TC.train_step(t, s, x, 0.1)):
        with pytest.raises(TypeError, match="^x must be a floating-point tensor"):
            fn(teacher, teacher, torch.zeros(2, 1, 7, 7, dtype=torch.int64))
        with pytest.raises(ValueError, match=r"^x must be an array with 4 dimensions"):
            fn(teacher, teacher, torch.zeros(1, 7, 7))
        with pytest.raises(ValueError, match=r"^x must hold images of shape \(1, 7, 7\), got \(1, 6, 5\)$"):
            fn(teacher, teacher, torch.zeros(2, 1, 6, 5))
        with pytest.raises(TypeError, match="^teacher must be a ConvNet"):
            fn("t", teacher, x)
        with pytest.raises(TypeError, match="^student must be a ConvNet"):
            fn(teacher, "s", x)
    with pytest.raises(ValueError, match="^teacher and student must have the same depth and take the same images$"):
        TC.channel_best_correlations(teacher, TC.ConvNet((3,), 2, (1, 7, 7)), x)        # same images, depth differs
    with pytest.raises(ValueError, match="^teacher and student must have the same depth"):
        TC.channel_best_correlations(teacher, TC.ConvNet((3, 2), 2, (1, 7, 8)), x)      # same depth, images differ
    with pytest.raises(ValueError, match="^teacher and student must take the same images and give the same number of outputs$"):
        TC.train_step(teacher, TC.ConvNet((3, 2), 2, (1, 7, 8)), x, 0.1)
    # a numpy batch is converted, and gives the tensor's loss
    a, b = TC.ConvNet((3, 2), 2, (1, 7, 7), seed=1), TC.ConvNet((3, 2), 2, (1, 7, 7), seed=1)
    assert TC.train_step(teacher, a, x.numpy(), 0.1) == TC.train_step(teacher, b, x, 0.1)


def test_train_step_names_the_step_and_lr_when_the_loss_overflows():
    teacher, student = TC.ConvNet((2,), 2, (1, 4, 4), seed=0), TC.ConvNet((2,), 2, (1, 4, 4), seed=1)
    x = torch.full((2, 1, 4, 4), 1e30)
    with pytest.raises(FloatingPointError, match=r"became NaN or infinite by step 1 with lr=0\.1: "):
        TC.train_step(teacher, student, x, 0.1)


@pytest.mark.parametrize("change, match", [
    (dict(epochs=0), r"CifarConfig\.epochs must be an int >= 1"), (dict(batch="64"), r"CifarConfig\.batch must be an int"),
    (dict(prune_ratio=1.0), r"CifarConfig\.prune_ratio must be"), (dict(lr=float("nan")), r"CifarConfig\.lr must be"),
    (dict(channels=()), r"CifarConfig\.channels must be"), (dict(image=(3, 32)), r"CifarConfig\.image must be a tuple of 3"),
    (dict(classes=1), r"CifarConfig\.classes must be"), (dict(pretrain_epochs=-1), r"CifarConfig\.pretrain_epochs must be"),
    (dict(std=(0.2, 0.2)), r"CifarConfig\.std must be a sequence of 3"), (dict(std=(0.2, 0.0, 0.2)), r"CifarConfig\.std\[1\]")])
def test_config_fields_are_checked_at_construction(change, match):
    with pytest.raises(ValueError, match=match):
        TC.CifarConfig(**change)
    assert TC.CifarConfig(pretrain_epochs=0).pretrain_epochs == 0  # no pre-training: meaningful


def test_convnet_forward_names_x_on_a_wrong_image_shape():
    net = TC.ConvNet((4, 3), 2, (1, 6, 6), seed=0)
    hidden, out = net(torch.zeros(2, 1, 6, 6))
    assert out.shape == (2, 2) and [h.shape[1] for h in hidden] == [4, 3]
    for bad in (torch.zeros(2, 3, 6, 6), torch.zeros(2, 1, 5, 6), torch.zeros(1, 6, 6), np.zeros((2, 1, 6, 6))):
        with pytest.raises(ValueError, match=r"^x must be a batch of images of shape \(n, 1, 6, 6\)"):
            net(bad)
