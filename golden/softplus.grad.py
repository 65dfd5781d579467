def softplus_loss__grad(x):
    # Grad of: return np.sum(s2sad.broadcast(softplus, x))    [golden/examples.py:51:5]
    (x_bar,) = sum_grads(softplus, (x,), active=('z',), scale=1.0)
    return (x_bar,)


# Kernel softplus: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
# from golden/examples.py:17 (softplus)
def softplus(z):
    if z > 20.0:
        return z
    elif z < -20.0:
        return math.exp(z)
    else:
        return math.log1p(math.exp(z))


def softplus__dual(z):
    if z > 20.0:
        return (z, 1.0)
    elif z < -20.0:
        _d1 = math.exp(z)
        return (_d1, _d1)
    else:
        _d2 = math.exp(z)
        return (math.log1p(_d2), 1.0 / (1.0 + _d2) * _d2)
