def rosen__hvp(x, x_dot):
    # Batched tangents of the gradient of: return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)    [golden/examples.py:322:5]
    # return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    _1 = x[1:]
    _1_dot = bindex(x_dot, np.s_[1:])
    _2 = x[:-1]
    _2_dot = bindex(x_dot, np.s_[:-1])
    _3 = x[:-1]
    _3_dot = bindex(x_dot, np.s_[:-1])
    # reverse sweep, each adjoint with its tangent
    loss_bar, loss_bar_dot = 1.0, np.zeros(np.shape(x_dot)[0])
    # Grad of: return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)    [golden/examples.py:322:5]
    (__1_g_dot, __2_g_dot, __3_g_dot), (__1_g, __2_g, __3_g) = bseeded_grads(sum_grads, rosen__loss__seeded_tangent, (_1, _2, _3), (0, 1, 2), (_1_dot, _2_dot, _3_dot), loss_bar * 1.0, loss_bar_dot * 1.0, ('_1', '_2', '_3', 'q__1', 'q__2', 'q__3'))
    _1_bar_dot = __1_g_dot
    _2_bar_dot = __2_g_dot
    _3_bar_dot = __3_g_dot
    x_bar_dot = bindex_bar(_3_bar_dot, x, np.s_[:-1])
    x_bar_dot = x_bar_dot + bindex_bar(_2_bar_dot, x, np.s_[:-1])
    x_bar_dot = x_bar_dot + bindex_bar(_1_bar_dot, x, np.s_[1:])
    return (None, None), (None,), (x_bar_dot,)


# Kernel rosen__loss.
def rosen__loss(_1, _2, _3):
    return 100.0 * (_1 - _2 ** 2) ** 2 + (1.0 - _3) ** 2


# Kernel rosen__loss__seeded_tangent (the tangent of rosen__loss's adjoint g * drosen__loss/dp (its params' tangents, g and g_dot given)).
def rosen__loss(_1, _2, _3):
    return 100.0 * (_1 - _2 ** 2) ** 2 + (1.0 - _3) ** 2


def rosen__loss__dual(_1, _2, _3):
    _d1 = _2 ** 2
    _d2 = _1 - _d1
    _d3 = 2 * _d2
    _d4 = _d2 ** 2
    _d5 = 100.0 * _d4
    _d6 = 1.0 - _3
    _d7 = _d6 ** 2
    return (_d5 + _d7, 100.0 * _d3, 100.0 * (_d3 * -(2 * _2)), -(2 * _d6))


# the tangent of rosen__loss's adjoint g * drosen__loss/dp (its params' tangents, g and g_dot given)
def rosen__loss__seeded_tangent(_1, _2, _3, t__1, t__2, t__3, g, g_dot, q__1, q__2, q__3):
    _v, _d__1, _d__2, _d__3 = rosen__loss__dual(_1, _2, _3)
    _w = rosen__loss(q__1, q__2, q__3)
    return g * (_d__1 * t__1 + _d__2 * t__2 + _d__3 * t__3) + g_dot * _v + g * _w
