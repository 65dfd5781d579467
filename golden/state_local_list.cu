// s2sad kernel module 'local_list_loss__elementwise': scan_c_s1_sum_grads, float64 (generated; see s2sad/codegen/cuda.py for the ABI)

// local function at golden/examples.py:119
struct step_ret { double r0, r1; };

__device__ step_ret step(double z, double acc_0)
{
    acc_0 = acc_0 + z;
    return step_ret{acc_0, acc_0};
}

struct local_list_loss__elementwise_ret { double r0, r1; };

__device__ local_list_loss__elementwise_ret local_list_loss__elementwise(double x, double acc_0)
{
    double _t1 = 0.0;
    const step_ret _r1 = step(x, acc_0);
    _t1 = _r1.r0;
    acc_0 = _r1.r1;
    return local_list_loss__elementwise_ret{_t1, acc_0};
}

struct step__dual_ret { double r0, r1, r2, r3, r4, r5; };

__device__ step__dual_ret step__dual(double z, double acc_0)
{
    double acc_0_dot_z = 0.0, acc_0_dot_acc_0 = 0.0;
    acc_0_dot_z = 0.0;
    acc_0_dot_acc_0 = 1.0;
    acc_0_dot_z = acc_0_dot_z + 1.0;
    acc_0 = acc_0 + z;
    return step__dual_ret{acc_0, acc_0, acc_0_dot_z, acc_0_dot_acc_0, acc_0_dot_z, acc_0_dot_acc_0};
}

struct local_list_loss__elementwise__dual_ret { double r0, r1, r2, r3, r4, r5; };

__device__ local_list_loss__elementwise__dual_ret local_list_loss__elementwise__dual(double x, double acc_0)
{
    double acc_0_dot_x = 0.0, acc_0_dot_acc_0 = 0.0, _d1 = 0.0, _d2 = 0.0, d_d1_dz = 0.0,
           d_d1_dacc_0 = 0.0, d_d2_dz = 0.0, d_d2_dacc_0 = 0.0, _t1_dot_x = 0.0,
           _t1_dot_acc_0 = 0.0, _t1 = 0.0;
    acc_0_dot_x = 0.0;
    acc_0_dot_acc_0 = 1.0;
    const step__dual_ret _r1 = step__dual(x, acc_0);
    _d1 = _r1.r0;
    _d2 = _r1.r1;
    d_d1_dz = _r1.r2;
    d_d1_dacc_0 = _r1.r3;
    d_d2_dz = _r1.r4;
    d_d2_dacc_0 = _r1.r5;
    _t1_dot_x = d_d1_dz + d_d1_dacc_0 * acc_0_dot_x;
    _t1_dot_acc_0 = d_d1_dacc_0 * acc_0_dot_acc_0;
    _t1 = _d1;
    acc_0_dot_x = d_d2_dz + d_d2_dacc_0 * acc_0_dot_x;
    acc_0_dot_acc_0 = d_d2_dacc_0 * acc_0_dot_acc_0;
    acc_0 = _d2;
    return local_list_loss__elementwise__dual_ret{_t1, acc_0, _t1_dot_x, _t1_dot_acc_0, acc_0_dot_x, acc_0_dot_acc_0};
}

extern "C" __global__ void local_list_loss__elementwise__scan_c_s1_sum_grads_f64(
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
    double acc_0 = state[0];
    double sum_acc = 0.0;
    for (long long k = 0; k < n; ++k) {
        tape[k * 1 + 0] = acc_0;
        const local_list_loss__elementwise_ret r = local_list_loss__elementwise(x[k], acc_0);
        acc_0 = r.r1;
        sum_acc += r.r0;
    }
    state[0] = acc_0;
    acc[0] += sum_acc;
    // reverse sweep: <state>_bar is the adjoint of the state after element k
    double acc_0_bar = state_bar[0];
    for (long long k = n - 1; k >= 0; --k) {
        const local_list_loss__elementwise__dual_ret r = local_list_loss__elementwise__dual(x[k], tape[k * 1 + 0]);
        x_bar[k] = r.r2 * seed + acc_0_bar * r.r4;
        const double acc_0_bar_next = r.r3 * seed + acc_0_bar * r.r5;
        acc_0_bar = acc_0_bar_next;
    }
    state_bar[0] = acc_0_bar;
}
