def rows_loss__grad(X):
    # Grad of: return sum(map(row_energy, X))    [golden/examples.py:254:5]
    X__rows = columns(X, ('p__0', 'p__1', 'p__2', 'p__m1'))
    (p__0_bar, p__1_bar, p__2_bar, p__m1_bar) = sum_grads(row_energy, (X__rows[0], X__rows[1], X__rows[2], X__rows[3]), active=('p__0', 'p__1', 'p__2', 'p__m1'), scale=1.0)
    X_bar = rows_gradient(X, (p__0_bar, p__1_bar, p__2_bar, p__m1_bar,), (0, 1, 2, -1), zeros_like)  # its rows' columns, read at golden/examples.py:254:16
    return (X_bar,)


# Kernel row_energy: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
# from golden/examples.py:248 (its rows taken apart)
def row_energy(p__0, p__1, p__2, p__m1):
    _t1 = p__0
    _t2 = p__1
    _t3 = p__2
    a = _t1
    b = _t2
    c = _t3
    return a ** 2 + b * math.sin(c) - p__m1


def row_energy__dual(p__0, p__1, p__2, p__m1):
    _t1_dot_p__0 = 1.0
    _t1 = p__0
    _t2_dot_p__1 = 1.0
    _t2 = p__1
    _t3_dot_p__2 = 1.0
    _t3 = p__2
    a_dot_p__0 = _t1_dot_p__0
    a = _t1
    b_dot_p__1 = _t2_dot_p__1
    b = _t2
    c_dot_p__2 = _t3_dot_p__2
    c = _t3
    _d1 = a ** 2
    _d2 = math.sin(c)
    _d3 = b * _d2
    _d4 = _d1 + _d3
    return (_d4 - p__m1, 2 * a * a_dot_p__0, _d2 * b_dot_p__1, b * (math.cos(c) * c_dot_p__2), -1.0)
