def layer_norm_loss__grad(x, g, b, W):
    # Grad of: return np.sum((h @ W) ** 2)    [golden/examples.py:308:5]
    # h = np.tanh(xc / np.sqrt(v + 1e-5) * g + b)
    _4 = row_layer_norm(x, eps=1e-05, axis=-1)
    h, (dh_dg, dh_db, dh_d4) = store_partials(layer_norm_loss__h, (g, b, _4), ('g', 'b', '_4'))
    # return np.sum((h @ W) ** 2)
    _2 = matmul(h, W)
    (dloss_d2,) = sum_grads(layer_norm_loss__loss, (_2,), active=('_2',), scale=1.0)
    # reverse sweep
    loss_bar = 1.0
    # Grad of: return np.sum((h @ W) ** 2)    [golden/examples.py:308:5]
    _2_bar = dloss_d2
    h_bar = matmul_lhs_bar(_2_bar, h, W)
    W_bar = matmul_rhs_bar(_2_bar, h, W)
    # Grad of: h = np.tanh(xc / np.sqrt(v + 1e-5) * g + b)    [golden/examples.py:307:5]
    g_bar = unbroadcast(dh_dg * h_bar, g)
    b_bar = unbroadcast(dh_db * h_bar, b)
    _4_bar = unbroadcast(dh_d4 * h_bar, _4)
    x_bar = row_layer_norm_bar(_4_bar, x, eps=1e-05, axis=-1)
    return (x_bar, g_bar, b_bar, W_bar)


# Kernel layer_norm_loss__h (applied elementwise by the runtime; partials for g, b, _4).
def layer_norm_loss__h(g, b, _4):
    return math.tanh(_4 * g + b)


def layer_norm_loss__h__dual(g, b, _4):
    _d1 = _4 * g
    _d2 = _d1 + b
    _d3 = math.tanh(_d2)
    _d4 = 1.0 - _d3 * _d3
    return (_d3, _d4 * _4, _d4, _d4 * g)


# Kernel layer_norm_loss__loss (fused with its reduction; partials for _2).
def layer_norm_loss__loss(_2):
    return _2 ** 2


def layer_norm_loss__loss__dual(_2):
    return (_2 ** 2, 2 * _2)
