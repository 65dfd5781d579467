def abs_loss__value_and_grad(x):
    # Grad of: return np.sum(np.abs(x))    [golden/examples.py:39:5]
    value, (x_bar,) = sum_dual(abs_loss__elementwise, (x,), active=('x',), scale=1.0)
    return value, (x_bar,)


# Kernel abs_loss__elementwise: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
def abs_loss__elementwise(x):
    return abs(x)


def abs_loss__elementwise__dual(x):
    return (abs(x), math.sign(x))
