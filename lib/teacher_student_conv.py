"""The CIFAR-10 teacher-student configuration of Fig. 10 (chapter 09, section "Deep teachers"; Tian 2020, §7).

The paper pre-trains a 64-64-64-64 ConvNet teacher on CIFAR-10 ("64 are channel sizes of the hidden
layers, L = 5"), prunes it in a structured way to keep its *strong* channels, and trains students that
are over-realised relative to the channels left; Fig. 10 plots each layer's ρ_mean (Eq. 9) over epochs.
The public code (``ModelConv``, ``prune`` in ``model_gen.py``) uses 3×3 convolutions without padding,
ReLU, then one linear layer to the 10 classes, and ranks a layer's channels by the mean |fan-out
weight| (the next layer's weights leaving the channel). Pruning ratios, over-realisation factors and
epochs are not stated; the values in :data:`PAPER` marked *(ours)* are this book's choices.

The book cannot download CIFAR-10, so nothing here is run in the notebooks: this module holds the
configuration, the networks, the pruning, one training step and the per-layer channel correlations,
and its unit test runs one step on random data of CIFAR-10's shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from lib import validate as V

__all__ = ["CifarConfig", "PAPER", "ConvNet", "prune_channels", "make_student", "train_step", "channel_best_correlations"]


@dataclass(frozen=True)
class CifarConfig:
    channels: tuple = (64, 64, 64, 64)  # teacher hidden channels (paper)
    kernel: int = 3                      # 3x3 convolutions, no padding (code)
    classes: int = 10                    # CIFAR-10 (paper)
    image: tuple = (3, 32, 32)           # CIFAR-10 input (paper)
    pretrain_epochs: int = 5             # teacher pre-training on the labels (ours; spec's suggestion)
    prune_ratio: float = 0.5             # fraction of each layer's channels pruned, weakest first (ours; code's `prune`)
    multis: tuple = (1, 2, 4)            # student channels = multi x the teacher's remaining channels (ours)
    epochs: int = 100                    # student training (code's default num_epoch)
    lr: float = 0.01                     # SGD (code)
    batch: int = 64                      # (code, multilayer)
    mean: tuple = (0.4914, 0.4822, 0.4465)   # input normalisation (code)
    std: tuple = (0.2023, 0.1994, 0.2010)    # (code); augmentation: random crop 32, padding 4, horizontal flip (code)

    def __post_init__(self):
        count = V.positive_int
        V.config(self, {
            "channels": V.each(count, min_len=1), "kernel": count, "classes": lambda v, n: V.integer(v, n, min=2),
            "image": V.items(count, count, count), "pretrain_epochs": V.nonnegative_int,
            "prune_ratio": V.fraction, "multis": V.each(count, min_len=1), "epochs": count,
            "lr": V.positive, "batch": count})
        V.config(self, {"mean": V.each(V.real, length=self.image[0]),
                        "std": V.each(V.positive, length=self.image[0])})  # one per input channel


PAPER = CifarConfig()


class ConvNet(nn.Module):
    """``ModelConv`` of the public code without batch norm: 3×3 convolutions without padding, each
    followed by ReLU, then a linear layer to ``classes``. ``forward`` returns ``(hidden, output)`` with
    the post-ReLU activations of every convolution (N, c_l, H_l, W_l)."""

    def __init__(self, channels, classes: int = 10, image=(3, 32, 32), kernel: int = 3, seed: int = 0):
        super().__init__()
        channels = [V.positive_int(c, f"channels[{i}]") for i, c in enumerate(V.sequence(channels, "channels", min_len=1))]
        classes, kernel = V.positive_int(classes, "classes"), V.positive_int(kernel, "kernel")
        image = [V.positive_int(s, f"image[{i}]") for i, s in enumerate(V.sequence(image, "image", min_len=3))]
        side = min(image[1:]) - len(channels) * (kernel - 1)
        if len(image) != 3 or side < 1:
            raise V.ArgumentValueError(f"image must be (channels, height, width) with room for {len(channels)} "
                                       f"unpadded {kernel}x{kernel} convolutions, got {tuple(image)}")
        ins = [image[0]] + channels[:-1]
        shrink = len(channels) * (kernel - 1)
        with torch.random.fork_rng():                     # PyTorch's default init, seeded, global RNG untouched
            torch.manual_seed(V.seed(seed))
            self.convs = nn.ModuleList(nn.Conv2d(i, o, kernel) for i, o in zip(ins, channels))
            self.fc = nn.Linear(channels[-1] * (image[1] - shrink) * (image[2] - shrink), classes)
        self.image = tuple(image)

    def forward(self, x):
        """``(hidden, output)`` for a batch ``x`` of images ``(n, *image)``; the shape is compared once per call
        (a tuple comparison: no pass over the data) so that a wrong one names ``x``, not a torch layer."""
        if not isinstance(x, torch.Tensor) or x.ndim != 4 or tuple(x.shape[1:]) != self.image:
            raise V.ArgumentValueError(f"x must be a batch of images of shape (n, {', '.join(map(str, self.image))}), "
                                       f"got {V.describe(x)}")
        hidden = []
        for conv in self.convs:
            x = torch.relu(conv(x))
            hidden.append(x)
        return hidden, self.fc(x.flatten(1))


def _check_images(x, net: ConvNet) -> torch.Tensor:
    x = V.tensor(x, "x", ndim=4, floating=True, convert=True).float()
    if tuple(x.shape[1:]) != net.image:
        raise V.ArgumentValueError(f"x must hold images of shape {net.image}, got {tuple(x.shape[1:])}")
    return x


def prune_channels(net: ConvNet, ratio: float) -> ConvNet:
    """Structured pruning (the code's ``prune``): in every hidden layer keep the ``1 − ratio`` fraction of
    channels (at least one) with the largest mean |fan-out weight| (the weights leaving the channel in
    the next convolution, or in the linear layer for the last one), weakest pruned first. Returns a
    smaller :class:`ConvNet` whose outputs equal ``net``'s with the pruned channels set to zero."""
    V.instance(net, "net", ConvNet)
    ratio = V.fraction(ratio, "ratio")
    convs = list(net.convs)
    keeps = []
    for l, conv in enumerate(convs):
        if l + 1 < len(convs):
            fan_out = convs[l + 1].weight.detach().abs().mean(dim=(0, 2, 3))
        else:
            fan_out = net.fc.weight.detach().abs().reshape(net.fc.out_features, conv.out_channels, -1).mean(dim=(0, 2))
        k = max(1, round(conv.out_channels * (1 - ratio)))
        keeps.append(torch.sort(torch.argsort(fan_out, descending=True)[:k]).values)
    small = ConvNet([len(k) for k in keeps], net.fc.out_features, net.image, convs[0].kernel_size[0])
    with torch.no_grad():
        prev = torch.arange(net.image[0])
        for conv, new, keep in zip(convs, small.convs, keeps):
            new.weight.copy_(conv.weight[keep][:, prev])
            new.bias.copy_(conv.bias[keep])
            prev = keep
        W = net.fc.weight.reshape(net.fc.out_features, convs[-1].out_channels, -1)[:, prev]
        small.fc.weight.copy_(W.reshape(net.fc.out_features, -1))
        small.fc.bias.copy_(net.fc.bias)
    return small


def make_student(teacher: ConvNet, multi: int, seed: int = 0) -> ConvNet:
    """A student with ``multi`` times the teacher's channels in every hidden layer (over-realised)."""
    V.instance(teacher, "teacher", ConvNet)
    multi = V.positive_int(multi, "multi")
    return ConvNet([multi * c.out_channels for c in teacher.convs], teacher.fc.out_features, teacher.image,
                   teacher.convs[0].kernel_size[0], seed=seed)


def train_step(teacher: ConvNet, student: ConvNet, x, lr: float) -> float:
    """One SGD step of ``student`` on ½‖teacher(x) − student(x)‖² averaged over the batch ``x`` (the
    paper's MSE loss on the teacher's outputs); returns the loss before the step."""
    V.instance(teacher, "teacher", ConvNet)
    V.instance(student, "student", ConvNet)
    if student.image != teacher.image or student.fc.out_features != teacher.fc.out_features:
        raise V.ArgumentValueError("teacher and student must take the same images and give the same number of outputs")
    x = _check_images(x, teacher)
    lr = V.positive(lr, "lr")
    with torch.no_grad():
        target = teacher(x)[1]
    loss = 0.5 * ((target - student(x)[1]) ** 2).sum(1).mean()
    student.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in student.parameters():
            p -= lr * p.grad
    value = loss.detach().item()
    V.finite_loss(value, 1, lr)
    return value


def channel_best_correlations(teacher: ConvNet, student: ConvNet, x) -> list:
    """For every hidden layer, each teacher channel's best Pearson correlation with a student channel of
    the same layer, over all images and positions of ``x`` (the paper's ρ for convolutional layers):
    a list of tensors (c_l,). A constant channel has correlation 0."""
    V.instance(teacher, "teacher", ConvNet)
    V.instance(student, "student", ConvNet)
    if len(student.convs) != len(teacher.convs) or student.image != teacher.image:
        raise V.ArgumentValueError("teacher and student must have the same depth and take the same images")
    x = _check_images(x, teacher)
    with torch.no_grad():
        Ht, Hs = teacher(x)[0], student(x)[0]

    def unit(h):
        z = h.transpose(0, 1).flatten(1)
        z = z - z.mean(1, keepdim=True)
        n = z.norm(dim=1, keepdim=True)
        return torch.where(n > 1e-12 * (z.abs().amax(1, keepdim=True) + 1e-300), z / n.clamp_min(1e-300), torch.zeros_like(z))
    return [(unit(t) @ unit(s).T).amax(1) for t, s in zip(Ht, Hs)]
