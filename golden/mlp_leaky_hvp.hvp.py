def mlp_loss__hvp(W1, b1, W2, X, y, W1_dot, b1_dot, W2_dot):
    # Tangent of the gradient of: return np.mean((out - y) ** 2)    [golden/examples.py:160:5]
    # h = s2sad.broadcast(leaky_relu, X @ W1 + b1)
    _1, _1_dot = both(matmul, (X, W1), (X, W1_dot))
    # out = h @ W2
    # out and its tangent in one pass of h's kernel's rows form; h and its tangent are not formed (None) where W2 is one column
    out, out_dot, h_values = kernel_matmul_jvp(mlp_loss__h, mlp_loss__h__rows_tangent, (_1, b1), ('_1', 'b1'), (_1_dot, b1_dot), W2, W2_dot)
    # return np.mean((out - y) ** 2)
    loss = sum_dual(mlp_loss__loss, (out, y), active=(), scale=1.0 / broadcast_size(out, y))[0]
    loss_dot = sum_dual(mlp_loss__loss__tangent, (out, y, out_dot), active=(), scale=1.0 / broadcast_size(out, y))[0]
    # reverse sweep, each adjoint with its tangent
    loss_bar, loss_bar_dot = 1.0, 0.0
    # Grad of: return np.mean((out - y) ** 2)    [golden/examples.py:160:5]
    (_out_g_dot, _out_g) = sum_grads(mlp_loss__loss__seeded_tangent, (out, y, out_dot, loss_bar * (1.0 / broadcast_size(out, y)), loss_bar_dot * (1.0 / broadcast_size(out, y)), out), ('out', 'q_out'))
    out_bar = unbroadcast(_out_g, out)
    out_bar_dot = unbroadcast(_out_g_dot, out)
    # Grad of: out = h @ W2    [golden/examples.py:159:5]
    # h_bar and its tangent only seed the pullback of h's kernel: outer products stay factors; _W2_g_dot is summed in that pullback's pass
    h_bar, h_bar_dot, _W2_g, _W2_g_dot = kernel_matmul_hvp_bars(mlp_loss__h, mlp_loss__h__pair_tangent, (_1, b1), (_1_dot, b1_dot), W2, W2_dot, True, out_bar, out_bar_dot, h_values, True)
    # Grad of: h = s2sad.broadcast(leaky_relu, X @ W1 + b1)    [golden/examples.py:158:5]
    (__1_g_dot, _b1_g_dot, __1_g, _b1_g, _W2_g_dot_sums) = sum_grads(mlp_loss__h__seeded_sums_tangent, (_1, b1, _1_dot, b1_dot, *seed_factors(h_bar), *seed_factors(h_bar_dot[0]), *seed_factors(h_bar_dot[1]), *column_sum_seeds(_W2_g_dot), _1, b1), ('_1', 'b1', 'q__1', 'q_b1', 'c_sum'))
    _1_bar = unbroadcast(__1_g, _1)
    _1_bar_dot = unbroadcast(__1_g_dot, _1)
    b1_bar = unbroadcast(_b1_g, b1)
    b1_bar_dot = unbroadcast(_b1_g_dot, b1)
    _W2_g_dot = column_sums(_W2_g_dot, _W2_g_dot_sums)
    W2_bar = _W2_g
    W2_bar_dot = _W2_g_dot
    W1_bar, W1_bar_dot = both(matmul_rhs_bar, (_1_bar, X, W1), (_1_bar_dot, X, W1))
    return (loss, loss_dot), (W1_bar, b1_bar, W2_bar), (W1_bar_dot, b1_bar_dot, W2_bar_dot)


# Kernel mlp_loss__h.
# from golden/examples.py:153 (leaky_relu)
def leaky_relu(z):
    return z if z > 0 else 0.01 * z


def mlp_loss__h(_1, b1):
    return leaky_relu(_1 + b1)


# Kernel mlp_loss__loss.
def mlp_loss__loss(out, y):
    return (out - y) ** 2


# Kernel mlp_loss__h__rows_tangent (a * g * mlp_loss__h + a_dot * (g * mlp_loss__h's tangent + g_dot * mlp_loss__h) (hvp_columns' product and its tangent, one pass)).
# from golden/examples.py:153 (leaky_relu)
def leaky_relu(z):
    return z if z > 0 else 0.01 * z


def mlp_loss__h(_1, b1):
    return leaky_relu(_1 + b1)


def leaky_relu__dual(z):
    if z > 0:
        _d2 = 1.0
        _d1 = z
    else:
        _d2 = 0.01
        _d1 = 0.01 * z
    return (_d1, _d2)


def mlp_loss__h__dual(_1, b1):
    _d1 = _1 + b1
    _d2, d_d2_dz = leaky_relu__dual(_d1)
    return (_d2, d_d2_dz, d_d2_dz)


