// s2sad kernel module 'row_energy': cccc_sum_grads, float64 (generated; see s2sad/codegen/cuda.py for the ABI)

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

struct row_energy__dual_ret { double r0, r1, r2, r3, r4; };

__device__ row_energy__dual_ret row_energy__dual(double p__0, double p__1, double p__2, double p__m1)
{
    double _t1_dot_p__0 = 0.0, _t1 = 0.0, _t2_dot_p__1 = 0.0, _t2 = 0.0, _t3_dot_p__2 = 0.0,
           _t3 = 0.0, a_dot_p__0 = 0.0, a = 0.0, b_dot_p__1 = 0.0, b = 0.0, c_dot_p__2 = 0.0,
           c = 0.0, _d1 = 0.0, _d2 = 0.0, _d3 = 0.0, _d4 = 0.0;
    _t1_dot_p__0 = 1.0;
    _t1 = p__0;
    _t2_dot_p__1 = 1.0;
    _t2 = p__1;
    _t3_dot_p__2 = 1.0;
    _t3 = p__2;
    a_dot_p__0 = _t1_dot_p__0;
    a = _t1;
    b_dot_p__1 = _t2_dot_p__1;
    b = _t2;
    c_dot_p__2 = _t3_dot_p__2;
    c = _t3;
    _d1 = pow(a, 2.0);
    _d2 = sin(c);
    _d3 = b * _d2;
    _d4 = _d1 + _d3;
    return row_energy__dual_ret{_d4 - p__m1, 2.0 * a * a_dot_p__0, _d2 * b_dot_p__1, b * (cos(c) * c_dot_p__2), -1.0};
}

extern "C" __global__ void row_energy__cccc_sum_grads_f64(
    long long n_outer,
    long long n_inner,
    const double* p__0,
    const double* p__1,
    const double* p__2,
    const double* p__m1,
    double* acc,
    double seed,
    double* p__0_bar,
    double* p__1_bar,
    double* p__2_bar,
    double* p__m1_bar,
    double* partials)
{
    const long long n = n_outer * n_inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    double sum_acc = 0.0;
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const row_energy__dual_ret r = row_energy__dual(p__0[k], p__1[k], p__2[k], p__m1[k]);
        sum_acc += r.r0;
        p__0_bar[k] = r.r1 * seed;
        p__1_bar[k] = r.r2 * seed;
        p__2_bar[k] = r.r3 * seed;
        p__m1_bar[k] = r.r4 * seed;
    }
    // block sums of the 1 reduced quantity -> one partial per block
    __shared__ double red[1 * S2SAD_MAX_BLOCK];
    red[0 * S2SAD_MAX_BLOCK + threadIdx.x] = sum_acc;
    s2sad_block_sum(red, 1);
    if (threadIdx.x == 0) {
        partials[0 * gridDim.x + blockIdx.x] = red[0 * S2SAD_MAX_BLOCK];
    }
}

extern "C" __global__ void row_energy__cccc_sum_grads_f64__finish(
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
