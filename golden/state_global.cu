// s2sad kernel module 'global_loss__elementwise': scan_c_s1_sum_grads, float64 (generated; see s2sad/codegen/cuda.py for the ABI)

// from golden/examples.py:71 (running_global)
struct running_global_ret { double r0, r1; };

__device__ running_global_ret running_global(double x, double total)
{
    total = total + x;
    return running_global_ret{total, total};
}

struct global_loss__elementwise_ret { double r0, r1; };

__device__ global_loss__elementwise_ret global_loss__elementwise(double x, double total)
{
    double _t1 = 0.0;
    const running_global_ret _r1 = running_global(x, total);
    _t1 = _r1.r0;
    total = _r1.r1;
    return global_loss__elementwise_ret{_t1, total};
}

struct running_global__dual_ret { double r0, r1, r2, r3, r4, r5; };

__device__ running_global__dual_ret running_global__dual(double x, double total)
{
    double total_dot_x = 0.0, total_dot_total = 0.0;
    total_dot_x = 0.0;
    total_dot_total = 1.0;
    total_dot_x = total_dot_x + 1.0;
    total = total + x;
    return running_global__dual_ret{total, total, total_dot_x, total_dot_total, total_dot_x, total_dot_total};
}

struct global_loss__elementwise__dual_ret { double r0, r1, r2, r3, r4, r5; };

__device__ global_loss__elementwise__dual_ret global_loss__elementwise__dual(double x, double total)
{
    double total_dot_x = 0.0, total_dot_total = 0.0, _d1 = 0.0, _d2 = 0.0, d_d1_dx = 0.0,
           d_d1_dtotal = 0.0, d_d2_dx = 0.0, d_d2_dtotal = 0.0, _t1_dot_x = 0.0,
           _t1_dot_total = 0.0, _t1 = 0.0;
    total_dot_x = 0.0;
    total_dot_total = 1.0;
    const running_global__dual_ret _r1 = running_global__dual(x, total);
    _d1 = _r1.r0;
    _d2 = _r1.r1;
    d_d1_dx = _r1.r2;
    d_d1_dtotal = _r1.r3;
    d_d2_dx = _r1.r4;
    d_d2_dtotal = _r1.r5;
    _t1_dot_x = d_d1_dx + d_d1_dtotal * total_dot_x;
    _t1_dot_total = d_d1_dtotal * total_dot_total;
    _t1 = _d1;
    total_dot_x = d_d2_dx + d_d2_dtotal * total_dot_x;
    total_dot_total = d_d2_dtotal * total_dot_total;
    total = _d2;
    return global_loss__elementwise__dual_ret{_t1, total, _t1_dot_x, _t1_dot_total, total_dot_x, total_dot_total};
}

extern "C" __global__ void global_loss__elementwise__scan_c_s1_sum_grads_f64(
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
    double total = state[0];
    double sum_acc = 0.0;
    for (long long k = 0; k < n; ++k) {
        tape[k * 1 + 0] = total;
        const global_loss__elementwise_ret r = global_loss__elementwise(x[k], total);
        total = r.r1;
        sum_acc += r.r0;
    }
    state[0] = total;
    acc[0] += sum_acc;
    // reverse sweep: <state>_bar is the adjoint of the state after element k
    double total_bar = state_bar[0];
    for (long long k = n - 1; k >= 0; --k) {
        const global_loss__elementwise__dual_ret r = global_loss__elementwise__dual(x[k], tape[k * 1 + 0]);
        x_bar[k] = r.r2 * seed + total_bar * r.r4;
        const double total_bar_next = r.r3 * seed + total_bar * r.r5;
        total_bar = total_bar_next;
    }
    state_bar[0] = total_bar;
}
