def item_loss__grad(x):
    # Grad of: return sum(map(running_item, x))    [golden/examples.py:105:5]
    # item_loss__elementwise writes state (STORE[0]): its elements run in order, threading the state,
    # then a reverse sweep; the state is written back once, as a plain call would
    state = read_state()
    value, (x_bar,), state = scan_grads(item_loss__elementwise, (x,), active=('x',), state=state, seed=1.0)
    write_state(state)
    return (x_bar,)


# Kernel item_loss__elementwise: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
# from golden/examples.py:77 (running_item)
def running_item(x, STORE_0):
    STORE_0 = STORE_0 + x
    return (STORE_0 * x, STORE_0)


def item_loss__elementwise(x, STORE_0):
    _t1, STORE_0 = running_item(x, STORE_0)
    return (_t1, STORE_0)


def running_item__dual(x, STORE_0):
    STORE_0_dot_x = 0.0
    STORE_0_dot_STORE_0 = 1.0
    STORE_0_dot_x = STORE_0_dot_x + 1.0
    STORE_0 = STORE_0 + x
    return (STORE_0 * x, STORE_0, x * STORE_0_dot_x + STORE_0, x * STORE_0_dot_STORE_0, STORE_0_dot_x, STORE_0_dot_STORE_0)


def item_loss__elementwise__dual(x, STORE_0):
    STORE_0_dot_x = 0.0
    STORE_0_dot_STORE_0 = 1.0
    _d1, _d2, d_d1_dx, d_d1_dSTORE_0, d_d2_dx, d_d2_dSTORE_0 = running_item__dual(x, STORE_0)
    _t1_dot_x = d_d1_dx + d_d1_dSTORE_0 * STORE_0_dot_x
    _t1_dot_STORE_0 = d_d1_dSTORE_0 * STORE_0_dot_STORE_0
    _t1 = _d1
    STORE_0_dot_x = d_d2_dx + d_d2_dSTORE_0 * STORE_0_dot_x
    STORE_0_dot_STORE_0 = d_d2_dSTORE_0 * STORE_0_dot_STORE_0
    STORE_0 = _d2
    return (_t1, STORE_0, _t1_dot_x, _t1_dot_STORE_0, STORE_0_dot_x, STORE_0_dot_STORE_0)
