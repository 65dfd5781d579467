def mlp_loss__grad(W1, b1, W2, X, y):
    # Grad of: return np.mean((out - y) ** 2)    [golden/examples.py:160:5]
    # h = s2sad.broadcast(leaky_relu, X @ W1 + b1)
    _1 = matmul(X, W1)
    # out = h @ W2
    # h @ W2 in the pass of h's kernel; h is not formed (None) where W2 is one column
    out, h = kernel_matmul(mlp_loss__h, (_1, b1), W2)
    # return np.mean((out - y) ** 2)
    (dloss_dout,) = sum_grads(mlp_loss__loss, (out, y), active=('out',), scale=1.0 / broadcast_size(out, y))
    # reverse sweep
    loss_bar = 1.0
    # Grad of: return np.mean((out - y) ** 2)    [golden/examples.py:160:5]
    out_bar = dloss_dout
    # Grad of: out = h @ W2    [golden/examples.py:159:5]
    # and of: h = s2sad.broadcast(leaky_relu, X @ W1 + b1)    [golden/examples.py:158:5]
    (_1_bar, b1_bar, W2_bar) = kernel_matmul_vjp(mlp_loss__h, (_1, b1), ('_1', 'b1'), W2, True, out_bar, h)
    # Grad of: h = s2sad.broadcast(leaky_relu, X @ W1 + b1)    [golden/examples.py:158:5]
    W1_bar = matmul_rhs_bar(_1_bar, X, W1)
    return (W1_bar, b1_bar, W2_bar)


# Kernel mlp_loss__h (applied elementwise by the runtime; partials for _1, b1).
# from golden/examples.py:153 (leaky_relu)
def leaky_relu(z):
    return z if z > 0 else 0.01 * z


def mlp_loss__h(_1, b1):
    return leaky_relu(_1 + b1)


def leaky_relu__dual(z):
    if z > 0:
        _d2 = 1.0
        _d1 = z
    else:
        _d2 = 0.01
        _d1 = 0.01 * z
    return (_d1, _d2)


def mlp_loss__h__dual(_1, b1):
    _d1 = _1 + b1
    _d2, d_d2_dz = leaky_relu__dual(_d1)
    return (_d2, d_d2_dz, d_d2_dz)


# Kernel mlp_loss__loss (fused with its reduction; partials for out).
def mlp_loss__loss(out, y):
    return (out - y) ** 2


def mlp_loss__loss__dual_out(out, y):
    _d1 = out - y
    return (_d1 ** 2, 2 * _d1)
