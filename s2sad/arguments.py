"""The user's arguments checked and converted on the way in, and gradients shaped on
the way out, for every entry point that differentiates (derivative, jvp_vjp).

Invariants: an argument s2sad would change (complex, wider than float64, not a float
where a derivative is asked for) or whose operators numpy reads otherwise (a masked
array, a np.matrix) is refused with a located NonDifferentiableInputError,
never silently converted; the common case (float64/float32 floats and ndarrays) is
checked without allocating; a gradient has its argument's shape, dtype and array
module (a float for a Python float, a cupy array for a cupy argument). `c` below is a
plan (plans.Compiled or array_compiled.ArrayCompiled): what it reads is `params` and `fun`.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import sys
import weakref
from typing import Any, Sequence

import gast
import numpy as np

from .backends.arraymodule import is_cupy
from .tree import leaves as tree_leaves
from .errors import (ArgumentError, NonDifferentiableInputError, S2SADError, ShapeError, SourceLocation,
                     UnsupportedOperationError)
from .frontend import parse_function
from .marks import derivative_mark, location_of_function
from .nested import user_function_of_caller
from .paramuses import needs
from .passes.linemap import statement_and_names_at

def argnums_tuple(argnums) -> tuple[int, ...]:
    return tuple(argnums) if isinstance(argnums, (tuple, list)) else (argnums,)


def check_argnums_spec(argnums: Any, where=None) -> None:
    """argnums as grad takes it: an int, or a tuple or list of ints (bools are not)."""
    items = argnums if isinstance(argnums, (tuple, list)) else (argnums,)
    for i in items:
        if not isinstance(i, (int, np.integer)) or isinstance(i, (bool, np.bool_)):
            raise S2SADError(f"argnums must be an int or a tuple of ints, not {argnums!r}", where,
                             hint="Name the arguments to differentiate by position: argnums=0, or argnums=(0, 2).")


def check_args(c, args: Sequence[Any], argnums: tuple[int, ...]) -> None:
    if len(args) != len(c.params):
        raise ArgumentError(f"{c.fun.__name__}() takes {len(c.params)} arguments, {len(args)} given",
                            users_location(c), hint=f"Pass one argument per parameter of {c.fun.__name__}.")
    for i in argnums:
        if not -len(args) <= i < len(args):
            raise S2SADError(f"argnums {i} is out of range for {c.fun.__name__}, which has {len(args)} arguments",
                             hint="Pick argnums among the function's positional parameters.")
        a = args[i]
        dtype = dtype_of(a)
        if dtype.kind != "f" or dtype.itemsize > 8 or isinstance(a, (bool, int, np.integer, np.bool_)):
            what = f"dtype {dtype}" if isinstance(a, np.ndarray) else f"type {type(a).__name__}"
            raise NonDifferentiableInputError(
                f"argument '{c.params[i]}' of {c.fun.__name__} has {what}; only float arguments "
                f"(float32, float64) can be differentiated",
                parse_function(c.fun).location(),
                hint=f"Pass floats (e.g. np.asarray({c.params[i]}, dtype=np.float64)), or leave "
                     f"'{c.params[i]}' out of argnums.")
    for i, a in enumerate(args):
        _check_data(c, i, a)
    check_dimensions(c, args)


def _check_data(c, i: int, a: Any) -> None:
    """Refuse an argument whose numbers s2sad would change: complex (the kernels are
    real: the imaginary part would be dropped) or wider than float64 (long double: the
    kernels compute in float64)."""
    if type(a) is float or type(a) is int:
        return
    if isinstance(a, (np.ma.MaskedArray, np.matrix)):
        _refuse_subclass(c, i, a)
    if isinstance(a, np.ndarray) and type(a) is not np.ndarray:
        _refuse_overriding_subclass(c, i, a)
    if isinstance(a, complex):
        dtype = np.dtype(complex)
    elif isinstance(a, (np.ndarray, np.generic)) or is_cupy(a):
        dtype = a.dtype
    elif isinstance(a, (list, tuple)):
        try:
            dtype = np.asarray(a).dtype
        except (TypeError, ValueError):     # ragged, or not numbers: not numeric data
            return
    else:
        return
    if dtype.kind == "c" or (dtype.kind == "f" and dtype.itemsize > 8):
        why = ("s2sad differentiates real code and would drop the imaginary part" if dtype.kind == "c" else
               "s2sad computes in float64 or float32 and would silently lose the extra precision")
        raise NonDifferentiableInputError(
            f"argument '{c.params[i]}' of {c.fun.__name__} has dtype {dtype}: {why}",
            parse_function(c.fun).location(),
            hint="Pass float64 or float32 values (e.g. np.asarray(..., dtype=np.float64))"
                 + ("; split complex numbers into their real and imaginary parts." if dtype.kind == "c" else "."))


def check_cotangent(c, shape: tuple, out_bar: Any) -> None:
    """A pullback's cotangent, as JAX takes it: of the output's shape exactly (a (1, 3) or a
    number for a (3,) output is refused: JAX refuses both, and broadcasting would hide a
    mistake), real numbers: floats of any precision, or ints (numpy reads them exactly;
    JAX refuses them); None, bool, complex (its imaginary part would be dropped) and
    objects refused."""
    if not _cotangent_fits(shape, out_bar):
        check_cotangent_of(c.fun, shape, out_bar)      # (c.fun read only to refuse: its plan may outlive it)


def _cotangent_fits(shape: tuple, out_bar: Any) -> bool:
    if is_cupy(out_bar):
        return True
    try:
        dtype = np.asarray(out_bar).dtype if out_bar is not None else None
    except (ValueError, TypeError):
        return False
    return dtype is not None and dtype.kind in "iuf" and np.shape(out_bar) == tuple(shape)


def check_cotangent_of(fun, shape: tuple, out_bar: Any) -> None:
    """check_cotangent for the pullback of fun (a located ShapeError at fun's def)."""
    if _cotangent_fits(shape, out_bar):
        return
    try:
        dtype = np.asarray(out_bar).dtype if out_bar is not None else None
    except (ValueError, TypeError):
        dtype = None
    what = "is None" if out_bar is None else f"has shape {np.shape(out_bar)}" + (
        f" and dtype {dtype}" if dtype is not None and dtype.kind not in "iuf" else "")
    want = "a float number (or a 0-d float array)" if tuple(shape) == () else \
        f"a float array of shape {tuple(shape)} (np.ones_like(out) pulls back the sum of its elements)"
    raise ShapeError(f"the cotangent given to the pullback of {getattr(fun, '__name__', fun)} {what}; the output "
                     f"it pulls back has shape {tuple(shape)}", parse_function(fun).location(),
                     hint=f"Pass {want}, as JAX requires: a cotangent has its output's shape and real numbers.")


def users_location(c):
    """Where plan `c`'s function starts: the user's function for a caller s2sad generated
    for a derivative (nested.py), whose own file is no file the user has."""
    user = user_function_of_caller(c.fun)
    return location_of_function(user) if user is not None else parse_function(c.fun).location()


def check_tangents(c, tangents: Sequence[Any]) -> None:
    """jvp's tangents: real numbers (a bool, int or float array, a number) or None (none
    given); a complex tangent would lose its imaginary part in the float kernels (a
    wrong directional derivative), a string or an object has no numbers."""
    for i, t in enumerate(tangents):
        if t is None or type(t) is float or (type(t) is np.ndarray and t.dtype.kind in "biuf"):
            continue
        try:
            dtype = t.dtype if is_cupy(t) else np.asarray(t).dtype
        except (TypeError, ValueError):      # ragged
            dtype = np.dtype(object)
        if dtype.kind in "biuf" and dtype.itemsize <= 8:
            continue
        name = c.params[i] if i < len(c.params) else str(i)
        why = ("a complex tangent would lose its imaginary part" if dtype.kind == "c" else
               "it is no real number" if dtype.kind != "f" else "s2sad computes in float64 or float32")
        raise NonDifferentiableInputError(
            f"the tangent given for argument '{name}' of {c.fun.__qualname__} has {type(t).__name__} {dtype}: {why}",
            users_location(c),
            hint="Pass real tangents of their primals' shapes (np.asarray(v, dtype=np.float64)); for a complex "
                 "direction take the real and imaginary parts as two jvps.")


# what a subclass may define without changing the numbers numpy computes on it
_HARMLESS = frozenset({"__new__", "__init__", "__array_finalize__", "__module__", "__qualname__", "__doc__",
                       "__dict__", "__weakref__", "__slots__", "__annotations__", "__reduce__", "__reduce_ex__",
                       "__setstate__", "__repr__", "__str__", "__format__", "__init_subclass__",
                       "__class_getitem__", "__firstlineno__", "__static_attributes__", "__orig_bases__",
                       "__parameters__"})


def overridden(cls: type) -> str | None:
    """The first name of ndarray's that subclass `cls` (or a class between it and ndarray)
    defines again, other than the harmless ones (construction, pickling, printing), or
    None. np.memmap's own definitions are numpy's (they keep its values)."""
    for k in cls.__mro__:
        if k is np.ndarray or k is np.memmap or not issubclass(k, np.ndarray):
            continue
        for name in k.__dict__:
            if name not in _HARMLESS and hasattr(np.ndarray, name):
                return name
    return None


def _refuse_overriding_subclass(c, i: int, a: Any) -> None:
    """An ndarray subclass that overrides what numpy does (`__array_ufunc__`,
    `__getitem__`, an operator): the function run by numpy on it computes what the
    subclass says, s2sad's plan computes numpy's: another function's value and gradient."""
    name = overridden(type(a))
    if name is None:
        return
    raise NonDifferentiableInputError(
        f"argument '{c.params[i]}' of {c.fun.__name__} is a {type(a).__name__}, an ndarray subclass that "
        f"defines {name}: numpy computes what it says on it, s2sad computes numpy's plain arithmetic and would "
        f"differentiate another function", parse_function(c.fun).location(),
        hint=f"Pass np.asarray({c.params[i]}) (the values as a plain array), and write in the function what "
             f"{type(a).__name__}.{name} does.")


def _refuse_subclass(c, i: int, a: Any) -> None:
    """A masked array or a np.matrix: numpy gives its operators other meanings (masked
    elements left out of sums, `*` and `**` as matrix products), which s2sad's array
    programs do not follow: its value and gradient would be another function's."""
    masked = isinstance(a, np.ma.MaskedArray)
    what = ("a masked array (numpy leaves its masked elements out of sums and means)" if masked else
            "a np.matrix (numpy reads * and ** on it as matrix products)")
    raise NonDifferentiableInputError(
        f"argument '{c.params[i]}' of {c.fun.__name__} is {what}; s2sad differentiates plain arrays and would "
        f"compute another function", parse_function(c.fun).location(),
        hint=(f"Pass the values to use: {c.params[i]}.filled(0.0) for a sum without the masked elements, or "
              f"pass the mask as an array of its own and use np.where(mask, 0.0, x)." if masked else
              f"Pass np.asarray({c.params[i]}) and write matrix products with @."))


def check_call(c, args: Sequence[Any], argnums: tuple[int, ...]) -> None:
    """`check_args` for a compiled derivative's call: the common case (float64/float32
    or float ndarray arguments, as many as the function takes) is checked here, quickly;
    anything else in full."""
    for i in argnums:
        a = args[i] if i < len(args) else None
        if not (type(a) is float or (type(a) is np.ndarray and a.dtype.kind == "f" and a.dtype.itemsize <= 8)):
            check_args(c, args, argnums)
            return
    if len(args) != len(c.params):
        check_args(c, args, argnums)
        return
    if len(args) > len(argnums):    # data arguments: nothing complex or long double
        for i, a in enumerate(args):
            if type(a) is not float:
                _check_data(c, i, a)
    for a in args:
        if type(a) is float or (type(a) is np.ndarray and not a.ndim) or isinstance(a, np.generic):
            check_dimensions(c, args)
            return


# plan -> ((position, parameter, its first use that needs an array), ...) (paramuses)
_ARRAY_PARAMS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def array_params(c) -> tuple:
    """((position, parameter, location of its use, what the use does, the fewest
    dimensions it needs), ...) for the parameters plan `c`'s function needs to be
    arrays (paramuses.array_uses)."""
    got = _ARRAY_PARAMS.get(c)
    if got is None:
        uses = needs(parse_function(c.fun))
        got = tuple((i, p, uses[p].where, uses[p].what, uses[p].ndim)
                    for i, p in enumerate(c.params) if p in uses)
        _ARRAY_PARAMS[c] = got
    return got


def check_dimensions(c, args: Sequence[Any]) -> None:
    """Refuse a number (a float, a numpy scalar, a 0-d array) given for a parameter the
    function indexes, measures or loops over (paramuses): the function itself would
    raise there."""
    for i, p, where, what, ndim in array_params(c):
        a = args[i] if i < len(args) else None
        if type(a) in (float, int) or (ndim and (isinstance(a, (float, np.generic))
                                                 or (isinstance(a, np.ndarray) and a.ndim == 0))):
            kind = "a 0-d array" if isinstance(a, np.ndarray) else f"a number ({type(a).__name__})"
            raise ShapeError(
                f"argument '{p}' of {c.fun.__name__} is {kind}, but {c.fun.__name__} {what} here, as an array's: "
                f"a number has no items, length or dimensions",
                where, hint=f"Pass an array of at least one dimension for '{p}' (e.g. np.atleast_1d({p})), "
                            f"or write {c.fun.__name__} for a number.")


def _array_like(a: Any) -> bool:
    """An object numpy converts through `__array__` (not an array, number, list or cupy array)."""
    return (hasattr(type(a), "__array__") and not isinstance(a, (np.ndarray, np.generic))
            and not is_cupy(a))


def converted(args: Sequence[Any], positions) -> tuple:
    """`args` with each array-like object (one with `__array__`, not an ndarray) at
    `positions` converted once, up front, by np.asarray: its gradient is an ndarray of
    the converted array's shape and dtype."""
    n = len(args)
    for i in positions:   # the common case, floats and ndarrays, quickly
        a = args[i] if -n <= i < n else None
        if type(a) is not np.ndarray and type(a) is not float and _array_like(a):
            break
    else:
        return args
    out = list(args)
    for i in positions:
        if -len(args) <= i < len(args) and _array_like(out[i]):
            out[i] = np.asarray(out[i])
    return tuple(out)


def dtype_of(a: Any) -> np.dtype:
    """The dtype of a numpy or cupy array, or of what numpy makes of a Python value."""
    if is_cupy(a):
        return a.dtype
    return np.asarray(a).dtype


def as_result(g: np.ndarray, like: Any):
    """A gradient shaped and typed like its argument (a float for a Python float; on
    the device for a cupy argument)."""
    if type(like) is np.ndarray:
        if type(g) is np.ndarray and g.dtype == like.dtype and g.shape == like.shape:
            return g
        return np.asarray(g, dtype=like.dtype).reshape(like.shape)
    if is_cupy(like):
        xp = sys.modules["cupy"]
        return xp.asarray(g, dtype=like.dtype).reshape(like.shape)
    if isinstance(like, np.ndarray):
        return np.asarray(g, dtype=like.dtype).reshape(like.shape)
    if isinstance(like, (list, tuple)):
        return np.asarray(g, dtype=float).reshape(np.shape(like))
    if isinstance(like, np.floating):
        return type(like)(np.asarray(g).item())
    return float(np.asarray(g).item())





def value_like_arguments(v: Any, args: Sequence[Any]) -> Any:
    """value_and_grad's value in its loss's dtype, as JAX gives a 0-d array of it: a
    float32 loss (every float array or numpy float among the arguments, containers'
    leaves included, float32; Python floats do not count, as in numpy) gives
    np.float32, any other a Python float (float64: np.float64 is one). Where a float32
    loss reads a float64 global, numpy would give float64: s2sad gives float32 (JAX's
    reading). v: what as_value gives (a float, an int for a count)."""
    if type(v) is not float:
        return v
    f32 = _float32_only(args)
    return np.float32(v) if f32 else v


def tangent_like(out: Any, t: Any) -> Any:
    """A tangent in its output's dtype where the two differ by byte order alone (as JAX's
    tangents have their primal output's dtype): grad keeps its argument's '>f4', and
    jvp(grad) and hvp gave the product native (tuples element by element)."""
    if type(out) is tuple and type(t) is tuple and len(out) == len(t):
        return tuple(tangent_like(o, u) for o, u in zip(out, t))
    if type(out) is np.ndarray and type(t) is np.ndarray and out.dtype != t.dtype and out.shape == t.shape \
            and out.dtype.newbyteorder("=") == t.dtype.newbyteorder("="):
        return t.astype(out.dtype)
    return t


def primals_at(primals: Sequence[Any], spec) -> Any:
    """The primals a grad's `spec` (an index or a tuple of them) differentiates, as its
    result is shaped (None for an index out of range): what its tangents look like."""
    def at(i):
        return primals[i] if isinstance(i, int) and -len(primals) <= i < len(primals) else None
    return tuple(at(i) for i in spec) if isinstance(spec, (tuple, list)) else at(spec)


def _float32_only(args) -> bool | None:
    """True when the float arrays (numpy floats) among args are all float32 and there is
    one; False when one is another float; None when there is none."""
    seen = None
    for a in args:
        t = type(a)
        if t is float or t is int or a is None:
            continue
        if t is np.ndarray or isinstance(a, np.generic) or (hasattr(a, "dtype") and hasattr(a, "shape")):
            kind = a.dtype.kind     # (a numpy array or float; a dask or cupy array)
            if kind == "f":
                if a.dtype.itemsize != 4:      # (float32 in either byte order)
                    return False
                seen = True
            continue
        if isinstance(a, (dict, list, tuple)) or dataclasses.is_dataclass(a):
            inner = _float32_only(tree_leaves(a))
            if inner is False:
                return False
            seen = seen or inner
    return seen


def as_value(v):
    """A loss as a Python number (a float, or an int for a count), whatever computed it:
    a kernel's sum (a float, or smath.Real, whose arithmetic never raises), numpy's
    (np.float64, np.int64) or the unrolled entry's (a float). Every path gives the same
    type for the same call."""
    t = type(v)
    if t is float or t is int or t is bool:
        return v
    if isinstance(v, float):        # (np.float64, smath.Real: a float as Python's)
        return float(v)
    a = np.asarray(v)
    if a.size == 1:
        return a.reshape(()).item()
    return v



def zeros_like(a):
    xp = sys.modules["cupy"] if is_cupy(a) else np
    a = xp.asarray(a)
    return xp.zeros(a.shape, a.dtype if a.dtype.kind == "f" else np.float64)




# what numpy's messages say when an operation refuses the shapes it is given (operands
# that do not broadcast, a product's inner dimensions, a reshape, a join, an index past
# the end): the words that tell a shape error from any other ValueError or IndexError
SHAPE_WORDS = ("broadcast", "core dimension", "reshape", "aligned", "dimension", "out of bounds", "shape",
               "zero-size array")     # (a max or min along an empty axis: numpy has no identity)


def shape_refusal(fun: Any, error: Exception) -> ShapeError | None:
    """numpy's ValueError / IndexError for a shape, raised while fun's generated
    derivative ran on the user's arrays (`A @ x` with a global A of another width), as a
    ShapeError located at the user's statement whose generated lines refused it
    (linemap; at fun's def where no located program ran) that keeps numpy's message (a
    kernel's unlocated ShapeError likewise); None for any other error (the caller
    re-raises it as it is)."""
    mark = derivative_mark(fun)         # (jvp of a grad: the user's function under it)
    fn = mark.innermost() if mark is not None else user_function_of_caller(fun) or fun
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "the function")
    statement, temporaries = statement_and_names_at(error.__traceback__)
    if isinstance(error, AttributeError):
        return number_method_refusal(error, statement, temporaries)
    where = statement or location_of_function(fn)
    if isinstance(error, (ShapeError, NonDifferentiableInputError)) and error.location is None:
        # a kernel's (operands that do not broadcast, or are no numbers): located at its statement
        # (run with no generated program around it: the function's one fused kernel, its return)
        where = statement or only_return(fn) or where
        return type(error)(f"{users_names(error.message, temporaries)} (while differentiating {name})", where,
                           hint=error.hint)
    if isinstance(error, S2SADError) or not any(w in str(error) for w in SHAPE_WORDS):
        return None
    return ShapeError(f"numpy refused a shape while differentiating {name} at these arguments: {error}",
                      where,
                      hint=f"Check the shapes of {name}'s arguments and of the arrays it reads (globals, "
                           f"closures). If {name} itself runs on these arguments, the error is s2sad's: please "
                           f"report it with this message.")


