def local_list_loss__grad(x):
    # Grad of: return sum(map(step, x))    [golden/examples.py:122:5]
    # local_list_loss__elementwise writes state (acc[0]): its elements run in order, threading the state,
    # then a reverse sweep; the state is written back once, as a plain call would
    state = read_state()
    value, (x_bar,), state = scan_grads(local_list_loss__elementwise, (x,), active=('x',), state=state, seed=1.0)
    write_state(state)
    return (x_bar,)


# Kernel local_list_loss__elementwise: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
# local function at golden/examples.py:119
def step(z, acc_0):
    acc_0 = acc_0 + z
    return (acc_0, acc_0)


def local_list_loss__elementwise(x, acc_0):
    _t1, acc_0 = step(x, acc_0)
    return (_t1, acc_0)


def step__dual(z, acc_0):
    acc_0_dot_z = 0.0
    acc_0_dot_acc_0 = 1.0
    acc_0_dot_z = acc_0_dot_z + 1.0
    acc_0 = acc_0 + z
    return (acc_0, acc_0, acc_0_dot_z, acc_0_dot_acc_0, acc_0_dot_z, acc_0_dot_acc_0)


def local_list_loss__elementwise__dual(x, acc_0):
    acc_0_dot_x = 0.0
    acc_0_dot_acc_0 = 1.0
    _d1, _d2, d_d1_dz, d_d1_dacc_0, d_d2_dz, d_d2_dacc_0 = step__dual(x, acc_0)
    _t1_dot_x = d_d1_dz + d_d1_dacc_0 * acc_0_dot_x
    _t1_dot_acc_0 = d_d1_dacc_0 * acc_0_dot_acc_0
    _t1 = _d1
    acc_0_dot_x = d_d2_dz + d_d2_dacc_0 * acc_0_dot_x
    acc_0_dot_acc_0 = d_d2_dacc_0 * acc_0_dot_acc_0
    acc_0 = _d2
    return (_t1, acc_0, _t1_dot_x, _t1_dot_acc_0, acc_0_dot_x, acc_0_dot_acc_0)
