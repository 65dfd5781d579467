def nonlocal_loss__grad(x):
    # Grad of: return sum(map(counter, x))    [golden/examples.py:113:5]
    # nonlocal_loss__elementwise writes state (nonlocal count): its elements run in order, threading the state,
    # then a reverse sweep; the state is written back once, as a plain call would
    state = read_state()
    value, (x_bar,), state = scan_grads(nonlocal_loss__elementwise, (x,), active=('x',), state=state, seed=1.0)
    write_state(state)
    return (x_bar,)


# Kernel nonlocal_loss__elementwise: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
# from golden/examples.py:90 (make_counter.<locals>.counter)
def counter(x, count):
    count = count + x
    return (count, count)


def nonlocal_loss__elementwise(x, count):
    _t1, count = counter(x, count)
    return (_t1, count)


def counter__dual(x, count):
    count_dot_x = 0.0
    count_dot_count = 1.0
    count_dot_x = count_dot_x + 1.0
    count = count + x
    return (count, count, count_dot_x, count_dot_count, count_dot_x, count_dot_count)


def nonlocal_loss__elementwise__dual(x, count):
    count_dot_x = 0.0
    count_dot_count = 1.0
    _d1, _d2, d_d1_dx, d_d1_dcount, d_d2_dx, d_d2_dcount = counter__dual(x, count)
    _t1_dot_x = d_d1_dx + d_d1_dcount * count_dot_x
    _t1_dot_count = d_d1_dcount * count_dot_count
    _t1 = _d1
    count_dot_x = d_d2_dx + d_d2_dcount * count_dot_x
    count_dot_count = d_d2_dcount * count_dot_count
    count = _d2
    return (_t1, count, _t1_dot_x, _t1_dot_count, count_dot_x, count_dot_count)
