"""Chest X-ray images (pneumonia): chest_xray/{train,test,val}/{NORMAL,PNEUMONIA}/*.jpeg.

Grayscale frontal chest pictures drawn from a simple model (body, two dark lung fields, ribs,
spine, heart shadow, noise); pneumonia adds diffuse or lobar opacities inside the lungs. Class
balance follows the public set (about 1 normal to 2.9 pneumonia in train), file names too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from _common import rng
from PIL import Image

FILES = ["chest_xray/train", "chest_xray/test", "chest_xray/val"]
#: (image side in pixels, {split: (normal, pneumonia)})
SCALES = {
    "quick": (96, {"train": (40, 110), "test": (24, 36), "val": (8, 8)}),
    "standard": (192, {"train": (400, 1150), "test": (234, 390), "val": (8, 8)}),
    "large": (256, {"train": (1341, 3875), "test": (234, 390), "val": (8, 8)}),
}


def _image(r: np.random.Generator, side: int, sick: bool) -> np.ndarray:
    y, x = np.mgrid[0:side, 0:side] / side
    img = 0.55 + 0.25 * np.exp(-((x - 0.5) ** 2) / 0.08)  # body
    cx = 0.5 + r.normal(0, 0.02)
    lungs = np.zeros_like(img)
    for sx in (-1, 1):
        lx, ly = cx + sx * (0.18 + r.normal(0, 0.01)), 0.48 + r.normal(0, 0.02)
        lungs = np.maximum(lungs, (((x - lx) / 0.13) ** 2 + ((y - ly) / 0.3) ** 2) < 1)
    img -= 0.35 * lungs
    ribs = 0.06 * (np.sin((y * 14 + np.abs(x - cx) * 3) * np.pi) > 0.6) * lungs
    img += ribs
    img += 0.25 * np.exp(-((x - cx) ** 2) / 0.002)  # spine
    img += 0.2 * lungs * np.exp(-(((x - cx - 0.05) / 0.09) ** 2 + ((y - 0.6) / 0.12) ** 2))  # heart
    if sick:
        for _ in range(int(r.integers(2, 6))):
            bx, by = cx + r.choice([-1, 1]) * r.uniform(0.1, 0.26), r.uniform(0.3, 0.75)
            rad = r.uniform(0.04, 0.12)
            img += r.uniform(0.12, 0.3) * lungs * np.exp(-((x - bx) ** 2 + (y - by) ** 2) / (2 * rad**2))
    img += r.normal(0, 0.04, img.shape)
    img *= r.uniform(0.85, 1.1)
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


def generate(out: Path, seed: int, scale: str) -> None:
    r = rng("chest_xray", seed)
    side, splits = SCALES[scale]
    person = 0
    for split, (normal, pneumonia) in splits.items():
        for label, count in (("NORMAL", normal), ("PNEUMONIA", pneumonia)):
            folder = out / "chest_xray" / split / label
            folder.mkdir(parents=True, exist_ok=True)
            for k in range(count):
                person += 1
                if label == "NORMAL":
                    name = f"IM-{person:04d}-0001.jpeg"
                else:
                    name = f"person{person}_{'bacteria' if r.random() < 0.65 else 'virus'}_{k}.jpeg"
                w = int(side * r.uniform(1.0, 1.3))  # real images vary in size and aspect
                pic = Image.fromarray(_image(r, side, label == "PNEUMONIA")).resize((w, side))
                pic.save(folder / name, quality=90)