_NUMBER_METHOD = re.compile(r"'float' object has no attribute '(\w+)'")


def number_method_refusal(error: AttributeError, statement, temporaries: dict) -> S2SADError | None:
    """An array method (`.reshape`, `.astype`) that the generated program called on a
    value s2sad computes as a Python float (a kernel's sum, where numpy gives a numpy
    scalar), as a located UnsupportedOperationError at the user's statement; None for
    any other AttributeError (re-raised as it is)."""
    found = _NUMBER_METHOD.fullmatch(str(error))
    if found is None or statement is None:
        return None
    method = found.group(1)
    return UnsupportedOperationError(
        f"'.{method}' is called on a value s2sad computes as a Python number (a sum or another "
        f"reduction to one element), which has no '.{method}'",
        statement,
        hint=f"Call numpy's function instead of the method (np.{method}(value, ...)): it takes numbers and "
             f"arrays alike.")


def only_return(fn: Any) -> SourceLocation | None:
    """The location of fn's one return statement (None: not one, or no source)."""
    try:
        pf = parse_function(fn)
    except S2SADError:
        return None
    returns = [n for n in gast.walk(pf.node) if isinstance(n, gast.Return)]
    return pf.location(returns[0]) if len(returns) == 1 else None


def users_names(message: str, temporaries: dict[str, str]) -> str:
    """A kernel's message naming its operands (`(_1: (3,), y: (4,))`) with the user's
    expression for each temporary (`(x @ A: (3,), y: (4,))`)."""
    for temp, text in temporaries.items():
        message = message.replace(f"({temp}: ", f"({text}: ").replace(f", {temp}: ", f", {text}: ")
    return message


