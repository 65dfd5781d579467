// s2sad kernel module 'three': ccc_sum_grads, float64 (generated; see s2sad/codegen/cuda.py for the ABI)

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

struct three__dual_ret { double r0, r1, r2, r3; };

__device__ three__dual_ret three__dual(double x, double y, double w)
{
    double _d1 = 0.0, _d2 = 0.0, s_dot_x = 0.0, s_dot_y = 0.0, s_dot_w = 0.0, s = 0.0, _d7 = 0.0,
           _d4 = 0.0, _d5 = 0.0, _d6 = 0.0, _d3 = 0.0;
    _d1 = x * y;
    _d2 = pow(w, 2.0);
    s_dot_x = y;
    s_dot_y = x;
    s_dot_w = 2.0 * w;
    s = _d1 + _d2;
    if (s > 0.0) {
        _d7 = cos(s);
        _d4 = _d7 * s_dot_x;
        _d5 = _d7 * s_dot_y;
        _d6 = _d7 * s_dot_w;
        _d3 = sin(s);
    } else {
        _d4 = -s_dot_x;
        _d5 = -s_dot_y;
        _d6 = -s_dot_w;
        _d3 = -s;
    }
    return three__dual_ret{_d3, _d4, _d5, _d6};
}

extern "C" __global__ void three__ccc_sum_grads_f64(
    long long n_outer,
    long long n_inner,
    const double* x,
    const double* y,
    const double* w,
    double* acc,
    double seed,
    double* x_bar,
    double* y_bar,
    double* w_bar,
    double* partials)
{
    const long long n = n_outer * n_inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    double sum_acc = 0.0;
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const three__dual_ret r = three__dual(x[k], y[k], w[k]);
        sum_acc += r.r0;
        x_bar[k] = r.r1 * seed;
        y_bar[k] = r.r2 * seed;
        w_bar[k] = r.r3 * seed;
    }
    // block sums of the 1 reduced quantity -> one partial per block
    __shared__ double red[1 * S2SAD_MAX_BLOCK];
    red[0 * S2SAD_MAX_BLOCK + threadIdx.x] = sum_acc;
    s2sad_block_sum(red, 1);
    if (threadIdx.x == 0) {
        partials[0 * gridDim.x + blockIdx.x] = red[0 * S2SAD_MAX_BLOCK];
    }
}

extern "C" __global__ void three__ccc_sum_grads_f64__finish(
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
