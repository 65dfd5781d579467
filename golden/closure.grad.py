def closure_loss__grad(x, y):
    # Grad of: return np.sum(s2sad.broadcast(lambda z: z ** 2 + y[0], x))    [golden/examples.py:63:5]
    (x_bar, y_0_bar) = sum_grads(lambda_63, (x, y[0]), active=('z', 'y_0'), scale=1.0)
    y_bar = zeros_like(y)
    y_bar[0] += y_0_bar  # captured at golden/examples.py:63:54
    return (x_bar, y_bar)


# Kernel lambda_63: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
# local function at golden/examples.py:63
def lambda_63(z, y_0):
    return z ** 2 + y_0


def lambda_63__dual(z, y_0):
    _d1 = z ** 2
    return (_d1 + y_0, 2 * z, 1.0)
