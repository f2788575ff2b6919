#!/usr/bin/python3
"""Caffe's AlexNet (models/alexnet: grouped conv2/4/5, LRN after conv1 and conv2, dropout 0.5) in
PyTorch, trained on random 227x227x3 images in memory: forward, backward and an SGD step
(momentum 0.9, weight decay 5e-4), at a given mini-batch and thread count. Prints one JSON line
with images/s. Used by bench/alexnet_train.sh; needs python3-torch."""
import argparse
import torch
import torch.nn as nn
from torch_training_step import time_training


def alexnet():
    return nn.Sequential(
        nn.Conv2d(3, 96, 11, stride=4), nn.ReLU(), nn.LocalResponseNorm(5, 1e-4, 0.75, 1.0), nn.MaxPool2d(3, 2),
        nn.Conv2d(96, 256, 5, padding=2, groups=2), nn.ReLU(), nn.LocalResponseNorm(5, 1e-4, 0.75, 1.0),
        nn.MaxPool2d(3, 2),
        nn.Conv2d(256, 384, 3, padding=1), nn.ReLU(),
        nn.Conv2d(384, 384, 3, padding=1, groups=2), nn.ReLU(),
        nn.Conv2d(384, 256, 3, padding=1, groups=2), nn.ReLU(), nn.MaxPool2d(3, 2),
        nn.Flatten(), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(0.5), nn.Linear(4096, 1000))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--bf16", action="store_true", help="CPU autocast to BF16 (mixed precision)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    net = alexnet()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(a.batch, 3, 227, 227)
    y = torch.randint(0, 1000, (a.batch,))

    time_training(net, opt, x, y, a.threads, a.iterations, warmup=1, bf16=a.bf16)

if __name__ == "__main__":
    main()
