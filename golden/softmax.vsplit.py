def softmax_loss__value_and_grad(W, b, X, Y):
    # Grad of: return -np.mean(np.sum(Y * logp, axis=1))    [golden/examples.py:167:5]
    # z = X @ W + b
    _1, z = matmul_bias(X, W, softmax_loss__z, 0, b)
    # return -np.mean(np.sum(Y * logp, axis=1))
    (dloss_d7,) = softmax_loss__loss__dual(not_needed)[1:]  # its partials do not read _7
    # reverse sweep
    loss_bar = 1.0
    # Grad of: return -np.mean(np.sum(Y * logp, axis=1))    [golden/examples.py:167:5]
    _7_bar = dloss_d7
    _6_bar = mean_bar(_7_bar, row_dot_like(z, Y, axis=1))
    z_bar = row_dot_log_softmax_bar(0, _6_bar, z, Y, axis=1)
    # Grad of: z = X @ W + b    [golden/examples.py:164:5]
    (__1_g, _b_g) = unit_vjp(softmax_loss__z, (_1, b), ('_1', 'b'), z_bar)
    _1_bar = unbroadcast(__1_g, _1)
    b_bar = unbroadcast(_b_g, b)
    W_bar = matmul_rhs_bar(_1_bar, X, W)
    # the value, after the gradients
    _6 = row_dot_log_softmax(z, Y, axis=1)
    _7 = np.mean(_6)
    loss, dloss_d7 = softmax_loss__loss__dual(_7)
    return loss, (W_bar, b_bar)


# Kernel softmax_loss__z (applied elementwise by the runtime; partials for _1, b).
def softmax_loss__z(_1, b):
    return _1 + b


def softmax_loss__z__dual(_1, b):
    return (_1 + b, 1.0, 1.0)


# Kernel softmax_loss__loss (called as Python on scalars; partials for _7).
def softmax_loss__loss(_7):
    return -_7


def softmax_loss__loss__dual(_7):
    return (-_7, -1.0)
