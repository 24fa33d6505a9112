/*
 * Levenshtein distance kernels for editdist.
 *
 * Strings are arrays of int32 code points.  A batch of strings is one
 * concatenated buffer plus an offsets array of count + 1 entries: string i
 * is buf[off[i] .. off[i + 1]).
 */
#include <stdint.h>
#include <stdlib.h>

/* Edit distance between a (length m) and b (length n); -1 if out of memory. */
int ed_distance(const int32_t *a, long m, const int32_t *b, long n)
{
    long w = n + 1;
    int *d = malloc(sizeof(int) * (size_t)((m + 1) * w));
    if (d == NULL)
        return -1;

    for (long j = 0; j <= n; j++)
        d[j] = (int)j;
    for (long i = 1; i <= m; i++) {
        int *row = d + i * w;
        const int *prev = row - w;
        row[0] = (int)i;
        for (long j = 1; j <= n; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1;
            int ins = row[j - 1] + 1;
            int best = sub < del ? sub : del;
            row[j] = best < ins ? best : ins;
        }
    }
    int result = d[m * w + n];
    free(d);
    return result;
}

/* out[q * nv + v] = distance(query q, vocabulary word v).  Returns 0, or -1. */
int ed_distance_matrix(const int32_t *qbuf, const int64_t *qoff, long nq,
                       const int32_t *vbuf, const int64_t *voff, long nv,
                       int32_t *out)
{
    for (long q = 0; q < nq; q++) {
        const int32_t *a = qbuf + qoff[q];
        long m = (long)(qoff[q + 1] - qoff[q]);
        for (long v = 0; v < nv; v++) {
            int d = ed_distance(a, m, vbuf + voff[v], (long)(voff[v + 1] - voff[v]));
            if (d < 0)
                return -1;
            out[q * nv + v] = d;
        }
    }
    return 0;
}

/*
 * For every query, the index and distance of the closest vocabulary word
 * (the first one on ties).  With max_dist >= 0, queries whose closest word is
 * farther than max_dist get index -1 and distance -1.  Returns 0, or -1.
 */
int ed_nearest(const int32_t *qbuf, const int64_t *qoff, long nq,
               const int32_t *vbuf, const int64_t *voff, long nv,
               long max_dist, int64_t *out_idx, int32_t *out_dist)
{
    for (long q = 0; q < nq; q++) {
        const int32_t *a = qbuf + qoff[q];
        long m = (long)(qoff[q + 1] - qoff[q]);
        long best_idx = -1;
        int best = -1;
        for (long v = 0; v < nv; v++) {
            int d = ed_distance(a, m, vbuf + voff[v], (long)(voff[v + 1] - voff[v]));
            if (d < 0)
                return -1;
            if (best_idx < 0 || d < best) {
                best = d;
                best_idx = v;
            }
        }
        if (best_idx >= 0 && max_dist >= 0 && best > max_dist) {
            best_idx = -1;
            best = -1;
        }
        out_idx[q] = best_idx;
        out_dist[q] = best;
    }
    return 0;
}

/*
 * Vocabulary words within max_dist of one query, in vocabulary order.
 * Writes up to nv (index, distance) pairs and returns how many, or -1.
 */
long ed_within(const int32_t *a, long m,
               const int32_t *vbuf, const int64_t *voff, long nv,
               long max_dist, int64_t *out_idx, int32_t *out_dist)
{
    long count = 0;
    for (long v = 0; v < nv; v++) {
        int d = ed_distance(a, m, vbuf + voff[v], (long)(voff[v + 1] - voff[v]));
        if (d < 0)
            return -1;
        if (d <= max_dist) {
            out_idx[count] = v;
            out_dist[count] = d;
            count++;
        }
    }
    return count;
}
