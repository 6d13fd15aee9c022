"""torch.einsum composed from oa's ops (permute, reshape, sum, index_select, broadcasting products and batched
matmul), so autograd flows through it."""
import math

from . import _oa

_OP = "oa.einsum"


def _labels(term, where):
    """The subscripts of one term as a list of letters, with "..." standing for the ellipsis (at most one)."""
    labels, j = [], 0
    while j < len(term):
        if term.startswith("...", j):
            if "..." in labels:
                raise _oa.InvalidArgumentError(f"{_OP}: {where} {term!r} has more than one ellipsis '...'")
            labels.append("...")
            j += 3
            continue
        c = term[j]
        if not ("a" <= c <= "z" or "A" <= c <= "Z"):
            raise _oa.InvalidArgumentError(f"{_OP}: invalid subscript {c!r} in {where} {term!r}: subscripts must be "
                                           "in [a-zA-Z] (or an ellipsis '...')")
        labels.append(c)
        j += 1
    return labels


def _expand(labels, rank, broadcast):
    """labels with "..." replaced by the ints naming its `rank` axes: the last `rank` of the `broadcast` axes the
    ellipsis stands for over all operands (they align from the right, as broadcasting does)."""
    if "..." not in labels:
        return labels
    at = labels.index("...")
    return labels[:at] + list(range(broadcast - rank, broadcast)) + labels[at + 1:]


def _diagonal(x, labels):
    """x with each subscript repeated within it reduced to its diagonal (x[i, i] for 'ii'), as an index_select of
    the two axes merged; returns (x, labels with each subscript once)."""
    while len(set(labels)) != len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        p = labels.index(c)
        q = labels.index(c, p + 1)
        n = x.shape[p]
        if x.shape[q] != n:
            raise _oa.InvalidArgumentError(f"{_OP}: subscript {c!r} is repeated for an operand of shape "
                                           f"{list(x.shape)} but its axes {p} and {q} have extents {n} != {x.shape[q]}")
        rest = [a for a in range(x.dim()) if a not in (p, q)]
        x = x.permute(rest + [p, q]).reshape([x.shape[a] for a in rest] + [n * n])
        x = x.index_select(len(rest), _oa.arange(0, n * n, n + 1, dtype=_oa.dtype.int32, engine=x.engine))
        labels = [labels[a] for a in rest] + [c]
    return x, labels


def _sum_out(x, labels, keep):
    """x summed over the axes whose subscript is not in keep; returns (x, the subscripts left)."""
    axes = [a for a, c in enumerate(labels) if c not in keep]
    if not axes:
        return x, labels
    return x.sum(axes), [c for c in labels if c in keep]


def _contract(a, la, b, lb, keep):
    """a (subscripts la) times b (lb) summed over the subscripts they share that are not in keep: a batched matmul
    [batch, left, shared] x [batch, shared, right], or a broadcasting product when they share none to sum."""
    a, la = _sum_out(a, la, set(keep) | set(lb))
    b, lb = _sum_out(b, lb, set(keep) | set(la))
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]
    extent = {c: n for labels, x in ((la, a), (lb, b)) for c, n in zip(labels, x.shape)}
    shape = lambda labels: [extent[c] for c in labels]  # noqa: E731
    order = lambda x, labels, want: x.permute([labels.index(c) for c in want]) if want != labels else x  # noqa: E731
    if not summed:
        a = order(a, la, batch + left).reshape(shape(batch + left) + [1] * len(right))
        b = order(b, lb, batch + right).reshape(shape(batch) + [1] * len(left) + shape(right))
        return a * b, batch + left + right
    a = order(a, la, batch + left + summed).reshape([math.prod(shape(batch)), math.prod(shape(left)),
                                                     math.prod(shape(summed))])
    b = order(b, lb, batch + summed + right).reshape([math.prod(shape(batch)), math.prod(shape(summed)),
                                                      math.prod(shape(right))])
    return _oa.matmul(a, b).reshape(shape(batch + left + right)), batch + left + right


