"""The fusions decide on the records the sweeps wrote (passes/emitted.py), never on the
generated text: the pairing decisions pinned on records (joinable; not joinable: another
block, an operand written between, a reader of the product, a line written as text), a
record's printing equal to its rule's, and a changed printing that cannot mis-pair."""
import numpy as np
import pytest

import s2sad
from s2sad import array_prims
from s2sad.array_prims.ops import Product
from s2sad.passes import emitted, epilogues
from s2sad.passes.emitted import ProductCall, product_line, record_of
from s2sad.plans import PLANS

TOP = epilogues.TOP


def _lhs_bar(target="h_bar", ops=("G", "h", "W"), ind=TOP):
    return product_line(ind, target, ProductCall("matmul_lhs_bar", ops))


def _sums(out, g="h_bar"):
    return epilogues.fused_sums_call(out, g, "dh", "(_1, b)", TOP)


# -------------------------------------------------------------- the records themselves

def test_a_recorded_line_is_its_records_printing_and_an_edit_drops_the_record():
    line = _lhs_bar()
    assert line == "    h_bar = matmul_lhs_bar(G, h, W)"
    assert record_of(line).operands == ("G", "h", "W") and record_of(line).target == "h_bar"
    assert record_of(line.strip()) is None and record_of(line + "") is None
    assert record_of("    h_bar = matmul_lhs_bar(G, h, W)") is None       # text alone is no record
    with pytest.raises(AttributeError):
        line.record = None


@pytest.mark.parametrize("kind", emitted.RECORDED)
def test_a_records_printing_is_its_rules(kind):
    """The sweeps write these products from records: the text must be the rule's."""
    rule = array_prims.of(Product(kind))

    class St:
        op, args = Product(kind), ["A", "B"]
    args = ["A", "B"]
    assert emitted.product_call(St).text() == rule.forward(args, {})
    for i in (0, 1):
        assert emitted.product_vjp_call(St, i, "g", args).text() == rule.vjp(i, "g", args, "out", {})
        assert emitted.product_jvp_call(St, i, "t", args).text() == rule.jvp(i, "t", args, "out", {})


# -------------------------------------------------------------- epilogues (reverse)

def test_joinable_the_product_moves_to_the_sums():
    out = [_lhs_bar(), "    # Grad of: something", "    x_bar = x_bar + 1.0"]
    assert _sums(out) == "lhs_bar_sums(G, h, W, dh, (_1, b))"
    assert out == ["    # Grad of: something", "    x_bar = x_bar + 1.0"]


@pytest.mark.parametrize("between", ["    G = G + 1.0", "    (a, W) = f(x)", "    h[0] = 2.0",
                                     "    y = h_bar * 2.0", "    h_bar = h_bar + y",
                                     "    if c:\n        x = 1"])
def test_not_joinable_an_operand_written_or_the_product_read_between(between):
    out = [_lhs_bar(), between]
    assert _sums(out) is None and out == [_lhs_bar(), between]


def _rhs_bar(target="W_bar", ops=("G", "h", "W"), ind=TOP):
    return product_line(ind, target, ProductCall("matmul_rhs_bar", ops))


def _sums_rhs(out, g="h_bar"):
    rhs = []
    return epilogues.fused_sums_call(out, g, "dh", "(_1, b)", TOP, None, rhs), rhs


def test_the_products_other_adjoint_joins_the_sums():
    """`W_bar = matmul_rhs_bar(G, h, W)` after the lhs line (the sweep writes them in
    that order) moves into the call, bound last."""
    out = [_lhs_bar(), _rhs_bar(), "    x_bar = x_bar + 1.0"]
    assert _sums_rhs(out) == ("lhs_bar_sums(G, h, W, dh, (_1, b), rhs=True)", ["W_bar"])
    assert out == ["    x_bar = x_bar + 1.0"]
    out = [_lhs_bar(), _rhs_bar()]        # without the list: the line stays (as before)
    assert _sums(out) == "lhs_bar_sums(G, h, W, dh, (_1, b))" and out == [_rhs_bar()]


@pytest.mark.parametrize("lines", [
    [_rhs_bar(ops=("G", "h", "V"))],                     # another product's
    [_rhs_bar(), "    y = W_bar * 2.0"],                 # read before the sums' line
    [_rhs_bar(), "    W_bar = W_bar + y"],               # added to before it
    [_rhs_bar(ind=TOP + "    ")],                        # another block
    ["    W_bar = matmul_rhs_bar(G, h, W)"],             # text, not a record
])
def test_the_other_adjoint_stays_where_it_may_not_move(lines):
    out = [_lhs_bar()] + list(lines)
    call, rhs = _sums_rhs(out)
    assert call == "lhs_bar_sums(G, h, W, dh, (_1, b))" and rhs == [] and out == list(lines)


def test_an_other_adjoint_binding_an_operand_keeps_both_lines():
    out = [_lhs_bar(), _rhs_bar(target="h")]
    assert _sums_rhs(out) == (None, []) and out == [_lhs_bar(), _rhs_bar(target="h")]


def test_an_other_adjoint_before_the_lhs_line_stays():
    out = [_rhs_bar(), _lhs_bar()]
    assert _sums_rhs(out) == ("lhs_bar_sums(G, h, W, dh, (_1, b))", []) and out == [_rhs_bar()]


