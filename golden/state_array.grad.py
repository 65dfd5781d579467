def array_loss__grad(x):
    # Grad of: return sum(running_array(z) for z in x)    [golden/examples.py:109:5]
    # array_loss__elementwise writes state (BUFFER[0]): its elements run in order, threading the state,
    # then a reverse sweep; the state is written back once, as a plain call would
    state = read_state()
    value, (x_bar,), state = scan_grads(array_loss__elementwise, (x,), active=('x',), state=state, seed=1.0)
    write_state(state)
    return (x_bar,)


# Kernel array_loss__elementwise: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
# local function at golden/examples.py:109
def lambda_109(z, BUFFER_0):
    _t1, BUFFER_0 = running_array(z, BUFFER_0)
    return (_t1, BUFFER_0)


# from golden/examples.py:82 (running_array)
def running_array(x, BUFFER_0):
    BUFFER_0 = 0.5 * BUFFER_0 + math.tanh(x)
    return (BUFFER_0, BUFFER_0)


def array_loss__elementwise(x, BUFFER_0):
    _t1, BUFFER_0 = lambda_109(x, BUFFER_0)
    return (_t1, BUFFER_0)


def running_array__dual(x, BUFFER_0):
    BUFFER_0_dot_x = 0.0
    BUFFER_0_dot_BUFFER_0 = 1.0
    _d1 = 0.5 * BUFFER_0
    _d2 = math.tanh(x)
    BUFFER_0_dot_x = 0.5 * BUFFER_0_dot_x + (1.0 - _d2 * _d2)
    BUFFER_0_dot_BUFFER_0 = 0.5 * BUFFER_0_dot_BUFFER_0
    BUFFER_0 = _d1 + _d2
    return (BUFFER_0, BUFFER_0, BUFFER_0_dot_x, BUFFER_0_dot_BUFFER_0, BUFFER_0_dot_x, BUFFER_0_dot_BUFFER_0)


def lambda_109__dual(z, BUFFER_0):
    BUFFER_0_dot_z = 0.0
    BUFFER_0_dot_BUFFER_0 = 1.0
    _d1, _d2, d_d1_dx, d_d1_dBUFFER_0, d_d2_dx, d_d2_dBUFFER_0 = running_array__dual(z, BUFFER_0)
    _t1_dot_z = d_d1_dx + d_d1_dBUFFER_0 * BUFFER_0_dot_z
    _t1_dot_BUFFER_0 = d_d1_dBUFFER_0 * BUFFER_0_dot_BUFFER_0
    _t1 = _d1
    BUFFER_0_dot_z = d_d2_dx + d_d2_dBUFFER_0 * BUFFER_0_dot_z
    BUFFER_0_dot_BUFFER_0 = d_d2_dBUFFER_0 * BUFFER_0_dot_BUFFER_0
    BUFFER_0 = _d2
    return (_t1, BUFFER_0, _t1_dot_z, _t1_dot_BUFFER_0, BUFFER_0_dot_z, BUFFER_0_dot_BUFFER_0)


def array_loss__elementwise__dual(x, BUFFER_0):
    BUFFER_0_dot_x = 0.0
    BUFFER_0_dot_BUFFER_0 = 1.0
    _d1, _d2, d_d1_dz, d_d1_dBUFFER_0, d_d2_dz, d_d2_dBUFFER_0 = lambda_109__dual(x, BUFFER_0)
    _t1_dot_x = d_d1_dz + d_d1_dBUFFER_0 * BUFFER_0_dot_x
    _t1_dot_BUFFER_0 = d_d1_dBUFFER_0 * BUFFER_0_dot_BUFFER_0
    _t1 = _d1
    BUFFER_0_dot_x = d_d2_dz + d_d2_dBUFFER_0 * BUFFER_0_dot_x
    BUFFER_0_dot_BUFFER_0 = d_d2_dBUFFER_0 * BUFFER_0_dot_BUFFER_0
    BUFFER_0 = _d2
    return (_t1, BUFFER_0, _t1_dot_x, _t1_dot_BUFFER_0, BUFFER_0_dot_x, BUFFER_0_dot_BUFFER_0)
