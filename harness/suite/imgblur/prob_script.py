"""Time imgblur.box_blur on a representative grayscale float32 image."""
import time

import numpy as np

import imgblur


def main():
    rng = np.random.default_rng(42)
    h, w = 1080, 1440
    yy, xx = np.mgrid[0:h, 0:w]
    img = 0.5 + 0.3 * np.sin(xx / 19.0) * np.cos(yy / 29.0) + 0.15 * rng.standard_normal((h, w))
    img = np.clip(img, 0.0, 1.0).astype(np.float32)

    start = time.perf_counter()
    out = imgblur.box_blur(img, 6)
    elapsed = time.perf_counter() - start

    print("output", out.shape, out.dtype, "mean %.6f" % float(out.mean()))
    print("Execution time: %.6fs" % elapsed)


if __name__ == "__main__":
    main()
