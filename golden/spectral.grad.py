def spectral_loss__grad(A):
    # Grad of: return np.sum(w * V[0] ** 2) + logdet    [golden/examples.py:174:5]
    # w, V = np.linalg.eigh(A)
    _1 = np.linalg.eigh(A)
    _2 = _1[0]
    _3 = _1[1]
    # sign, logdet = np.linalg.slogdet(A)
    _4 = np.linalg.slogdet(A)
    _6 = _4[1]
    # return np.sum(w * V[0] ** 2) + logdet
    _7 = _3[0]
    _9, (d9_d2, d9_d7) = sum_dual(spectral_loss__sum, (_2, _7), active=('_2', '_7'), scale=1.0)
    loss = apply(spectral_loss__loss, (_9, _6))
    check_scalar_loss(loss)
    # reverse sweep
    loss_bar = 1.0
    # Grad of: return np.sum(w * V[0] ** 2) + logdet    [golden/examples.py:174:5]
    (__9_g, __6_g) = vjp(spectral_loss__loss, (_9, _6), ('_9', '_6'), 1.0)
    _9_bar = unbroadcast(__9_g, _9)
    _6_bar = unbroadcast(__6_g, _6)
    _2_bar = d9_d2 * _9_bar
    _7_bar = d9_d7 * _9_bar
    _3_bar = index_bar(_7_bar, _3, np.s_[0])
    # Grad of: sign, logdet = np.linalg.slogdet(A)    [golden/examples.py:173:5]
    _4_bar = item_bar(_6_bar, _4, 1)
    A_bar = slogdet_bar(_4_bar, A, _4)
    # Grad of: w, V = np.linalg.eigh(A)    [golden/examples.py:172:5]
    _1_bar = item_bar(_3_bar, _1, 1)
    _1_bar = _1_bar + item_bar(_2_bar, _1, 0)
    A_bar = A_bar + eigh_bar(_1_bar, A, _1)
    return (A_bar,)


# Kernel spectral_loss__sum (fused with its reduction; partials for _2, _7).
def spectral_loss__sum(_2, _7):
    return _2 * _7 ** 2


def spectral_loss__sum__dual(_2, _7):
    _d1 = _7 ** 2
    return (_2 * _d1, _d1, _2 * (2 * _7))


# Kernel spectral_loss__loss (applied elementwise by the runtime; partials for _9, _6).
def spectral_loss__loss(_9, _6):
    return _9 + _6


def spectral_loss__loss__dual(_9, _6):
    return (_9 + _6, 1.0, 1.0)
