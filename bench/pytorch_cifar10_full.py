#!/usr/bin/python3
"""Caffe's cifar10_full in PyTorch, timed like `rudra time`: forward, backward and an SGD step
(momentum 0.9) on random 32x32x3 images, at a given mini-batch and thread count. Prints one JSON
line with images/s. Used by bench/pytorch_compare.sh; needs python3-torch."""
import argparse
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch_training_step import time_training


class WithinChannelLRN(nn.Module):
    """Caffe's LRN with norm_region WITHIN_CHANNEL: x / (1 + alpha * mean of x^2 over a
    local_size x local_size window, zero-padded)^beta."""

    def __init__(self, local_size=3, alpha=5e-5, beta=0.75):
        super().__init__()
        self.size, self.alpha, self.beta = local_size, alpha, beta

    def forward(self, x):
        mean_sq = F.avg_pool2d(x * x, self.size, stride=1, padding=self.size // 2, count_include_pad=True)
        return x / (1.0 + self.alpha * mean_sq).pow(self.beta)


def cifar10_full():
    return nn.Sequential(
        nn.Conv2d(3, 32, 5, padding=2), nn.MaxPool2d(3, 2, ceil_mode=True), nn.ReLU(), WithinChannelLRN(),
        nn.Conv2d(32, 32, 5, padding=2), nn.ReLU(), nn.AvgPool2d(3, 2, ceil_mode=True), WithinChannelLRN(),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.AvgPool2d(3, 2, ceil_mode=True),
        nn.Flatten(), nn.Linear(64 * 4 * 4, 10))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--bf16", action="store_true", help="CPU autocast to BF16 (mixed precision)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    net = cifar10_full()
    opt = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9, weight_decay=0.004)
    x = torch.randn(a.batch, 3, 32, 32)
    y = torch.randint(0, 10, (a.batch,))

    time_training(net, opt, x, y, a.threads, a.iterations, warmup=3, bf16=a.bf16)

if __name__ == "__main__":
    main()