def check_one_tangent_per_primal(fun: Any, primals: Sequence[Any], tangents: Sequence[Any],
                                 cls: type = S2SADError) -> None:
    """jvp's and hvp's tangents: one per primal (also for the arguments not
    differentiated), else `cls` located at the user's function under fun."""
    if len(primals) == len(tangents):
        return
    mark = derivative_mark(fun)
    fn = mark.innermost() if mark is not None else user_function_of_caller(fun) or fun
    raise cls(f"{len(primals)} primal(s) and {len(tangents)} tangent(s): jvp and hvp need one tangent per primal",
              location_of_function(fn),
              hint="Pass tangents of the same structure as the primals, one for every argument (zeros for "
                   "those you do not move along), e.g. s2sad.hvp(f, (x, y), (v, np.zeros_like(y)), argnums=0).")


# what a derivative's run may raise for the user's shapes, or for an array method called
# on what s2sad computes as a number (reraise_located takes them)
SHAPE_ERRORS = (ValueError, IndexError, ShapeError, AttributeError, NonDifferentiableInputError)


def reraise_located(fun: Any, error: Exception):
    """Raise `error` (caught as one of SHAPE_ERRORS while fun's derivative ran) as
    shape_refusal locates it, chained, or as it was."""
    refused = shape_refusal(fun, error)
    if refused is None:
        raise error
    raise refused from error


def shapes_located(entry):
    """`entry(fun, ...)` (jvp, vjp) with numpy's shape errors located at fun."""
    @functools.wraps(entry)
    def run(fun, *args, **kwargs):
        try:
            return entry(fun, *args, **kwargs)
        except SHAPE_ERRORS as e:
            reraise_located(fun, e)
    return run


def pullback_shapes_located(fun, pullback):
    """A pullback of fun whose numpy shape errors (a cotangent numpy refuses deep in the
    adjoint program) are located at fun, as shapes_located does for its entry."""
    def located(out_bar):
        try:
            return pullback(out_bar)
        except SHAPE_ERRORS as e:
            reraise_located(fun, e)
    return located
