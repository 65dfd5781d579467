// s2sad kernel module 'tanh__d_x': c_sum_grads, float64 (generated; see s2sad/codegen/cuda.py for the ABI)

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

struct tanh__dual__dual_ret { double r0, r1, r2, r3; };

__device__ tanh__dual__dual_ret tanh__dual__dual(double x)
{
    double _d1 = 0.0, _d1_dot = 0.0, _d2 = 0.0;
    _d1 = tanh(x);
    _d1_dot = 1.0 - _d1 * _d1;
    _d2 = _d1 * _d1;
    return tanh__dual__dual_ret{_d1, 1.0 - _d2, _d1_dot, -(_d1 * _d1_dot + _d1 * _d1_dot)};
}

struct tanh__d_x__dual_ret { double r0, r1; };

__device__ tanh__d_x__dual_ret tanh__d_x__dual(double x)
{
    double _d1 = 0.0, _d2 = 0.0, d_d1_dx = 0.0, d_d2_dx = 0.0, tanh_value_dot = 0.0,
           tanh_value = 0.0, dtanh_dx_dot = 0.0, dtanh_dx = 0.0;
    const tanh__dual__dual_ret _r1 = tanh__dual__dual(x);
    _d1 = _r1.r0;
    _d2 = _r1.r1;
    d_d1_dx = _r1.r2;
    d_d2_dx = _r1.r3;
    tanh_value_dot = d_d1_dx;
    tanh_value = _d1;
    dtanh_dx_dot = d_d2_dx;
    dtanh_dx = _d2;
    return tanh__d_x__dual_ret{dtanh_dx, dtanh_dx_dot};
}

extern "C" __global__ void tanh__d_x__c_sum_grads_f64(
    long long n_outer,
    long long n_inner,
    const double* x,
    double* acc,
    double seed,
    double* x_bar,
    double* partials)
{
    const long long n = n_outer * n_inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    double sum_acc = 0.0;
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const tanh__d_x__dual_ret r = tanh__d_x__dual(x[k]);
        sum_acc += r.r0;
        x_bar[k] = r.r1 * seed;
    }
    // block sums of the 1 reduced quantity -> one partial per block
    __shared__ double red[1 * S2SAD_MAX_BLOCK];
    red[0 * S2SAD_MAX_BLOCK + threadIdx.x] = sum_acc;
    s2sad_block_sum(red, 1);
    if (threadIdx.x == 0) {
        partials[0 * gridDim.x + blockIdx.x] = red[0 * S2SAD_MAX_BLOCK];
    }
}

extern "C" __global__ void tanh__d_x__c_sum_grads_f64__finish(
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
