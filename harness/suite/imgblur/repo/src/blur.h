/* imgblur native kernels.
 *
 * All images are dense, row-major, single-channel buffers of h rows and w
 * columns.  Pixels outside the image are defined by clamping coordinates to
 * the nearest edge ("replicate" border mode).
 */
#ifndef IMGBLUR_BLUR_H
#define IMGBLUR_BLUR_H

#include <stdint.h>

/* Mean filter over a (2r+1) x (2r+1) window.  Sums are accumulated in double
 * and the mean is rounded to float.  Returns 0 on success. */
int ib_box_blur_f32(const float *src, float *dst, int h, int w, int r);

/* Mean filter for 8-bit images.  Sums are exact integers; the mean is rounded
 * half up.  Returns 0 on success. */
int ib_box_blur_u8(const uint8_t *src, uint8_t *dst, int h, int w, int r);

/* Library version, for diagnostics. */
const char *ib_version(void);

#endif
