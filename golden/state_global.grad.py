def global_loss__grad(x):
    # Grad of: return sum(map(running_global, x))    [golden/examples.py:101:5]
    # global_loss__elementwise writes state (global total): its elements run in order, threading the state,
    # then a reverse sweep; the state is written back once, as a plain call would
    state = read_state()
    value, (x_bar,), state = scan_grads(global_loss__elementwise, (x,), active=('x',), state=state, seed=1.0)
    write_state(state)
    return (x_bar,)


# Kernel global_loss__elementwise: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
# from golden/examples.py:71 (running_global)
def running_global(x, total):
    total = total + x
    return (total, total)


def global_loss__elementwise(x, total):
    _t1, total = running_global(x, total)
    return (_t1, total)


def running_global__dual(x, total):
    total_dot_x = 0.0
    total_dot_total = 1.0
    total_dot_x = total_dot_x + 1.0
    total = total + x
    return (total, total, total_dot_x, total_dot_total, total_dot_x, total_dot_total)


def global_loss__elementwise__dual(x, total):
    total_dot_x = 0.0
    total_dot_total = 1.0
    _d1, _d2, d_d1_dx, d_d1_dtotal, d_d2_dx, d_d2_dtotal = running_global__dual(x, total)
    _t1_dot_x = d_d1_dx + d_d1_dtotal * total_dot_x
    _t1_dot_total = d_d1_dtotal * total_dot_total
    _t1 = _d1
    total_dot_x = d_d2_dx + d_d2_dtotal * total_dot_x
    total_dot_total = d_d2_dtotal * total_dot_total
    total = _d2
    return (_t1, total, _t1_dot_x, _t1_dot_total, total_dot_x, total_dot_total)