def einsum(equation, *operands):
    """torch.einsum(equation, *operands): the sum over the subscripts that are not in the output of the product of
    the operands, each indexed by its term's subscripts. equation 'ij,jk->ik' (explicit output) or 'ij,jk'
    (implicit: the subscripts that appear once, in alphabetical order, capitals first, after the ellipsis's axes);
    subscripts are letters, spaces are ignored; '...' stands for the leading, middle or trailing axes of an
    operand that its letters do not name, broadcast across the operands from the right (and summed when the
    explicit output lacks '...'). A subscript repeated within one term takes the diagonal ('ii->i', and 'ii' is the
    trace); extents of one subscript must agree across the operands or be 1 (broadcast). Operands are given one by
    one or as one list; one operand or more, contracted from left to right, each pair as a batched matmul (or a
    broadcasting product where they share no subscript to sum); all of one floating dtype (float32, float16,
    bfloat16), which the result has. Differentiable. Errors: TypeError for an equation that is not a str (the
    sublist form is not supported) or an operand that is not an oa.Tensor; oa.InvalidArgumentError naming the
    equation, the subscript or the shapes for no operands, a number of terms other than of operands, an invalid
    subscript, more subscripts than an operand's axes (or fewer, without '...'), output subscripts repeated or
    absent from the inputs, extents that disagree, or operands of different or non-floating dtypes."""
    if len(operands) == 1 and isinstance(operands[0], (tuple, list)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"{_OP}: equation must be a str such as 'ij,jk->ik', not {type(equation).__name__} (the "
                        "sublist form is not supported)")
    if not operands:
        raise _oa.InvalidArgumentError(f"{_OP}: must provide at least one operand (equation {equation!r})")
    for i, x in enumerate(operands):
        if not isinstance(x, _oa.Tensor):
            raise TypeError(f"{_OP}: operand {i} must be an oa.Tensor, not {type(x).__name__}")
    dtypes = sorted({x.dtype.name for x in operands})
    if len(dtypes) > 1 or not operands[0].is_floating_point():
        raise _oa.InvalidArgumentError(f"{_OP}: operands must share one floating dtype (float32, float16 or "
                                       f"bfloat16), not {', '.join(dtypes)}")
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise _oa.InvalidArgumentError(f"{_OP}: equation {equation!r} has {len(terms)} input terms but "
                                       f"{len(operands)} operands were given")
    parsed = [_labels(term, f"the term of operand {i}") for i, term in enumerate(terms)]
    ranks = []
    for i, (labels, x) in enumerate(zip(parsed, operands)):
        named = len(labels) - ("..." in labels)
        if named > x.dim() or ("..." not in labels and named != x.dim()):
            raise _oa.InvalidArgumentError(f"{_OP}: term {terms[i]!r} of equation {equation!r} names {named} axes "
                                           f"but operand {i} has shape {list(x.shape)}")
        ranks.append(x.dim() - named)
    broadcast = max(ranks)
    parsed = [_expand(labels, r, broadcast) for labels, r in zip(parsed, ranks)]
    if arrow:
        output = _expand(_labels(rhs, "the output"), broadcast, broadcast)
        for c in output:
            if output.count(c) > 1:
                raise _oa.InvalidArgumentError(f"{_OP}: output subscript {c!r} appears more than once in the output "
                                               f"of equation {equation!r}")
            if not any(c in labels for labels in parsed):
                raise _oa.InvalidArgumentError(f"{_OP}: output subscript {c!r} of equation {equation!r} does not "
                                               "appear in the input terms")
    else:
        letters = [c for labels in parsed for c in labels if isinstance(c, str)]
        output = list(range(broadcast)) + sorted(c for c in set(letters) if letters.count(c) == 1)
    xs, ls = [], []
    for x, labels in zip(operands, parsed):
        x, labels = _diagonal(x, labels)
        xs.append(x)
        ls.append(labels)
    extents = {}
    for i, (x, labels) in enumerate(zip(xs, ls)):
        for c, n in zip(labels, x.shape):
            extents.setdefault(c, []).append((i, n))
    for c, seen in extents.items():
        if len({n for _, n in seen if n != 1}) > 1:
            name = repr(c) if isinstance(c, str) else "'...'"
            raise _oa.InvalidArgumentError(f"{_OP}: subscript {name} of equation {equation!r} has extents that do not "
                                           f"broadcast: operand shapes {[list(x.shape) for x in operands]}")
    # An axis of 1 facing a longer one is the same as no axis: drop it, so that the product broadcasts.
    for i, (x, labels) in enumerate(zip(xs, ls)):
        ones = [a for a, c in enumerate(labels) if x.shape[a] == 1 and max(n for _, n in extents[c]) > 1]
        if ones:
            xs[i] = x.reshape([n for a, n in enumerate(x.shape) if a not in ones])
            ls[i] = [c for a, c in enumerate(labels) if a not in ones]
    y, ly = _sum_out(xs[0], ls[0], set(output).union(*ls[1:]))
    for i in range(1, len(xs)):
        y, ly = _contract(y, ly, xs[i], ls[i], set(output).union(*ls[i + 1:]))
    y, ly = _sum_out(y, ly, set(output))
    if ly == output:
        return y.clone() if y is operands[0] else y
    return y.permute([ly.index(c) for c in output])
