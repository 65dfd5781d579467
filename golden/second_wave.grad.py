def grad_of_wave__grad(z):
    # Grad of: return derivative(z)    [<s2sad: derivative s2sad.grad(wave)>:2:5]
    check_scalar_loss(z)
    (z_bar,) = sum_grads(wave__d_z, (z,), active=('z',), scale=1.0)
    return (z_bar,)


# Kernel wave__d_z: the loss's elementwise part, fused with its reduction.
# Its dual returns the value and one partial per active argument.
# from golden/examples.py:230 (wave)
def wave(z):
    return math.sin(z) * z ** 3


# forward mode (a dual) made for s2sad.grad(wave)
def wave__dual(z):
    _d1 = math.sin(z)
    _d2 = z ** 3
    return (_d1 * _d2, _d2 * math.cos(z) + _d1 * (3 * z ** 2.0))


# d wave / d z: s2sad.grad(wave), its forward dual selecting the partial
def wave__d_z(z):
    wave_value, dwave_dz = wave__dual(z)
    return dwave_dz


def wave__dual__dual(z):
    _d1_dot = math.cos(z)
    _d1 = math.sin(z)
    _d2_dot = 3 * z ** 2.0
    _d2 = z ** 3
    _d3 = math.cos(z)
    _d4 = _d2 * _d3
    _d5 = z ** 2.0
    _d6 = 3 * _d5
    _d7 = _d1 * _d6
    return (_d1 * _d2, _d4 + _d7, _d2 * _d1_dot + _d1 * _d2_dot, _d3 * _d2_dot + _d2 * -math.sin(z) + (_d6 * _d1_dot + _d1 * (3 * (2.0 * z))))


def wave__d_z__dual(z):
    _d1, _d2, d_d1_dz, d_d2_dz = wave__dual__dual(z)
    wave_value_dot = d_d1_dz
    wave_value = _d1
    dwave_dz_dot = d_d2_dz
    dwave_dz = _d2
    return (dwave_dz, dwave_dz_dot)
