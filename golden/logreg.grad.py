def logreg_loss__grad(w, X, y):
    # Grad of: return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))    [golden/examples.py:150:5]
    # p = sigmoid(X @ w)
    _1 = matmul(X, w)
    # return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))
    (dloss_d3,) = logreg_loss__loss__dual(not_needed)[1:]  # its partials do not read _3
    # reverse sweep
    loss_bar = 1.0
    # Grad of: return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))    [golden/examples.py:150:5]
    _3_bar = dloss_d3
    (_1_bar,) = sum_grads(logreg_loss__mean, (_1, y), active=('_1',), scale=_3_bar / broadcast_size(_1, y))
    # Grad of: p = sigmoid(X @ w)    [golden/examples.py:149:5]
    w_bar = matmul_rhs_bar(_1_bar, X, w)
    return (w_bar,)


# Kernel logreg_loss__mean (fused with its reduction; partials for _1).
def logreg_loss__mean(_1, y):
    p = 1.0 / (1.0 + math.exp(-_1))
    return y * math.log(p) + (1.0 - y) * math.log(1.0 - p)


def logreg_loss__mean__dual__1(_1, y):
    _d1 = -_1
    _d2 = math.exp(_d1)
    _d3 = 1.0 + _d2
    p = 1.0 / _d3
    p_dot = -p * (1.0 / _d3) * -_d2
    _d4 = math.log(p)
    _d5 = y * _d4
    _d6 = 1.0 - p
    _d7 = math.log(_d6)
    _d8 = (1.0 - y) * _d7
    return (_d5 + _d8, y * (1.0 / p * p_dot) + (1.0 - y) * (1.0 / _d6 * -p_dot))


# Kernel logreg_loss__loss (called as Python on scalars; partials for _3).
def logreg_loss__loss(_3):
    return -_3


def logreg_loss__loss__dual(_3):
    return (-_3, -1.0)