def test_not_joinable_another_block_or_helper_or_a_non_name_operand():
    for line in (_lhs_bar(ind=TOP + "    "), _lhs_bar(ops=("1.0", "h", "W")),
                 product_line(TOP, "h_bar", ProductCall("matmul_rhs_bar", ("G", "h", "W"))),
                 product_line(TOP, "h_bar", ProductCall("matmul", ("h", "W")))):
        out = [line]
        assert _sums(out) is None and out == [line]
    out = [_lhs_bar()]
    assert epilogues.fused_sums_call(out, "h_bar", "dh", "(_1, b)", TOP + "    ") is None   # sums in a loop


def test_a_line_written_as_text_is_never_joined():
    """Even when it reads exactly like the product: only the sweeps' records pair."""
    out = ["    h_bar = matmul_lhs_bar(G, h, W)"]
    assert _sums(out) is None and len(out) == 1


def test_a_changed_printing_cannot_mis_pair(monkeypatch):
    """A record printed another way still pairs with the same operands, the decision
    unchanged; the old regex over the text would have stopped matching (or matched
    something else)."""
    monkeypatch.setattr(ProductCall, "text", lambda self: f"{self.helper}(*{list(self.operands)!r})")
    line = _lhs_bar()
    assert "matmul_lhs_bar(*['G', 'h', 'W'])" in line
    out = [line, "    y = x"]
    assert _sums(out) == "lhs_bar_sums(G, h, W, dh, (_1, b))" and out == ["    y = x"]


def test_the_env_switch_keeps_the_product(monkeypatch):
    monkeypatch.setenv("S2SAD_GEMM_EPILOGUE", "0")
    out = [_lhs_bar()]
    assert _sums(out) is None and len(out) == 1


# -------------------------------------------------------------- end to end

def _layer(W1, b1, W2, X):
    h = np.tanh(X @ W1 + b1)
    return np.sum(h @ W2)


def _read_twice(W1, b1, W2, X):
    p = X @ W1
    h = np.tanh(p + b1)
    return np.sum(h @ W2) + np.sum(p)


def test_the_gradients_source_pairs_through_the_records(monkeypatch):
    """With the products printed another way the generated gradient still fuses the same
    pairs (its product lines are the records'), and a product read twice never fuses."""
    monkeypatch.setattr(ProductCall, "text", lambda self: f"{self.helper}({', '.join(self.operands)}, )")
    PLANS.clear()
    try:
        src = s2sad.source(s2sad.grad(_layer, argnums=(0, 1, 2)))
        assert "product_partials(X, W1," in src and "lhs_bar_sums(" in src
        src = s2sad.source(s2sad.grad(_read_twice, argnums=(0, 1, 2)))
        assert "product_partials(" not in src and "matmul(X, W1, )" in src
    finally:
        PLANS.clear()


def _peak(W, b, X):
    z = X @ W + b
    return np.sum(np.max(z, axis=1))


def test_the_bias_row_pairs_through_the_records(monkeypatch):
    """biasproducts: the same program fuses its bias row with the product printed another
    way (the record decides), and unfused when the product's line is plain text."""
    monkeypatch.setattr(ProductCall, "text", lambda self: f"{self.helper}({', '.join(self.operands)}, )")
    PLANS.clear()
    try:
        assert "matmul_bias(X, W, " in s2sad.source(s2sad.grad(_peak, argnums=(0, 1)))
        monkeypatch.setattr(emitted, "product_line", lambda ind, t, call: f"{ind}{t} = {call.text()}")
        monkeypatch.setattr("s2sad.passes.forward_sweep.product_line", emitted.product_line)
        PLANS.clear()
        src = s2sad.source(s2sad.grad(_peak, argnums=(0, 1)))
        assert "matmul_bias(" not in src and "matmul(X, W, )" in src
    finally:
        PLANS.clear()


def _mlp(W1, b1, W2, X):
    h = np.tanh(X @ W1 + b1)
    return np.mean((h @ W2) ** 2)


def test_products_beside_their_tangents_pair_through_the_records(monkeypatch):
    """paired_products: forward over reverse's products and their tangents (tangent_sweep,
    hvp_reverse write them as records) still join printed another way, and the product
    alone (s2sad.hvp: dead lines dropped first) keeps its records through that pass."""
    from s2sad import array_higher
    monkeypatch.setattr(ProductCall, "text", lambda self: f"{self.helper}({', '.join(self.operands)}, )")
    src = array_higher.hvp_source(_mlp, (0, 1, 2))
    assert "_1, _1_dot = both(matmul, (X, W1), (X, W1_dot))" in src
    assert "W1_bar, W1_bar_dot = both(matmul_rhs_bar, " in src
    alone = array_higher.hvp_source(_mlp, (0, 1, 2), product_only=True)
    assert "_1, _1_dot = both(matmul, (X, W1), (X, W1_dot))" in alone and "W1_bar = " not in alone



def test_not_joinable_a_second_product_binding_an_operand_between():
    """A third product (recorded too) that binds G between the pair: the pair's G is
    another value by the sums' line."""
    between = product_line(TOP, "G", ProductCall("matmul", ("A", "B")))
    out = [_lhs_bar(), between]
    assert _sums(out) is None and out == [_lhs_bar(), between]
    out = [_lhs_bar(), _lhs_bar(target="k_bar")]      # another product's adjoint: independent
    assert _sums(out) == "lhs_bar_sums(G, h, W, dh, (_1, b))" and out == [_lhs_bar(target="k_bar")]
