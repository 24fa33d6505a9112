/* Box filter kernels for imgblur.
 *
 * See blur.h for the conventions.  The clamp() helper implements the border
 * rule shared by every filter in the package: a coordinate outside [0, n)
 * is replaced by the nearest valid one.
 */
#include <stdlib.h>
#include "blur.h"

#define IB_VERSION "0.3.1"

static inline int clamp(int i, int n)
{
    if (i < 0)
        return 0;
    if (i >= n)
        return n - 1;
    return i;
}

const char *ib_version(void)
{
    return IB_VERSION;
}

int ib_box_blur_f32(const float *src, float *dst, int h, int w, int r)
{
    if (h <= 0 || w <= 0)
        return 0;
    if (r < 0)
        return -1;
    const double inv = 1.0 / ((double)(2 * r + 1) * (double)(2 * r + 1));

    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            double acc = 0.0;
            for (int dy = -r; dy <= r; dy++) {
                const float *row = src + (size_t)clamp(y + dy, h) * w;
                for (int dx = -r; dx <= r; dx++)
                    acc += row[clamp(x + dx, w)];
            }
            dst[(size_t)y * w + x] = (float)(acc * inv);
        }
    }
    return 0;
}

int ib_box_blur_u8(const uint8_t *src, uint8_t *dst, int h, int w, int r)
{
    if (h <= 0 || w <= 0)
        return 0;
    if (r < 0)
        return -1;
    const long long n = (long long)(2 * r + 1) * (2 * r + 1);

    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            long long acc = 0;
            for (int dy = -r; dy <= r; dy++) {
                const uint8_t *row = src + (size_t)clamp(y + dy, h) * w;
                for (int dx = -r; dx <= r; dx++)
                    acc += row[clamp(x + dx, w)];
            }
            dst[(size_t)y * w + x] = (uint8_t)((acc + n / 2) / n);
        }
    }
    return 0;
}
