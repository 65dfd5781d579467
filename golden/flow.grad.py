def flow_loss__grad(A, b, X):
    # Grad of: return np.sum(H ** 2) + np.sum(x ** 2)    [golden/examples.py:202:5]
    # H = np.zeros(X.shape)
    H = np.zeros(X.shape)
    # for i, row in enumerate(X):
    _rows_n_1 = len(X)
    H_2 = H
    tape = []
    for i in range(_rows_n_1):
        # for i, row in enumerate(X):
        row = X[i]
        # H[i] = np.tanh(row * b)
        _1, (d1_db,) = store_partials(flow_loss__ew_4, (row, b), ('b',))
        H_3 = set_items_in_place(H_2, np.s_[i], _1, differentiated=True)
        tape.append((_1, d1_db))
        H_2 = H_3
    # x = np.zeros(len(b))
    _2 = len(b)
    x = np.zeros(_2)
    err = float('inf')
    k = 0
    x_2 = x
    tape_2 = []
    while True:  # while err > 1e-8 and k < 50:
        # while err > 1e-8 and k < 50:
        _3 = flow_loss__ew_3(err)
        _4 = flow_loss__ew_2(k)
        _5 = _3 and _4
        if not _5:
            break
        # x_new = np.tanh(A @ x + b)
        _6, x_new, (dx_new_d6,) = product_partials(A, x_2, flow_loss__x_new, 0, (None, b), ('_6',))
        # err = np.max(np.abs(x_new - x))
        _7 = apply(flow_loss__ew, (x_new, x_2))
        err_2 = np.max(_7)
        # k += 1
        k_2 = k + 1
        tape_2.append((_6, dx_new_d6, x_2))
        err, k, x_2 = err_2, k_2, x_new
    # if np.sum(x) > 10.0:
    _8 = np.sum(x_2)
    _9 = flow_loss__ew_5(_8)
    if _9:  # if np.sum(x) > 10.0:
        # return np.sum(x)
        result = np.sum(x_2)
        result_2 = result
        returned = True
    else:
        result_2 = 0.0
        returned = False
    # return np.sum(H ** 2) + np.sum(x ** 2)
    _10 = not returned
    if _10:  # return np.sum(H ** 2) + np.sum(x ** 2)
        # return np.sum(H ** 2) + np.sum(x ** 2)
        _12, (d12_dH_2,) = sum_dual(flow_loss__sum_2, (H_2,), active=('H_2',), scale=1.0)
        _14, (d14_dx_2,) = sum_dual(flow_loss__sum, (x_2,), active=('x_2',), scale=1.0)
        result_3, dresult_3_d12, dresult_3_d14 = flow_loss__result_3__dual(_12, _14)
        result_4 = result_3
        returned_2 = True
    else:
        d12_dH_2 = d14_dx_2 = dresult_3_d12 = dresult_3_d14 = None
        result_4 = result_2
        returned_2 = returned
    # reverse sweep
    result_4_bar = 1.0
    H_2_bar = zeros_bar(H_2)
    result_2_bar = zeros_bar(result_2)
    x_2_bar = zeros_bar(x_2)
    if _10:  # Grad of: return np.sum(H ** 2) + np.sum(x ** 2)
        result_3_bar = result_4_bar
        # Grad of: return np.sum(H ** 2) + np.sum(x ** 2)    [golden/examples.py:202:5]
        _12_bar = dresult_3_d12 * result_3_bar
        _14_bar = dresult_3_d14 * result_3_bar
        x_2_bar = x_2_bar + d14_dx_2 * _14_bar
        H_2_bar = H_2_bar + d12_dH_2 * _12_bar
    else:
        result_2_bar = result_2_bar + result_4_bar
    if _9:  # Grad of: if np.sum(x) > 10.0:
        result_bar = result_2_bar
        # Grad of: return np.sum(x)    [golden/examples.py:201:9]
        x_2_bar = x_2_bar + sum_bar(result_bar, x_2)
    else:
        pass
    A_bar = zeros_bar(A)
    b_bar = zeros_bar(b)
    for (_6, dx_new_d6, x_2) in reversed(tape_2):  # Grad of: while err > 1e-8 and k < 50:
        x_new_bar = x_2_bar
        # Grad of: x_new = np.tanh(A @ x + b)    [golden/examples.py:196:9]
        (_6_bar, _b_g) = product_sums(dx_new_d6, x_new_bar, (_6, b))
        b_bar = b_bar + _b_g
        A_bar = A_bar + matmul_lhs_bar(_6_bar, A, x_2)
        x_2_bar = matmul_rhs_bar(_6_bar, A, x_2)
    for i, (_1, d1_db) in zip(reversed(range(_rows_n_1)), reversed(tape)):  # Grad of: for i, row in enumerate(X):
        H_3_bar = H_2_bar
        # Grad of: H[i] = np.tanh(row * b)    [golden/examples.py:191:9]
        _1_bar = set_items_value_bar(H_3_bar, np.s_[i], _1)
        H_2_bar = None
        H_2_bar = set_items_base_bar(H_3_bar, np.s_[i])
        b_bar = b_bar + unbroadcast(d1_db * _1_bar, b)
    return (A_bar, b_bar)


# Kernel flow_loss__ew_4 (applied elementwise by the runtime; partials for b).
def flow_loss__ew_4(row, b):
    return math.tanh(row * b)


def flow_loss__ew_4__dual_b(row, b):
    _d1 = row * b
    _d2 = math.tanh(_d1)
    return (_d2, (1.0 - _d2 * _d2) * row)


# Kernel flow_loss__ew_3 (called as Python on scalars; partials for none).
def flow_loss__ew_3(err):
    return err > 1e-08


# Kernel flow_loss__ew_2 (called as Python on scalars; partials for none).
def flow_loss__ew_2(k):
    return k < 50


# Kernel flow_loss__x_new (applied elementwise by the runtime; partials for _6).
def flow_loss__x_new(_6, b):
    return math.tanh(_6 + b)


def flow_loss__x_new__dual__6(_6, b):
    _d1 = _6 + b
    _d2 = math.tanh(_d1)
    return (_d2, 1.0 - _d2 * _d2)


# Kernel flow_loss__ew (applied elementwise by the runtime; partials for none).
def flow_loss__ew(x_new, x_2):
    return abs(x_new - x_2)


# Kernel flow_loss__ew_5 (called as Python on scalars; partials for none).
def flow_loss__ew_5(_8):
    return _8 > 10.0


# Kernel flow_loss__sum_2 (fused with its reduction; partials for H_2).
def flow_loss__sum_2(H_2):
    return H_2 ** 2


def flow_loss__sum_2__dual(H_2):
    return (H_2 ** 2, 2 * H_2)


# Kernel flow_loss__sum (fused with its reduction; partials for x_2).
def flow_loss__sum(x_2):
    return x_2 ** 2


def flow_loss__sum__dual(x_2):
    return (x_2 ** 2, 2 * x_2)


# Kernel flow_loss__result_3 (called as Python on scalars; partials for _12, _14).
def flow_loss__result_3(_12, _14):
    return _12 + _14


def flow_loss__result_3__dual(_12, _14):
    return (_12 + _14, 1.0, 1.0)
