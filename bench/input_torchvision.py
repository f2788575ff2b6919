#!/usr/bin/python3
"""torchvision's DataLoader on a folder of class folders with the transforms of `rudra input`:
decode (PIL), resize to HxW, random crop, random mirror, to float, subtract a per-channel mean.
Prints one line: images/s. Usage: input_torchvision.py DIR --workers K --batch B --batches N
"""
import argparse
import time

import torch
from torchvision import datasets, transforms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--resize", type=int, default=256)
    ap.add_argument("--crop", type=int, default=227)
    a = ap.parse_args()
    torch.set_num_threads(1)
    tf = transforms.Compose([
        transforms.Resize((a.resize, a.resize)),
        transforms.RandomCrop(a.crop),
        transforms.RandomHorizontalFlip(),
        transforms.PILToTensor(),
        transforms.ConvertImageDtype(torch.float32),
        transforms.Normalize(mean=[123 / 255, 117 / 255, 104 / 255], std=[1 / 255] * 3),
    ])
    data = datasets.ImageFolder(a.dir, transform=tf)
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                                         drop_last=True, persistent_workers=a.workers > 0)
    it = iter(loader)
    next(it)  # the first batch (worker start-up) before the clock, as rudra's
    start = time.perf_counter()
    n = 0
    for _ in range(a.batches):
        try:
            x, _ = next(it)
        except StopIteration:
            it = iter(loader)
            x, _ = next(it)
        n += x.shape[0]
    s = time.perf_counter() - start
    print(f"torchvision: {n} images in {s:.2f} s: {n / s:.1f} images/s with {a.workers} worker(s)")


if __name__ == "__main__":
    main()
