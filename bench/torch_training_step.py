"""The timed SGD training step the PyTorch comparisons share (bench/pytorch_cifar10_full.py,
bench/pytorch_alexnet.py): forward, cross-entropy, backward and the step on fixed tensors, after
warm-up steps; prints one JSON line with ms per step and images/s. With bf16, the forward pass and
the loss run under CPU autocast to BF16 (PyTorch's mixed precision: BF16 convolutions and matrix
products through oneDNN, FP32 weights and optimizer)."""
import json
import time

import torch
import torch.nn.functional as F


def time_training(net, opt, x, y, threads, iterations, warmup, bf16=False):
    def step():
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()

    for _ in range(warmup):  # oneDNN primitive creation, allocator
        step()
    t0 = time.perf_counter()
    for _ in range(iterations):
        step()
    s = (time.perf_counter() - t0) / iterations
    batch = x.shape[0]
    print(json.dumps({"framework": "pytorch " + torch.__version__, "precision": "bf16" if bf16 else "fp32",
                      "batch": batch, "threads": threads, "ms": s * 1e3, "images_per_s": batch / s}))
