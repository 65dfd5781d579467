def mlp3_loss__grad(W1, b1, W2, b2, W3, X, y):
    # Grad of: return np.mean((h2 @ W3 - y) ** 2)    [golden/examples.py:345:5]
    # h1 = np.tanh(X @ W1 + b1)
    _1, h1, (dh1_d1,) = product_partials(X, W1, mlp3_loss__h1, 0, (None, b1), ('_1',), from_out=True)
    # h2 = np.maximum(h1 @ W2 + b2, 0.0)
    _2, h2, (dh2_d2,) = product_partials(h1, W2, mlp3_loss__h2, 0, (None, b2), ('_2',), from_out=True)
    # return np.mean((h2 @ W3 - y) ** 2)
    _3 = matmul(h2, W3)
    (dloss_d3,) = sum_grads(mlp3_loss__loss, (_3, y), active=('_3',), scale=1.0 / broadcast_size(_3, y))
    # reverse sweep
    loss_bar = 1.0
    # Grad of: return np.mean((h2 @ W3 - y) ** 2)    [golden/examples.py:345:5]
    _3_bar = dloss_d3
    # Grad of: h2 = np.maximum(h1 @ W2 + b2, 0.0)    [golden/examples.py:344:5]
    (_2_bar, b2_bar, W3_bar) = lhs_bar_sums(_3_bar, h2, W3, dh2_d2, (_2, b2), rhs=True)
    # Grad of: h1 = np.tanh(X @ W1 + b1)    [golden/examples.py:343:5]
    (b1_bar, W2_bar, W1_bar) = lhs_bar_sums(_2_bar, h1, W2, dh1_d1, (_1, b1), rhs=True, nxt=(0, X, W1))
    return (W1_bar, b1_bar, W2_bar, b2_bar, W3_bar)


# Kernel mlp3_loss__h1 (applied elementwise by the runtime; partials for _1).
def mlp3_loss__h1(_1, b1):
    return math.tanh(_1 + b1)


def mlp3_loss__h1__dual__1(_1, b1):
    _d1 = _1 + b1
    _d2 = math.tanh(_d1)
    return (_d2, 1.0 - _d2 * _d2)


# Kernel mlp3_loss__h2 (applied elementwise by the runtime; partials for _2).
def mlp3_loss__h2(_2, b2):
    return math.maximum(_2 + b2, 0.0)


def mlp3_loss__h2__dual__2(_2, b2):
    _d1 = _2 + b2
    return (math.maximum(_d1, 0.0), 0.5 if _d1 == 0.0 else 1.0 if _d1 > 0.0 else 0.0)


# Kernel mlp3_loss__loss (fused with its reduction; partials for _3).
def mlp3_loss__loss(_3, y):
    return (_3 - y) ** 2


def mlp3_loss__loss__dual__3(_3, y):
    _d1 = _3 - y
    return (_d1 ** 2, 2 * _d1)
