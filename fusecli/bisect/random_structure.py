"""Random op families that change shapes: reductions, shape ops, resize, matmul, hints.

Builders as in ``random_ops``: each returns the new ``Node`` with its concrete sizes, or None
when nothing in the pool fits.
"""

from __future__ import annotations

from fusecli.bisect.random_ops import Draw, Node
from fusecli.frontend import DataType


def reduction(draw: Draw) -> Node | None:
    rng = draw.rng
    x = draw.pick(lambda n: n.sizes and n.kind != "bool")
    if x is None:
        return None
    rank = len(x.sizes)
    dims = sorted(rng.sample(range(rank), rng.randint(1, min(rank, 2))))
    keepdim = rng.random() < 0.5
    empty_reduction = any(x.sizes[d] == 0 for d in dims)
    choices = ["sum", "sum", "prod"]
    if not empty_reduction:  # eager torch has no identity for max/min over nothing
        choices += ["max", "min"]
    if x.kind == "float" and x.dtype is not DataType.Half:
        choices += ["var"]
    if x.dtype in (DataType.Float, DataType.Double):  # nvFuser's var_mean refuses half types
        choices += ["var_mean"]
    op = rng.choice(choices)
    if keepdim:
        sizes = tuple(1 if d in dims else s for d, s in enumerate(x.sizes))
    else:
        sizes = tuple(s for d, s in enumerate(x.sizes) if d not in dims)
    if op in ("var", "var_mean"):
        correction = rng.choice((0, 1))
        result = draw.call(op, x.tensor, dims, correction=correction, keepdim=keepdim)
        if op == "var_mean":
            variance, mean = result
            draw.pool.append(Node(mean, sizes, False))
            result = variance
        return Node(result, sizes, False)
    if op == "prod" and x.kind == "float":  # a product of many values under- or overflows
        x = Node(draw.call("sigmoid", x.tensor), x.sizes, False)
    if op == "prod" and x.kind == "int":
        x = Node(draw.call("sign", x.tensor), x.sizes, True)
    if op == "sum" and rng.random() < 0.3:  # an explicit accumulation dtype
        target = rng.choice((DataType.Float, DataType.Double, DataType.BFloat16))
        result = draw.call(op, x.tensor, dims=dims, keepdim=keepdim, dtype=target)
        return Node(result, sizes, False)
    result = draw.call(op, x.tensor, dims=dims, keepdim=keepdim)
    exact = x.exact and (op in ("max", "min") or x.kind == "int")
    return Node(result, sizes, exact)


def broadcast_in_dim(draw: Draw) -> Node | None:
    rng = draw.rng
    x = draw.pick(lambda n: len(n.sizes) < 5)
    if x is None:
        return None
    position = rng.randint(0, len(x.sizes))
    new_size = rng.choice((1, 1, 2, 3))
    sizes = x.sizes[:position] + (new_size,) + x.sizes[position:]
    dims = [d if d < position else d + 1 for d in range(len(x.sizes))]
    return Node(draw.call("broadcast_in_dim", x.tensor, list(sizes), dims), sizes, x.exact)


def broadcast(draw: Draw) -> Node | None:
    """fd.ops.broadcast: new size-1 broadcast dims where ``is_broadcast_dim`` is True."""
    x = draw.pick(lambda n: len(n.sizes) < 5)
    if x is None:
        return None
    flags = [False] * len(x.sizes)
    for _ in range(draw.rng.randint(1, 5 - len(x.sizes))):
        flags.insert(draw.rng.randint(0, len(flags)), True)
    sizes, rest = [], iter(x.sizes)
    for flag in flags:
        sizes.append(1 if flag else next(rest))
    return Node(draw.call("broadcast", x.tensor, flags), tuple(sizes), x.exact)


def expand(draw: Draw) -> Node | None:
    x = draw.pick(lambda n: any(b and s == 1 for s, b in zip(n.sizes, n.broadcast)))
    if x is None:
        return None
    sizes = tuple(
        draw.rng.choice((1, 2, 4)) if b and s == 1 else s for s, b in zip(x.sizes, x.broadcast)
    )
    return Node(draw.call("expand", x.tensor, list(sizes)), sizes, x.exact)


