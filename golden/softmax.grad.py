def softmax_loss__grad(W, b, X, Y):
    # Grad of: return -np.mean(np.sum(Y * logp, axis=1))    [golden/examples.py:167:5]
    # z = X @ W + b
    _1 = matmul(X, W)
    z = apply(softmax_loss__z, (_1, b))
    # z = z - np.max(z, axis=1, keepdims=True)
    _2 = reduce_max(z, axis=1, keepdims=True)
    z_2 = apply(softmax_loss__z_2, (z, _2))
    # logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))
    # np.sum(_3, axis=1, keepdims=True) in _3's kernel: _3 is not formed (None) where that pass sums its rows
    _4, _3 = kernel_rowsum(softmax_loss__ew_2, (z_2,), ('z_2',), 1, True, False, 'store')
    # return -np.mean(np.sum(Y * logp, axis=1))
    # np.sum(_5, axis=1) in _5's kernel: _5 is not formed (None) where that pass sums its rows
    _6, _5 = kernel_rowsum(softmax_loss__ew, (z_2, _4, Y), ('z_2', '_4'), 1, False, False, 'store')
    (dloss_d7,) = softmax_loss__loss__dual(not_needed)[1:]  # its partials do not read _7
    # reverse sweep
    loss_bar = 1.0
    # Grad of: return -np.mean(np.sum(Y * logp, axis=1))    [golden/examples.py:167:5]
    _7_bar = dloss_d7
    _6_bar = mean_bar(_7_bar, _6)
    (z_2_bar, _4_bar) = kernel_rowsum_vjp(softmax_loss__ew, (z_2, _4, Y), ('z_2', '_4'), 1, False, False, _6_bar, _5)
    # Grad of: logp = z - np.log(np.sum(np.exp(z), axis=1, keepdims=True))    [golden/examples.py:166:5]
    (_z_2_g,) = kernel_rowsum_vjp(softmax_loss__ew_2, (z_2,), ('z_2',), 1, True, False, _4_bar, _3)
    z_2_bar = z_2_bar + _z_2_g
    # Grad of: z = z - np.max(z, axis=1, keepdims=True)    [golden/examples.py:165:5]
    (_z_g, __2_g) = vjp(softmax_loss__z_2, (z, _2), ('z', '_2'), z_2_bar)
    z_bar = unbroadcast(_z_g, z)
    _2_bar = unbroadcast(__2_g, _2)
    z_bar = z_bar + maxmin_bar(_2_bar, z, _2, axis=1, keepdims=True)
    # Grad of: z = X @ W + b    [golden/examples.py:164:5]
    (__1_g, _b_g) = vjp(softmax_loss__z, (_1, b), ('_1', 'b'), z_bar)
    _1_bar = unbroadcast(__1_g, _1)
    b_bar = unbroadcast(_b_g, b)
    W_bar = matmul_rhs_bar(_1_bar, X, W)
    return (W_bar, b_bar)


# Kernel softmax_loss__z (applied elementwise by the runtime; partials for _1, b).
def softmax_loss__z(_1, b):
    return _1 + b


def softmax_loss__z__dual(_1, b):
    return (_1 + b, 1.0, 1.0)


# Kernel softmax_loss__z_2 (applied elementwise by the runtime; partials for z, _2).
def softmax_loss__z_2(z, _2):
    return z - _2


def softmax_loss__z_2__dual(z, _2):
    return (z - _2, 1.0, -1.0)


# Kernel softmax_loss__ew_2 (applied elementwise by the runtime; partials for z_2).
def softmax_loss__ew_2(z_2):
    return math.exp(z_2)


def softmax_loss__ew_2__dual(z_2):
    _d1 = math.exp(z_2)
    return (_d1, _d1)


# Kernel softmax_loss__ew (applied elementwise by the runtime; partials for z_2, _4).
def softmax_loss__ew(z_2, _4, Y):
    logp = z_2 - math.log(_4)
    return Y * logp


def softmax_loss__ew__dual_z_2__4(z_2, _4, Y):
    _d1 = math.log(_4)
    logp_dot_z_2 = 1.0
    logp_dot__4 = -(1.0 / _4)
    logp = z_2 - _d1
    return (Y * logp, Y * logp_dot_z_2, Y * logp_dot__4)


# Kernel softmax_loss__loss (called as Python on scalars; partials for _7).
def softmax_loss__loss(_7):
    return -_7


def softmax_loss__loss__dual(_7):
    return (-_7, -1.0)
