// s2sad kernel module 'nonlocal_loss__elementwise': scan_c_s1_sum_grads, float64 (generated; see s2sad/codegen/cuda.py for the ABI)

// from golden/examples.py:90 (make_counter.<locals>.counter)
struct counter_ret { double r0, r1; };

__device__ counter_ret counter(double x, double count)
{
    count = count + x;
    return counter_ret{count, count};
}

struct nonlocal_loss__elementwise_ret { double r0, r1; };

__device__ nonlocal_loss__elementwise_ret nonlocal_loss__elementwise(double x, double count)
{
    double _t1 = 0.0;
    const counter_ret _r1 = counter(x, count);
    _t1 = _r1.r0;
    count = _r1.r1;
    return nonlocal_loss__elementwise_ret{_t1, count};
}

struct counter__dual_ret { double r0, r1, r2, r3, r4, r5; };

__device__ counter__dual_ret counter__dual(double x, double count)
{
    double count_dot_x = 0.0, count_dot_count = 0.0;
    count_dot_x = 0.0;
    count_dot_count = 1.0;
    count_dot_x = count_dot_x + 1.0;
    count = count + x;
    return counter__dual_ret{count, count, count_dot_x, count_dot_count, count_dot_x, count_dot_count};
}

struct nonlocal_loss__elementwise__dual_ret { double r0, r1, r2, r3, r4, r5; };

__device__ nonlocal_loss__elementwise__dual_ret nonlocal_loss__elementwise__dual(double x, double count)
{
    double count_dot_x = 0.0, count_dot_count = 0.0, _d1 = 0.0, _d2 = 0.0, d_d1_dx = 0.0,
           d_d1_dcount = 0.0, d_d2_dx = 0.0, d_d2_dcount = 0.0, _t1_dot_x = 0.0,
           _t1_dot_count = 0.0, _t1 = 0.0;
    count_dot_x = 0.0;
    count_dot_count = 1.0;
    const counter__dual_ret _r1 = counter__dual(x, count);
    _d1 = _r1.r0;
    _d2 = _r1.r1;
    d_d1_dx = _r1.r2;
    d_d1_dcount = _r1.r3;
    d_d2_dx = _r1.r4;
    d_d2_dcount = _r1.r5;
    _t1_dot_x = d_d1_dx + d_d1_dcount * count_dot_x;
    _t1_dot_count = d_d1_dcount * count_dot_count;
    _t1 = _d1;
    count_dot_x = d_d2_dx + d_d2_dcount * count_dot_x;
    count_dot_count = d_d2_dcount * count_dot_count;
    count = _d2;
    return nonlocal_loss__elementwise__dual_ret{_t1, count, _t1_dot_x, _t1_dot_count, count_dot_x, count_dot_count};
}

extern "C" __global__ void nonlocal_loss__elementwise__scan_c_s1_sum_grads_f64(
    long long n_outer,
    long long n_inner,
    const double* x,
    double* state,
    double* acc,
    double seed,
    double* x_bar,
    double* state_bar,
    double* tape)
{
    // a scan: the elements in order, threading the state, in one thread (grid 1, block 1)
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const long long n = n_outer * n_inner;
    double count = state[0];
    double sum_acc = 0.0;
    for (long long k = 0; k < n; ++k) {
        tape[k * 1 + 0] = count;
        const nonlocal_loss__elementwise_ret r = nonlocal_loss__elementwise(x[k], count);
        count = r.r1;
        sum_acc += r.r0;
    }
    state[0] = count;
    acc[0] += sum_acc;
    // reverse sweep: <state>_bar is the adjoint of the state after element k
    double count_bar = state_bar[0];
    for (long long k = n - 1; k >= 0; --k) {
        const nonlocal_loss__elementwise__dual_ret r = nonlocal_loss__elementwise__dual(x[k], tape[k * 1 + 0]);
        x_bar[k] = r.r2 * seed + count_bar * r.r4;
        const double count_bar_next = r.r3 * seed + count_bar * r.r5;
        count_bar = count_bar_next;
    }
    state_bar[0] = count_bar;
}
