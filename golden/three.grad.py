def three_loss__grad(x, y, w):
    # Grad of: return np.sum(s2sad.broadcast(three, x, y, w))    [golden/examples.py:59:5]
    (x_bar, y_bar, w_bar) = sum_grads(three, (x, y, w), active=('x', 'y', 'w'), scale=1.0)
    return (x_bar, y_bar, w_bar)


# Kernel three: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
# from golden/examples.py:33 (three)
def three(x, y, w):
    s = x * y + w ** 2
    return math.sin(s) if s > 0 else -s


def three__dual(x, y, w):
    _d1 = x * y
    _d2 = w ** 2
    s_dot_x = y
    s_dot_y = x
    s_dot_w = 2 * w
    s = _d1 + _d2
    if s > 0:
        _d7 = math.cos(s)
        _d4 = _d7 * s_dot_x
        _d5 = _d7 * s_dot_y
        _d6 = _d7 * s_dot_w
        _d3 = math.sin(s)
    else:
        _d4 = -s_dot_x
        _d5 = -s_dot_y
        _d6 = -s_dot_w
        _d3 = -s
    return (_d3, _d4, _d5, _d6)
