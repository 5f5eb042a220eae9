"""lib.teacher_student_conv: Fig. 10's CIFAR-10 configuration, one step on random data of CIFAR-10's shape."""

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
