#!/usr/bin/python3
"""Generates an ImageNet-shaped set of JPEG files for measurements and tests (no ImageNet here):
sizes drawn around ImageNet's (most images about 500x375, some portrait, some smaller), quality
90, colour, in class folders OUT/train/nNNNNNNNN/ and OUT/val/nNNNNNNNN/ (the layout of ImageNet
and of torchvision's ImageFolder). Each class has its own mean colour and stripe direction, so
that a net can learn something, over smooth noise.

Usage: make_imagenet_like.py OUT [--train N] [--val N] [--classes K] [--seed S] [--size WxH]
  --size fixes every image's size (e.g. 256x256) instead of drawing it.
"""
import argparse
import os
import random

import numpy as np
from PIL import Image


def draw_size(rng):
    r = rng.random()
    if r < 0.7:
        return 500, 375 if rng.random() < 0.8 else 333
    if r < 0.85:
        return 375, 500
    w = rng.randint(200, 500)
    return w, int(w * rng.uniform(0.6, 1.0))


def image(rng, nrng, cls, w, h):
    base = np.array([(cls * 67) % 200 + 28, (cls * 131) % 200 + 28, (cls * 197) % 200 + 28], dtype=np.float32)
    small = nrng.normal(0, 40, size=(max(2, h // 16), max(2, w // 16), 3)).astype(np.float32)
    noise = np.asarray(Image.fromarray(np.clip(small + 128, 0, 255).astype(np.uint8)).resize((w, h), Image.BILINEAR),
                       dtype=np.float32) - 128
    yy, xx = np.mgrid[0:h, 0:w]
    angle = (cls % 8) * np.pi / 8
    stripes = 30 * np.sin((xx * np.cos(angle) + yy * np.sin(angle)) / (6 + cls % 5))
    px = base + noise + stripes[..., None]
    return Image.fromarray(np.clip(px, 0, 255).astype(np.uint8), "RGB")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=10000)
    ap.add_argument("--val", type=int, default=1000)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--size", default="")
    a = ap.parse_args()
    fixed = tuple(int(v) for v in a.size.split("x")) if a.size else None
    rng = random.Random(a.seed)
    nrng = np.random.default_rng(a.seed)
    total_bytes = 0
    for split, n in (("train", a.train), ("val", a.val)):
        for i in range(n):
            cls = i % a.classes
            w, h = fixed or draw_size(rng)
            d = os.path.join(a.out, split, f"n{cls:08d}")
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, f"{split}_{i:07d}.JPEG")
            image(rng, nrng, cls, w, h).save(path, format="JPEG", quality=90)
            total_bytes += os.path.getsize(path)
        print(f"make_imagenet_like: {split}: {n} images, {min(n, a.classes)} classes")
    print(f"make_imagenet_like: {total_bytes / 1e6:.1f} MB of JPEG in {a.out}")


if __name__ == "__main__":
    main()
