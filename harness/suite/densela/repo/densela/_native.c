/*
 * Dense kernels for densela.
 *
 * Every matrix is a row-major array of doubles: element (i, j) of an
 * r x c matrix M lives at M[i * c + j].  Callers own all buffers.
 */
#include <math.h>
#include <stddef.h>

/* C (m x n) = A (m x k) * B (k x n) */
void dl_matmul(const double *A, const double *B, double *C,
               long m, long k, long n)
{
    for (long i = 0; i < m; i++) {
        const double *arow = A + i * k;
        for (long j = 0; j < n; j++) {
            double s = 0.0;
            for (long p = 0; p < k; p++)
                s += arow[p] * B[p * n + j];
            C[i * n + j] = s;
        }
    }
}

/* y (m) = A (m x n) * x (n) */
void dl_matvec(const double *A, const double *x, double *y, long m, long n)
{
    for (long i = 0; i < m; i++) {
        const double *row = A + i * n;
        double s = 0.0;
        for (long j = 0; j < n; j++)
            s += row[j] * x[j];
        y[i] = s;
    }
}

/* T (n x m) = A (m x n) transposed */
void dl_transpose(const double *A, double *T, long m, long n)
{
    for (long i = 0; i < m; i++)
        for (long j = 0; j < n; j++)
            T[j * m + i] = A[i * n + j];
}

/* Subtract the mean of every column in place; means (n) receives them. */
void dl_center_columns(double *X, double *means, long m, long n)
{
    for (long j = 0; j < n; j++)
        means[j] = 0.0;
    for (long i = 0; i < m; i++)
        for (long j = 0; j < n; j++)
            means[j] += X[i * n + j];
    for (long j = 0; j < n; j++)
        means[j] /= (double)m;
    for (long i = 0; i < m; i++)
        for (long j = 0; j < n; j++)
            X[i * n + j] -= means[j];
}

/*
 * Lower Cholesky factor L (n x n) of the symmetric positive definite A.
 * Returns 0 on success, or 1 + the index of the failing pivot.
 */
int dl_cholesky(const double *A, double *L, long n)
{
    for (long i = 0; i < n * n; i++)
        L[i] = 0.0;
    for (long j = 0; j < n; j++) {
        double d = A[j * n + j];
        for (long p = 0; p < j; p++)
            d -= L[j * n + p] * L[j * n + p];
        if (!(d > 0.0))
            return (int)(j + 1);
        double ljj = sqrt(d);
        L[j * n + j] = ljj;
        for (long i = j + 1; i < n; i++) {
            double s = A[i * n + j];
            for (long p = 0; p < j; p++)
                s -= L[i * n + p] * L[j * n + p];
            L[i * n + j] = s / ljj;
        }
    }
    return 0;
}

/* Solve L L^T x = b in place (b becomes x), L lower triangular n x n. */
void dl_cholesky_solve(const double *L, double *b, long n)
{
    for (long i = 0; i < n; i++) {
        double s = b[i];
        for (long p = 0; p < i; p++)
            s -= L[i * n + p] * b[p];
        b[i] = s / L[i * n + i];
    }
    for (long i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (long p = i + 1; p < n; p++)
            s -= L[p * n + i] * b[p];
        b[i] = s / L[i * n + i];
    }
}
