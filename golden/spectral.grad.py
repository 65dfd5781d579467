def spectral_loss__grad(A):
    # Grad of: return np.sum(w * V[0] ** 2) + logdet    [golden/examples.py:183:5]
    # w, V = np.linalg.eigh(A)
    _1 = np.linalg.eigh(A)
    w = _1[0]
    V = _1[1]
    # sign, logdet = np.linalg.slogdet(A)
    _2 = np.linalg.slogdet(A)
    logdet = _2[1]
    # return np.sum(w * V[0] ** 2) + logdet
    _3 = V[0]
    _5, (d5_dw, d5_d3) = sum_dual(spectral_loss__sum, (w, _3), active=('w', '_3'), scale=1.0)
    loss = apply(spectral_loss__loss, (_5, logdet))
    check_scalar_loss(loss)
    # reverse sweep
    loss_bar = 1.0
    # Grad of: return np.sum(w * V[0] ** 2) + logdet    [golden/examples.py:183:5]
    (__5_g, _logdet_g) = unit_vjp(spectral_loss__loss, (_5, logdet), ('_5', 'logdet'), 1.0)
    _5_bar = unbroadcast(__5_g, _5)
    logdet_bar = unbroadcast(_logdet_g, logdet)
    w_bar = d5_dw * _5_bar
    _3_bar = d5_d3 * _5_bar
    V_bar = index_bar(_3_bar, V, np.s_[0])
    # Grad of: sign, logdet = np.linalg.slogdet(A)    [golden/examples.py:182:5]
    _2_bar = item_bar(logdet_bar, _2, 1)
    A_bar = slogdet_bar(_2_bar, A, _2)
    # Grad of: w, V = np.linalg.eigh(A)    [golden/examples.py:181:5]
    _1_bar = item_bar(V_bar, _1, 1)
    _1_bar = _1_bar + item_bar(w_bar, _1, 0)
    A_bar = A_bar + eigh_bar(_1_bar, A, _1)
    return (A_bar,)


# Kernel spectral_loss__sum (fused with its reduction; partials for w, _3).
def spectral_loss__sum(w, _3):
    return w * _3 ** 2


def spectral_loss__sum__dual(w, _3):
    _d1 = _3 ** 2
    return (w * _d1, _d1, w * (2 * _3))


# Kernel spectral_loss__loss (applied elementwise by the runtime; partials for _5, logdet).
def spectral_loss__loss(_5, logdet):
    return _5 + logdet


def spectral_loss__loss__dual(_5, logdet):
    return (_5 + logdet, 1.0, 1.0)
