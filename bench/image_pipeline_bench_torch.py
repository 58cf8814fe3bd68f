#!/usr/bin/env python3
"""PyTorch side of the image-pipeline benchmark (bench/run_image_pipeline_bench.sh): an image
folder of JPEGs -> decode (PIL) -> RandomCrop -> RandomHorizontalFlip -> ToTensor + Normalize ->
batches of 128 through torch.utils.data.DataLoader (torchvision.datasets.ImageFolder), the same
work as the tern pipeline. Tries each worker count and reports the best.

Usage: image_pipeline_bench_torch.py DIR [--crop 56] [--batch 128] [--workers 0,1,2] [--epochs 2]
Output: one line per worker count, tab-separated: "torch", workers, images/s; then the best.
"""
import argparse
import time

import torch
import torchvision
from torchvision import transforms


def images_per_second(loader, epochs):
    for _ in loader:  # warm-up pass: worker start-up, page cache
        pass
    rows = 0
    start = time.perf_counter()
    for _ in range(epochs):
        for images, labels in loader:
            rows += images.shape[0]
    return rows / (time.perf_counter() - start)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--crop", type=int, default=56)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--workers", default="0,1,2")
    p.add_argument("--epochs", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(1)  # the work is per image; DataLoader workers give the parallelism
    tf = transforms.Compose([
        transforms.RandomCrop(a.crop),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]),
    ])
    ds = torchvision.datasets.ImageFolder(a.dir, transform=tf)
    best = (0.0, -1)
    for w in [int(x) for x in a.workers.split(",")]:
        loader = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=w,
                                             persistent_workers=w > 0)
        rate = images_per_second(loader, a.epochs)
        print(f"torch\t{w}\t{rate:.1f}", flush=True)
        best = max(best, (rate, w))
    print(f"torch_best\t{best[1]}\t{best[0]:.1f}")


if __name__ == "__main__":
    main()
