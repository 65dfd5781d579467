// s2sad kernel module 'lambda_63': cc_sum_grads, float64 (generated; see s2sad/codegen/cuda.py for the ABI)

// Python's float floor division (CPython's float_floor_div; x // 0 is x / 0, as in numpy)
__device__ inline double s2sad_floordiv(double a, double b)
{
    if (b == 0.0) return a / b;
    double m = fmod(a, b);
    double d = (a - m) / b;
    if (m != 0.0) {
        if ((b < 0.0) != (m < 0.0)) d -= 1.0;
    }
    if (d != 0.0) {
        double f = floor(d);
        if (d - f > 0.5) f += 1.0;
        return f;
    }
    return copysign(0.0, a / b);
}

// Python's float modulo: the result has the divisor's sign
__device__ inline double s2sad_mod(double a, double b)
{
    double m = fmod(a, b);
    if (m != 0.0) {
        if ((b < 0.0) != (m < 0.0)) m += b;
        return m;
    }
    return copysign(0.0, b);
}

#ifndef S2SAD_MAX_BLOCK
#define S2SAD_MAX_BLOCK 256
#endif

// Sums s[q * S2SAD_MAX_BLOCK + t] over the block's threads t into s[q * S2SAD_MAX_BLOCK]
// for q < nq. Any blockDim.x <= S2SAD_MAX_BLOCK; every thread of the block must call it.
__device__ void s2sad_block_sum(double* s, int nq)
{
    const unsigned int t = threadIdx.x;
    unsigned int h = 1;
    while (2 * h < blockDim.x) h *= 2;
    __syncthreads();
    for (; h > 0; h /= 2) {
        if (t < h && t + h < blockDim.x) {
            for (int q = 0; q < nq; ++q) s[q * S2SAD_MAX_BLOCK + t] += s[q * S2SAD_MAX_BLOCK + t + h];
        }
        __syncthreads();
    }
}

struct lambda_63__dual_ret { double r0, r1, r2; };

__device__ lambda_63__dual_ret lambda_63__dual(double z, double y_0)
{
    double _d1 = 0.0;
    _d1 = pow(z, 2.0);
    return lambda_63__dual_ret{_d1 + y_0, 2.0 * z, 1.0};
}

extern "C" __global__ void lambda_63__cc_sum_grads_f64(
    long long n_outer,
    long long n_inner,
    const double* z,
    const double* y_0,
    double* acc,
    double seed,
    double* z_bar,
    double* y_0_bar,
    double* partials)
{
    const long long n = n_outer * n_inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    double sum_acc = 0.0;
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const lambda_63__dual_ret r = lambda_63__dual(z[k], y_0[k]);
        sum_acc += r.r0;
        z_bar[k] = r.r1 * seed;
        y_0_bar[k] = r.r2 * seed;
    }
    // block sums of the 1 reduced quantity -> one partial per block
    __shared__ double red[1 * S2SAD_MAX_BLOCK];
    red[0 * S2SAD_MAX_BLOCK + threadIdx.x] = sum_acc;
    s2sad_block_sum(red, 1);
    if (threadIdx.x == 0) {
        partials[0 * gridDim.x + blockIdx.x] = red[0 * S2SAD_MAX_BLOCK];
    }
}

extern "C" __global__ void lambda_63__cc_sum_grads_f64__finish(
    long long n_parts,
    const double* partials,
    double* acc)
{
    // one thread adds the per-block partials into their destinations
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double t0 = 0.0;
    for (long long b = 0; b < n_parts; ++b) t0 += partials[0 * n_parts + b];
    acc[0] += t0;
}
