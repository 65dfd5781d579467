def cbrt_loss__grad(x):
    # Grad of: return np.sum(np.cbrt(x))    [golden/examples.py:43:5]
    (x_bar,) = sum_grads(cbrt_loss__elementwise, (x,), active=('x',), scale=1.0)
    return (x_bar,)


# Kernel cbrt_loss__elementwise: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
def cbrt_loss__elementwise(x):
    return math.cbrt(x)


def cbrt_loss__elementwise__dual(x):
    _d1 = math.cbrt(x)
    return (_d1, 1.0 / (3.0 * _d1 * _d1))
