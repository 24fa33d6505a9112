/*
 * minilz native core: a byte-oriented LZ77 codec.
 *
 * Stream layout (after the 8-byte frame header written by the Python side):
 *
 *   control byte c < 0x80  : literal run, (c + 1) raw bytes follow (1..128)
 *   control byte c >= 0x80 : match, length = (c & 0x7F) + MIN_MATCH (3..130),
 *                            followed by (offset - 1) as a little-endian u16
 *
 * Parsing is greedy: at every position the encoder takes the longest match
 * found in the sliding window (the closest one when several are equally
 * long) and emits a literal when no match of at least MIN_MATCH bytes exists.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MIN_MATCH 3
#define MAX_MATCH (0x7F + MIN_MATCH)
#define MAX_LITERAL_RUN 128

/* Worst-case size of the token stream for n input bytes. */
size_t mlz_bound(size_t n)
{
    return n + n / 2 + 16;
}

/*
 * Longest match for src[pos..] among the previous `window` positions.
 * Returns the match length (0 if shorter than MIN_MATCH) and stores the
 * backwards distance in *offset.
 */
static size_t find_match(const uint8_t *src, size_t n, size_t pos,
                         size_t window, size_t *offset)
{
    size_t start = pos > window ? pos - window : 0;
    size_t max_len = n - pos;
    size_t best_len = 0, best_off = 0;

    if (max_len > MAX_MATCH)
        max_len = MAX_MATCH;
    if (max_len < MIN_MATCH)
        return 0;

    /* Walk back from the closest candidate so ties keep the nearest one. */
    for (size_t cand = pos; cand-- > start;) {
        size_t len = 0;
        while (len < max_len && src[cand + len] == src[pos + len])
            len++;
        if (len > best_len) {
            best_len = len;
            best_off = pos - cand;
            if (len == max_len)
                break;
        }
    }
    if (best_len < MIN_MATCH)
        return 0;
    *offset = best_off;
    return best_len;
}

static uint8_t *flush_literals(uint8_t *out, const uint8_t *lit, size_t count)
{
    while (count > 0) {
        size_t run = count > MAX_LITERAL_RUN ? MAX_LITERAL_RUN : count;
        *out++ = (uint8_t)(run - 1);
        memcpy(out, lit, run);
        out += run;
        lit += run;
        count -= run;
    }
    return out;
}

/*
 * Compress n bytes of src into dst (capacity at least mlz_bound(n)).
 * window is the largest back-reference distance (1..65536).
 * Returns the number of bytes written.
 */
size_t mlz_compress(const uint8_t *src, size_t n, uint8_t *dst, size_t window)
{
    uint8_t *out = dst;
    size_t pos = 0, lit_start = 0;

    while (pos < n) {
        size_t offset = 0;
        size_t len = find_match(src, n, pos, window, &offset);
        if (len == 0) {
            pos++;
            continue;
        }
        out = flush_literals(out, src + lit_start, pos - lit_start);
        *out++ = (uint8_t)(0x80 | (len - MIN_MATCH));
        *out++ = (uint8_t)((offset - 1) & 0xFF);
        *out++ = (uint8_t)((offset - 1) >> 8);
        pos += len;
        lit_start = pos;
    }
    out = flush_literals(out, src + lit_start, pos - lit_start);
    return (size_t)(out - dst);
}

/*
 * Decode a token stream of clen bytes into dst, which holds exactly n bytes.
 * Returns n on success and (size_t)-1 on a corrupt stream.
 */
size_t mlz_decompress(const uint8_t *src, size_t clen, uint8_t *dst, size_t n)
{
    size_t ip = 0, op = 0;

    while (ip < clen) {
        uint8_t c = src[ip++];
        if (c < 0x80) {
            size_t run = (size_t)c + 1;
            if (ip + run > clen || op + run > n)
                return (size_t)-1;
            memcpy(dst + op, src + ip, run);
            ip += run;
            op += run;
        } else {
            size_t len = (size_t)(c & 0x7F) + MIN_MATCH;
            size_t offset;
            if (ip + 2 > clen)
                return (size_t)-1;
            offset = ((size_t)src[ip] | ((size_t)src[ip + 1] << 8)) + 1;
            ip += 2;
            if (offset > op || op + len > n)
                return (size_t)-1;
            /* Byte-wise copy: source and destination may overlap. */
            for (size_t k = 0; k < len; k++, op++)
                dst[op] = dst[op - offset];
        }
    }
    return op == n ? n : (size_t)-1;
}
