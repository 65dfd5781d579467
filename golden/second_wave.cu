// s2sad kernel module 'wave__d_z': c_sum_grads, float64 (generated; see s2sad/codegen/cuda.py for the ABI)

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

struct wave__dual__dual_ret { double r0, r1, r2, r3; };

__device__ wave__dual__dual_ret wave__dual__dual(double z)
{
    double _d1_dot = 0.0, _d1 = 0.0, _d2_dot = 0.0, _d2 = 0.0, _d3 = 0.0, _d4 = 0.0, _d5 = 0.0,
           _d6 = 0.0, _d7 = 0.0;
    _d1_dot = cos(z);
    _d1 = sin(z);
    _d2_dot = 3.0 * pow(z, 2.0);
    _d2 = pow(z, 3.0);
    _d3 = cos(z);
    _d4 = _d2 * _d3;
    _d5 = pow(z, 2.0);
    _d6 = 3.0 * _d5;
    _d7 = _d1 * _d6;
    return wave__dual__dual_ret{_d1 * _d2, _d4 + _d7, _d2 * _d1_dot + _d1 * _d2_dot, _d3 * _d2_dot + _d2 * -sin(z) + (_d6 * _d1_dot + _d1 * (3.0 * (2.0 * z)))};
}

struct wave__d_z__dual_ret { double r0, r1; };

__device__ wave__d_z__dual_ret wave__d_z__dual(double z)
{
    double _d1 = 0.0, _d2 = 0.0, d_d1_dz = 0.0, d_d2_dz = 0.0, wave_value_dot = 0.0,
           wave_value = 0.0, dwave_dz_dot = 0.0, dwave_dz = 0.0;
    const wave__dual__dual_ret _r1 = wave__dual__dual(z);
    _d1 = _r1.r0;
    _d2 = _r1.r1;
    d_d1_dz = _r1.r2;
    d_d2_dz = _r1.r3;
    wave_value_dot = d_d1_dz;
    wave_value = _d1;
    dwave_dz_dot = d_d2_dz;
    dwave_dz = _d2;
    return wave__d_z__dual_ret{dwave_dz, dwave_dz_dot};
}

extern "C" __global__ void wave__d_z__c_sum_grads_f64(
    long long n_outer,
    long long n_inner,
    const double* z,
    double* acc,
    double seed,
    double* z_bar,
    double* partials)
{
    const long long n = n_outer * n_inner;
    const long long stride = (long long)gridDim.x * blockDim.x;
    double sum_acc = 0.0;
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += stride) {
        const wave__d_z__dual_ret r = wave__d_z__dual(z[k]);
        sum_acc += r.r0;
        z_bar[k] = r.r1 * seed;
    }
    // block sums of the 1 reduced quantity -> one partial per block
    __shared__ double red[1 * S2SAD_MAX_BLOCK];
    red[0 * S2SAD_MAX_BLOCK + threadIdx.x] = sum_acc;
    s2sad_block_sum(red, 1);
    if (threadIdx.x == 0) {
        partials[0 * gridDim.x + blockIdx.x] = red[0 * S2SAD_MAX_BLOCK];
    }
}

extern "C" __global__ void wave__d_z__c_sum_grads_f64__finish(
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
