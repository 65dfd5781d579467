def gradient_penalty_loss__grad(W1, b1, W2, X, y, *, mlp_tanh_grad):
    # Grad of: return mlp_tanh_loss(W1, b1, W2, X, y) + 0.1 * np.sum(mlp_tanh_grad(W1, b1, W2, X, y) ** 2)    [golden/examples.py:267:5]
    # h = np.tanh(X @ W1 + b1)
    _1, h, (dh_d1,) = product_partials(X, W1, gradient_penalty_loss__h, 0, (None, b1), ('_1',), from_out=True)
    # out = h @ W2
    out = matmul(h, W2)
    # return mlp_tanh_loss(W1, b1, W2, X, y) + 0.1 * np.sum(mlp_tanh_grad(W1, b1, W2, X, y) ** 2)
    _4 = mlp_tanh_grad(W1, b1, W2, X, y)
    (dloss_d3, dloss_d6) = gradient_penalty_loss__loss__dual(not_needed, not_needed)[1:]  # its partials do not read _3, _6
    # reverse sweep
    loss_bar = 1.0
    # Grad of: return mlp_tanh_loss(W1, b1, W2, X, y) + 0.1 * np.sum(mlp_tanh_grad(W1, b1, W2, X, y) ** 2)    [golden/examples.py:267:5]
    _3_bar = dloss_d3
    _6_bar = dloss_d6
    (_4_bar,) = sum_grads(gradient_penalty_loss__sum, (_4,), active=('_4',), scale=_6_bar)
    (W1_bar, b1_bar, W2_bar) = derivative_vjp(mlp_tanh_grad, (0, 1, 2), _4_bar, (W1, b1, W2, X, y))
    # Grad of: return np.mean((out - y) ** 2)    [golden/examples.py:220:5]
    (out_bar,) = sum_grads(gradient_penalty_loss__mean, (out, y), active=('out',), scale=_3_bar / broadcast_size(out, y))
    # Grad of: out = h @ W2    [golden/examples.py:219:5]
    W2_bar = W2_bar + matmul_rhs_bar(out_bar, h, W2)
    # Grad of: h = np.tanh(X @ W1 + b1)    [golden/examples.py:218:5]
    (_1_bar, _b1_g) = lhs_bar_sums(out_bar, h, W2, dh_d1, (_1, b1))
    b1_bar = b1_bar + _b1_g
    W1_bar = W1_bar + matmul_rhs_bar(_1_bar, X, W1)
    return (W1_bar, b1_bar, W2_bar)


# Kernel gradient_penalty_loss__h (applied elementwise by the runtime; partials for _1).
def gradient_penalty_loss__h(_1, b1):
    return math.tanh(_1 + b1)


def gradient_penalty_loss__h__dual__1(_1, b1):
    _d1 = _1 + b1
    _d2 = math.tanh(_d1)
    return (_d2, 1.0 - _d2 * _d2)


# Kernel gradient_penalty_loss__mean (fused with its reduction; partials for out).
def gradient_penalty_loss__mean(out, y):
    return (out - y) ** 2


def gradient_penalty_loss__mean__dual_out(out, y):
    _d1 = out - y
    return (_d1 ** 2, 2 * _d1)


# Kernel gradient_penalty_loss__sum (fused with its reduction; partials for _4).
def gradient_penalty_loss__sum(_4):
    return _4 ** 2


def gradient_penalty_loss__sum__dual(_4):
    return (_4 ** 2, 2 * _4)


# Kernel gradient_penalty_loss__loss (called as Python on scalars; partials for _3, _6).
def gradient_penalty_loss__loss(_3, _6):
    return _3 + 0.1 * _6


def gradient_penalty_loss__loss__dual(_3, _6):
    _d1 = 0.1 * _6
    return (_3 + _d1, 1.0, 0.1)
