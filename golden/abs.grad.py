def abs_loss__grad(x):
    # Grad of: return np.sum(np.abs(x))    [golden/examples.py:39:5]
    (x_bar,) = sum_grads(abs_loss__elementwise, (x,), active=('x',), scale=1.0)
    return (x_bar,)


# Kernel abs_loss__elementwise: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
def abs_loss__elementwise(x):
    return abs(x)


def abs_loss__elementwise__dual(x):
    return (abs(x), 1.0 if x >= 0.0 else math.sign(x))
