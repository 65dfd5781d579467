// s2sad kernel module 'array_loss__elementwise': scan_c_s1_sum_grads, float64 (generated; see s2sad/codegen/cuda.py for the ABI)

// from golden/examples.py:82 (running_array)
struct running_array_ret { double r0, r1; };

__device__ running_array_ret running_array(double x, double BUFFER_0)
{
    BUFFER_0 = 0.5 * BUFFER_0 + tanh(x);
    return running_array_ret{BUFFER_0, BUFFER_0};
}

// local function at golden/examples.py:109
struct lambda_109_ret { double r0, r1; };

__device__ lambda_109_ret lambda_109(double z, double BUFFER_0)
{
    double _t1 = 0.0;
    const running_array_ret _r1 = running_array(z, BUFFER_0);
    _t1 = _r1.r0;
    BUFFER_0 = _r1.r1;
    return lambda_109_ret{_t1, BUFFER_0};
}

struct array_loss__elementwise_ret { double r0, r1; };

__device__ array_loss__elementwise_ret array_loss__elementwise(double x, double BUFFER_0)
{
    double _t1 = 0.0;
    const lambda_109_ret _r1 = lambda_109(x, BUFFER_0);
    _t1 = _r1.r0;
    BUFFER_0 = _r1.r1;
    return array_loss__elementwise_ret{_t1, BUFFER_0};
}

struct running_array__dual_ret { double r0, r1, r2, r3, r4, r5; };

__device__ running_array__dual_ret running_array__dual(double x, double BUFFER_0)
{
    double BUFFER_0_dot_x = 0.0, BUFFER_0_dot_BUFFER_0 = 0.0, _d1 = 0.0, _d2 = 0.0;
    BUFFER_0_dot_x = 0.0;
    BUFFER_0_dot_BUFFER_0 = 1.0;
    _d1 = 0.5 * BUFFER_0;
    _d2 = tanh(x);
    BUFFER_0_dot_x = 0.5 * BUFFER_0_dot_x + (1.0 - _d2 * _d2);
    BUFFER_0_dot_BUFFER_0 = 0.5 * BUFFER_0_dot_BUFFER_0;
    BUFFER_0 = _d1 + _d2;
    return running_array__dual_ret{BUFFER_0, BUFFER_0, BUFFER_0_dot_x, BUFFER_0_dot_BUFFER_0, BUFFER_0_dot_x, BUFFER_0_dot_BUFFER_0};
}

struct lambda_109__dual_ret { double r0, r1, r2, r3, r4, r5; };

__device__ lambda_109__dual_ret lambda_109__dual(double z, double BUFFER_0)
{
    double BUFFER_0_dot_z = 0.0, BUFFER_0_dot_BUFFER_0 = 0.0, _d1 = 0.0, _d2 = 0.0, d_d1_dx = 0.0,
           d_d1_dBUFFER_0 = 0.0, d_d2_dx = 0.0, d_d2_dBUFFER_0 = 0.0, _t1_dot_z = 0.0,
           _t1_dot_BUFFER_0 = 0.0, _t1 = 0.0;
    BUFFER_0_dot_z = 0.0;
    BUFFER_0_dot_BUFFER_0 = 1.0;
    const running_array__dual_ret _r1 = running_array__dual(z, BUFFER_0);
    _d1 = _r1.r0;
    _d2 = _r1.r1;
    d_d1_dx = _r1.r2;
    d_d1_dBUFFER_0 = _r1.r3;
    d_d2_dx = _r1.r4;
    d_d2_dBUFFER_0 = _r1.r5;
    _t1_dot_z = d_d1_dx + d_d1_dBUFFER_0 * BUFFER_0_dot_z;
    _t1_dot_BUFFER_0 = d_d1_dBUFFER_0 * BUFFER_0_dot_BUFFER_0;
    _t1 = _d1;
    BUFFER_0_dot_z = d_d2_dx + d_d2_dBUFFER_0 * BUFFER_0_dot_z;
    BUFFER_0_dot_BUFFER_0 = d_d2_dBUFFER_0 * BUFFER_0_dot_BUFFER_0;
    BUFFER_0 = _d2;
    return lambda_109__dual_ret{_t1, BUFFER_0, _t1_dot_z, _t1_dot_BUFFER_0, BUFFER_0_dot_z, BUFFER_0_dot_BUFFER_0};
}

struct array_loss__elementwise__dual_ret { double r0, r1, r2, r3, r4, r5; };

__device__ array_loss__elementwise__dual_ret array_loss__elementwise__dual(double x, double BUFFER_0)
{
    double BUFFER_0_dot_x = 0.0, BUFFER_0_dot_BUFFER_0 = 0.0, _d1 = 0.0, _d2 = 0.0, d_d1_dz = 0.0,
           d_d1_dBUFFER_0 = 0.0, d_d2_dz = 0.0, d_d2_dBUFFER_0 = 0.0, _t1_dot_x = 0.0,
           _t1_dot_BUFFER_0 = 0.0, _t1 = 0.0;
    BUFFER_0_dot_x = 0.0;
    BUFFER_0_dot_BUFFER_0 = 1.0;
    const lambda_109__dual_ret _r1 = lambda_109__dual(x, BUFFER_0);
    _d1 = _r1.r0;
    _d2 = _r1.r1;
    d_d1_dz = _r1.r2;
    d_d1_dBUFFER_0 = _r1.r3;
    d_d2_dz = _r1.r4;
    d_d2_dBUFFER_0 = _r1.r5;
    _t1_dot_x = d_d1_dz + d_d1_dBUFFER_0 * BUFFER_0_dot_x;
    _t1_dot_BUFFER_0 = d_d1_dBUFFER_0 * BUFFER_0_dot_BUFFER_0;
    _t1 = _d1;
    BUFFER_0_dot_x = d_d2_dz + d_d2_dBUFFER_0 * BUFFER_0_dot_x;
    BUFFER_0_dot_BUFFER_0 = d_d2_dBUFFER_0 * BUFFER_0_dot_BUFFER_0;
    BUFFER_0 = _d2;
    return array_loss__elementwise__dual_ret{_t1, BUFFER_0, _t1_dot_x, _t1_dot_BUFFER_0, BUFFER_0_dot_x, BUFFER_0_dot_BUFFER_0};
}

extern "C" __global__ void array_loss__elementwise__scan_c_s1_sum_grads_f64(
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
    double BUFFER_0 = state[0];
    double sum_acc = 0.0;
    for (long long k = 0; k < n; ++k) {
        tape[k * 1 + 0] = BUFFER_0;
        const array_loss__elementwise_ret r = array_loss__elementwise(x[k], BUFFER_0);
        BUFFER_0 = r.r1;
        sum_acc += r.r0;
    }
    state[0] = BUFFER_0;
    acc[0] += sum_acc;
    // reverse sweep: <state>_bar is the adjoint of the state after element k
    double BUFFER_0_bar = state_bar[0];
    for (long long k = n - 1; k >= 0; --k) {
        const array_loss__elementwise__dual_ret r = array_loss__elementwise__dual(x[k], tape[k * 1 + 0]);
        x_bar[k] = r.r2 * seed + BUFFER_0_bar * r.r4;
        const double BUFFER_0_bar_next = r.r3 * seed + BUFFER_0_bar * r.r5;
        BUFFER_0_bar = BUFFER_0_bar_next;
    }
    state_bar[0] = BUFFER_0_bar;
}
