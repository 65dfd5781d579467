def broadcast_grad_loss__grad(x):
    # Grad of: return np.sum(s2sad.broadcast(dtanh, x))    [golden/examples.py:239:5]
    (x_bar,) = sum_grads(tanh__d_x, (x,), active=('x',), scale=1.0)
    return (x_bar,)


# Kernel tanh__d_x: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
# from <s2sad: call of math.tanh>:1 (math.tanh)
def tanh(x):
    return math.tanh(x)


# forward mode (a dual) made for s2sad.grad(tanh)
def tanh__dual(x):
    _d1 = math.tanh(x)
    return (_d1, 1.0 - _d1 * _d1)


# d tanh / d x: s2sad.grad(tanh), its forward dual selecting the partial
def tanh__d_x(x):
    tanh_value, dtanh_dx = tanh__dual(x)
    return dtanh_dx


def tanh__dual__dual(x):
    _d1 = math.tanh(x)
    _d1_dot = 1.0 - _d1 * _d1
    _d2 = _d1 * _d1
    return (_d1, 1.0 - _d2, _d1_dot, -(_d1 * _d1_dot + _d1 * _d1_dot))


def tanh__d_x__dual(x):
    _d1, _d2, d_d1_dx, d_d2_dx = tanh__dual__dual(x)
    tanh_value_dot = d_d1_dx
    tanh_value = _d1
    dtanh_dx_dot = d_d2_dx
    dtanh_dx = _d2
    return (dtanh_dx, dtanh_dx_dot)