# a * g * mlp_loss__h + a_dot * (g * mlp_loss__h's tangent + g_dot * mlp_loss__h) (hvp_columns' product and its tangent, one pass)
def mlp_loss__h__rows_tangent(_1, b1, t__1, t_b1, g, g_dot, a, a_dot):
    _v, _d__1, _d_b1 = mlp_loss__h__dual(_1, b1)
    return a * (g * _v) + a_dot * (g * (_d__1 * t__1 + _d_b1 * t_b1) + g_dot * _v)


# Kernel mlp_loss__loss__tangent (the tangent of mlp_loss__loss along its active params' tangents).
def mlp_loss__loss(out, y):
    return (out - y) ** 2


def mlp_loss__loss__dual_out(out, y):
    _d1 = out - y
    return (_d1 ** 2, 2 * _d1)


# the tangent of mlp_loss__loss along its active params' tangents
def mlp_loss__loss__tangent(out, y, t_out):
    _v, _d_out = mlp_loss__loss__dual_out(out, y)
    return _d_out * t_out


# Kernel mlp_loss__loss__seeded_tangent (the tangent of mlp_loss__loss's adjoint g * dmlp_loss__loss/dp (its params' tangents, g and g_dot given)).
def mlp_loss__loss(out, y):
    return (out - y) ** 2


def mlp_loss__loss__dual_out(out, y):
    _d1 = out - y
    return (_d1 ** 2, 2 * _d1)


# the tangent of mlp_loss__loss's adjoint g * dmlp_loss__loss/dp (its params' tangents, g and g_dot given)
def mlp_loss__loss__seeded_tangent(out, y, t_out, g, g_dot, q_out):
    _v, _d_out = mlp_loss__loss__dual_out(out, y)
    _w = mlp_loss__loss(q_out, y)
    return g * (_d_out * t_out) + g_dot * _v + g * _w


# Kernel mlp_loss__h__pair_tangent (g * mlp_loss__h's tangent + g_dot * mlp_loss__h (hvp_columns' products)).
# from golden/examples.py:153 (leaky_relu)
def leaky_relu(z):
    return z if z > 0 else 0.01 * z


def mlp_loss__h(_1, b1):
    return leaky_relu(_1 + b1)


def leaky_relu__dual(z):
    if z > 0:
        _d2 = 1.0
        _d1 = z
    else:
        _d2 = 0.01
        _d1 = 0.01 * z
    return (_d1, _d2)


def mlp_loss__h__dual(_1, b1):
    _d1 = _1 + b1
    _d2, d_d2_dz = leaky_relu__dual(_d1)
    return (_d2, d_d2_dz, d_d2_dz)


# g * mlp_loss__h's tangent + g_dot * mlp_loss__h (hvp_columns' products)
def mlp_loss__h__pair_tangent(_1, b1, t__1, t_b1, g, g_dot):
    _v, _d__1, _d_b1 = mlp_loss__h__dual(_1, b1)
    return g * (_d__1 * t__1 + _d_b1 * t_b1) + g_dot * _v


# Kernel mlp_loss__h__seeded_sums_tangent (the tangent of mlp_loss__h's adjoint g * dmlp_loss__h/dp (its params' tangents, g and g_dot given; c * (u * its tangent + u_dot * it): column sums by c)).
# from golden/examples.py:153 (leaky_relu)
def leaky_relu(z):
    return z if z > 0 else 0.01 * z


def mlp_loss__h(_1, b1):
    return leaky_relu(_1 + b1)


def leaky_relu__dual(z):
    if z > 0:
        _d2 = 1.0
        _d1 = z
    else:
        _d2 = 0.01
        _d1 = 0.01 * z
    return (_d1, _d2)


def mlp_loss__h__dual(_1, b1):
    _d1 = _1 + b1
    _d2, d_d2_dz = leaky_relu__dual(_d1)
    return (_d2, d_d2_dz, d_d2_dz)


# the tangent of mlp_loss__h's adjoint g * dmlp_loss__h/dp (its params' tangents, g and g_dot given; c * (u * its tangent + u_dot * it): column sums by c)
def mlp_loss__h__seeded_sums_tangent(_1, b1, t__1, t_b1, g_l, g_r, g_dot0_l, g_dot0_r, g_dot1_l, g_dot1_r, c_sum, u, u_dot, q__1, q_b1):
    _v, _d__1, _d_b1 = mlp_loss__h__dual(_1, b1)
    _w = mlp_loss__h(q__1, q_b1)
    return g_l * g_r * (_d__1 * t__1 + _d_b1 * t_b1) + (g_dot0_l * g_dot0_r + g_dot1_l * g_dot1_r) * _v + g_l * g_r * _w + c_sum * (u * (_d__1 * t__1 + _d_b1 * t_b1) + u_dot * _v)