def reshape(draw: Draw) -> Node | None:
    rng = draw.rng
    x = draw.pick(lambda n: len(n.sizes) >= 1)
    if x is None:
        return None
    sizes = list(x.sizes)
    if len(sizes) >= 2 and rng.random() < 0.5:  # merge two adjacent dims
        at = rng.randrange(len(sizes) - 1)
        sizes[at:at + 2] = [sizes[at] * sizes[at + 1]]
    elif len(sizes) < 5:  # split a dim into two factors (or add a 1)
        at = rng.randrange(len(sizes))
        size = sizes[at]
        factors = [f for f in range(1, size + 1) if size % f == 0] or [1]
        first = rng.choice(factors)
        sizes[at:at + 1] = [first, size // first if first else 0]
    else:
        sizes = [x.numel]
    new_shape = list(sizes)
    if x.numel > 0 and rng.random() < 0.4:
        new_shape[rng.randrange(len(new_shape))] = -1
    return Node(draw.call("reshape", x.tensor, new_shape), tuple(sizes), x.exact)


def permute(draw: Draw) -> Node | None:
    x = draw.pick(lambda n: len(n.sizes) >= 2)
    if x is None:
        return None
    order = list(range(len(x.sizes)))
    draw.rng.shuffle(order)
    sizes = tuple(x.sizes[d] for d in order)
    return Node(draw.call("permute", x.tensor, order), sizes, x.exact)


def squeeze(draw: Draw) -> Node | None:
    x = draw.pick(lambda n: any(b and s == 1 for s, b in zip(n.sizes, n.broadcast)))
    if x is None:
        return None
    candidates = [d for d, (s, b) in enumerate(zip(x.sizes, x.broadcast)) if b and s == 1]
    dims = sorted(draw.rng.sample(candidates, draw.rng.randint(1, len(candidates))))
    sizes = tuple(s for d, s in enumerate(x.sizes) if d not in dims)
    return Node(draw.call("squeeze", x.tensor, dims), sizes, x.exact)


def _iteration_dims(node: Node) -> list[int]:
    return [d for d, b in enumerate(node.broadcast) if not b]


def slice_(draw: Draw) -> Node | None:
    rng = draw.rng
    x = draw.pick(lambda n: bool(_iteration_dims(n)))
    if x is None:
        return None
    starts, ends, sizes = [], [], []
    for size, is_broadcast in zip(x.sizes, x.broadcast):
        start, end = 0, size
        if not is_broadcast and rng.random() < 0.6:
            start = rng.randint(0, size)
            end = rng.randint(start, size)
        starts.append(start)
        ends.append(end)
        sizes.append(end - start)
    return Node(draw.call("slice", x.tensor, starts, ends), tuple(sizes), x.exact)


def pad(draw: Draw) -> Node | None:
    rng = draw.rng
    x = draw.pick(lambda n: bool(n.sizes) and not n.broadcast[-1])
    if x is None:
        return None
    sizes = list(x.sizes)
    widths = []
    for d in range(len(sizes) - 1, -1, -1):  # nvFuser's order: innermost dim first
        if x.broadcast[d] or (widths and rng.random() < 0.5):
            break
        left, right = rng.randint(0, 2), rng.randint(0, 2)
        widths += [left, right]
        sizes[d] += left + right
    if rng.random() < 0.5 or x.kind != "float":
        result = draw.call("pad", x.tensor, widths)
    else:
        result = draw.call("pad", x.tensor, widths, draw.scalar("float"))
    return Node(result, tuple(sizes), x.exact)


def cat(draw: Draw) -> Node | None:
    x = draw.pick(lambda n: bool(_iteration_dims(n)))
    if x is None:
        return None
    dim = draw.rng.choice(_iteration_dims(x))

    def fits(n: Node) -> bool:
        return (
            n.dtype is x.dtype and len(n.sizes) == len(x.sizes) and n.broadcast == x.broadcast
            and all(a == b for d, (a, b) in enumerate(zip(n.sizes, x.sizes)) if d != dim)
        )

    y = draw.pick(fits) or x
    sizes = list(x.sizes)
    sizes[dim] += y.sizes[dim]
    return Node(draw.call("cat", [x.tensor, y.tensor], dim), tuple(sizes), x.exact and y.exact)


def matmul(draw: Draw) -> Node | None:
    rng = draw.rng
    x = draw.pick(lambda n: len(n.sizes) in (2, 3) and not any(n.broadcast))
    if x is None:
        return None
    if x.kind != "float" or x.dtype is DataType.Double:
        x = Node(draw.call("cast", x.tensor, dtype=DataType.Float), x.sizes, x.exact)
    if x.dtype is DataType.Half:  # bounded, so a sum of products stays in half's range
        x = Node(draw.call("tanh", x.tensor), x.sizes, False)
    k, n = x.sizes[-1], rng.choice((1, 2, 3, 5))
    if rng.random() < 0.5:
        weight = draw.add_input((n, k), x.dtype)
        args = [x.tensor, weight.tensor]
        if rng.random() < 0.5:
            args.append(draw.add_input((n,), x.dtype).tensor)
        return Node(draw.call("linear", *args), x.sizes[:-1] + (n,), False)
    if len(x.sizes) != 2:
        return None
    other = draw.add_input((k, n), x.dtype)
    return Node(draw.call("matmul", x.tensor, other.tensor), (x.sizes[0], n), False)


def hint(draw: Draw) -> Node | None:
    x = draw.pick()
    if x is None:
        return None
    return Node(draw.call(draw.rng.choice(("segment_set", "set")), x.tensor), x.sizes, x.exact)
