def newton_loss__grad(a):
    # Grad of: return sum(map(newton_sqrt, a))    [golden/examples.py:55:5]
    (a_bar,) = sum_grads(newton_sqrt, (a,), active=('a',), scale=1.0)
    return (a_bar,)


# Kernel newton_sqrt: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
# from golden/examples.py:26 (newton_sqrt)
def newton_sqrt(a):
    x = 1.0
    for i in range(0, 10, 1):
        x = 0.5 * (x + a / x)
    return x


def newton_sqrt__dual(a):
    x_dot = 0.0
    x = 1.0
    for i in range(0, 10, 1):
        _d1 = a / x
        _d2 = x + _d1
        x_dot = 0.5 * (x_dot + (1.0 / x - _d1 * (1.0 / x) * x_dot))
        x = 0.5 * _d2
    return (x, x_dot)
