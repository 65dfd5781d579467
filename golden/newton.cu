// s2sad kernel module 'newton_sqrt': c_sum_grads, float64 (generated; see s2sad/codegen/cuda.py for the ABI)

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

struct newton_sqrt__dual_ret { double r0, r1; };

__device__ newton_sqrt__dual_ret newton_sqrt__dual(double a)
{
    double x_dot = 0.0, x = 0.0, i = 0.0, _d1 = 0.0, _d2 = 0.0;
    x_dot = 0.0;
    x = 1.0;
    for (long long _k1 = 0; _k1 < 10; ++_k1) {
        i = (double)_k1;
        _d1 = a / x;
        _d2 = x + _d1;
        x_dot = 0.5 * (x_dot + (1.0 / x - _d1 * (1.0 / x) * x_dot));
        x = 0.5 * _d2;
    }
    return newton_sqrt__dual_ret{x, x_dot};
}

extern "C" __global__ void newton_sqrt__c_sum_grads_f64(
    long long n_outer,
    long long n_inner,
    const double* a,
    double* acc,
    double seed,
    double* a_bar,
    double* partials)
{
    const long long n = n_outer * n_inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    double sum_acc = 0.0;
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const newton_sqrt__dual_ret r = newton_sqrt__dual(a[k]);
        sum_acc += r.r0;
        a_bar[k] = r.r1 * seed;
    }
    // block sums of the 1 reduced quantity -> one partial per block
    __shared__ double red[1 * S2SAD_MAX_BLOCK];
    red[0 * S2SAD_MAX_BLOCK + threadIdx.x] = sum_acc;
    s2sad_block_sum(red, 1);
    if (threadIdx.x == 0) {
        partials[0 * gridDim.x + blockIdx.x] = red[0 * S2SAD_MAX_BLOCK];
    }
}

extern "C" __global__ void newton_sqrt__c_sum_grads_f64__finish(
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
