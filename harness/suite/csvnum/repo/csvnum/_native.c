/*
 * csvnum native parser: numeric delimited text -> row-major double matrix.
 *
 * Rules (shared with the Python documentation in reader.py):
 *   - records end at '\n' (a trailing '\r' is ignored);
 *   - blank lines and lines starting with '#' are skipped;
 *   - leading blanks are ignored and a field is read as the number it starts
 *     with (trailing text such as a unit suffix is ignored);
 *   - an empty field, a field that does not start with a number (e.g. "NA")
 *     and a field missing at the end of a short row all become NaN;
 *   - fields beyond the selected columns are ignored.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CSVNUM_OK 0
#define CSVNUM_ENOMEM 1

static int is_blank_or_comment(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    return p == end || *p == '#';
}

/*
 * Parse one field starting at p (line ends at eol). Stores the number the
 * field starts with (or NaN if it does not start with one) in *out and
 * returns a pointer to the delimiter or eol that terminates the field.
 */
static const char *parse_field(const char *p, const char *eol, char delim, double *out)
{
    double v;

    while (p < eol && (*p == ' ' || *p == '\t') && *p != delim)
        p++;
    *out = NAN;
    if (p < eol && *p != delim && *p != '\r' && sscanf(p, "%lf", &v) == 1)
        *out = v;
    while (p < eol && *p != delim)
        p++;
    return p;
}

/*
 * Parse the whole buffer (len bytes, NUL-terminated).
 *
 * col_map has map_len entries: col_map[f] is the output column of input
 * field f, or -1 if the field is not wanted. ncols is the number of output
 * columns. If skip_header is set the first non-blank line is skipped.
 *
 * Returns a malloc'd array of (*nrows_out * ncols) doubles, to be released
 * with csvnum_free (NULL with *nrows_out == 0 when there is no data).
 */
double *csvnum_parse(const char *buf, size_t len, char delim, int skip_header,
                     const int64_t *col_map, size_t map_len, size_t ncols,
                     size_t *nrows_out, int *status)
{
    const char *p = buf, *end = buf + len;
    double *data = NULL;
    size_t nrows = 0;
    int header_pending = skip_header;

    *status = CSVNUM_OK;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *next;
        double *row;
        size_t field = 0;

        if (eol == NULL)
            eol = end;
        next = eol < end ? eol + 1 : end;
        if (is_blank_or_comment(p, eol)) {
            p = next;
            continue;
        }
        if (header_pending) {
            header_pending = 0;
            p = next;
            continue;
        }

        /* grow the output by one row */
        row = realloc(data, (nrows + 1) * ncols * sizeof(double));
        if (row == NULL) {
            free(data);
            *status = CSVNUM_ENOMEM;
            *nrows_out = 0;
            return NULL;
        }
        data = row;
        row = data + nrows * ncols;
        for (size_t c = 0; c < ncols; c++)
            row[c] = NAN;

        while (field < map_len) {
            double v;
            p = parse_field(p, eol, delim, &v);
            if (col_map[field] >= 0)
                row[col_map[field]] = v;
            field++;
            if (p >= eol)
                break;
            p++;  /* skip the delimiter */
        }
        nrows++;
        p = next;
    }
    *nrows_out = nrows;
    return data;
}

void csvnum_free(double *data)
{
    free(data);
}
