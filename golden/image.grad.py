def image_loss__grad(img, K):
    # Grad of: return np.sum(np.logaddexp(band, 0.0)) + np.sum(np.diagonal(K) ** 2)    [golden/examples.py:176:5]
    # padded = np.pad(img, 1, mode="edge")
    padded = np.pad(img, 1, mode='edge')
    # shifted = np.roll(padded, 1, axis=0)
    shifted = np.roll(padded, 1, axis=0)
    # band = np.tril(K) @ np.take(shifted, [0, 1, 2], axis=1)
    _1 = np.tril(K)
    _2 = np.take(shifted, [0, 1, 2], axis=1)
    band = matmul(_1, _2)
    # return np.sum(np.logaddexp(band, 0.0)) + np.sum(np.diagonal(K) ** 2)
    _5 = np.diagonal(K)
    (dloss_d4, dloss_d7) = image_loss__loss__dual(not_needed, not_needed)[1:]  # its partials do not read _4, _7
    # reverse sweep
    loss_bar = 1.0
    # Grad of: return np.sum(np.logaddexp(band, 0.0)) + np.sum(np.diagonal(K) ** 2)    [golden/examples.py:176:5]
    _4_bar = dloss_d4
    _7_bar = dloss_d7
    (_5_bar,) = sum_grads(image_loss__sum, (_5,), active=('_5',), scale=_7_bar)
    K_bar = diagonal_bar(_5_bar, K)
    (band_bar,) = sum_grads(image_loss__sum_2, (band,), active=('band',), scale=_4_bar)
    # Grad of: band = np.tril(K) @ np.take(shifted, [0, 1, 2], axis=1)    [golden/examples.py:175:5]
    _1_bar = matmul_lhs_bar(band_bar, _1, _2)
    _2_bar = matmul_rhs_bar(band_bar, _1, _2)
    shifted_bar = take_bar(_2_bar, shifted, [0, 1, 2], axis=1)
    K_bar = K_bar + tri_bar(_1_bar, K, lower=True)
    # Grad of: shifted = np.roll(padded, 1, axis=0)    [golden/examples.py:174:5]
    padded_bar = np.roll(shifted_bar, np.negative(1), axis=0)
    # Grad of: padded = np.pad(img, 1, mode="edge")    [golden/examples.py:173:5]
    img_bar = pad_bar(padded_bar, img, 1, mode='edge')
    return (img_bar, K_bar)


# Kernel image_loss__sum_2 (fused with its reduction; partials for band).
# from s2sad/ewfuncs.py:69 (logaddexp); derivative from s2sad.defrule
def logaddexp(x, y):
    big = x if x > y else y
    return x + 0.6931471805599453 if x == y else big + math.log1p(math.exp(-abs(x - y)))


def image_loss__sum_2(band):
    return logaddexp(band, 0.0)


def image_loss__sum_2__dual(band):
    _d1 = logaddexp(band, 0.0)
    return (_d1, 0.5 if band == 0.0 else 1.0 if band == _d1 else math.exp(band - _d1))


# Kernel image_loss__sum (fused with its reduction; partials for _5).
def image_loss__sum(_5):
    return _5 ** 2


def image_loss__sum__dual(_5):
    return (_5 ** 2, 2 * _5)


# Kernel image_loss__loss (called as Python on scalars; partials for _4, _7).
def image_loss__loss(_4, _7):
    return _4 + _7


def image_loss__loss__dual(_4, _7):
    return (_4 + _7, 1.0, 1.0)
