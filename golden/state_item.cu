// s2sad kernel module 'item_loss__elementwise': scan_c_s1_sum_grads, float64 (generated; see s2sad/codegen/cuda.py for the ABI)

// from golden/examples.py:77 (running_item)
struct running_item_ret { double r0, r1; };

__device__ running_item_ret running_item(double x, double STORE_0)
{
    STORE_0 = STORE_0 + x;
    return running_item_ret{STORE_0 * x, STORE_0};
}

struct item_loss__elementwise_ret { double r0, r1; };

__device__ item_loss__elementwise_ret item_loss__elementwise(double x, double STORE_0)
{
    double _t1 = 0.0;
    const running_item_ret _r1 = running_item(x, STORE_0);
    _t1 = _r1.r0;
    STORE_0 = _r1.r1;
    return item_loss__elementwise_ret{_t1, STORE_0};
}

struct running_item__dual_ret { double r0, r1, r2, r3, r4, r5; };

__device__ running_item__dual_ret running_item__dual(double x, double STORE_0)
{
    double STORE_0_dot_x = 0.0, STORE_0_dot_STORE_0 = 0.0;
    STORE_0_dot_x = 0.0;
    STORE_0_dot_STORE_0 = 1.0;
    STORE_0_dot_x = STORE_0_dot_x + 1.0;
    STORE_0 = STORE_0 + x;
    return running_item__dual_ret{STORE_0 * x, STORE_0, x * STORE_0_dot_x + STORE_0, x * STORE_0_dot_STORE_0, STORE_0_dot_x, STORE_0_dot_STORE_0};
}

struct item_loss__elementwise__dual_ret { double r0, r1, r2, r3, r4, r5; };

__device__ item_loss__elementwise__dual_ret item_loss__elementwise__dual(double x, double STORE_0)
{
    double STORE_0_dot_x = 0.0, STORE_0_dot_STORE_0 = 0.0, _d1 = 0.0, _d2 = 0.0, d_d1_dx = 0.0,
           d_d1_dSTORE_0 = 0.0, d_d2_dx = 0.0, d_d2_dSTORE_0 = 0.0, _t1_dot_x = 0.0,
           _t1_dot_STORE_0 = 0.0, _t1 = 0.0;
    STORE_0_dot_x = 0.0;
    STORE_0_dot_STORE_0 = 1.0;
    const running_item__dual_ret _r1 = running_item__dual(x, STORE_0);
    _d1 = _r1.r0;
    _d2 = _r1.r1;
    d_d1_dx = _r1.r2;
    d_d1_dSTORE_0 = _r1.r3;
    d_d2_dx = _r1.r4;
    d_d2_dSTORE_0 = _r1.r5;
    _t1_dot_x = d_d1_dx + d_d1_dSTORE_0 * STORE_0_dot_x;
    _t1_dot_STORE_0 = d_d1_dSTORE_0 * STORE_0_dot_STORE_0;
    _t1 = _d1;
    STORE_0_dot_x = d_d2_dx + d_d2_dSTORE_0 * STORE_0_dot_x;
    STORE_0_dot_STORE_0 = d_d2_dSTORE_0 * STORE_0_dot_STORE_0;
    STORE_0 = _d2;
    return item_loss__elementwise__dual_ret{_t1, STORE_0, _t1_dot_x, _t1_dot_STORE_0, STORE_0_dot_x, STORE_0_dot_STORE_0};
}

extern "C" __global__ void item_loss__elementwise__scan_c_s1_sum_grads_f64(
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
    double STORE_0 = state[0];
    double sum_acc = 0.0;
    for (long long k = 0; k < n; ++k) {
        tape[k * 1 + 0] = STORE_0;
        const item_loss__elementwise_ret r = item_loss__elementwise(x[k], STORE_0);
        STORE_0 = r.r1;
        sum_acc += r.r0;
    }
    state[0] = STORE_0;
    acc[0] += sum_acc;
    // reverse sweep: <state>_bar is the adjoint of the state after element k
    double STORE_0_bar = state_bar[0];
    for (long long k = n - 1; k >= 0; --k) {
        const item_loss__elementwise__dual_ret r = item_loss__elementwise__dual(x[k], tape[k * 1 + 0]);
        x_bar[k] = r.r2 * seed + STORE_0_bar * r.r4;
        const double STORE_0_bar_next = r.r3 * seed + STORE_0_bar * r.r5;
        STORE_0_bar = STORE_0_bar_next;
    }
    state_bar[0] = STORE_0_bar;
}
