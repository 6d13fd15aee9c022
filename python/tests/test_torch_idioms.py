"""torch idioms a PyTorch user writes first, and the errors they meet, named by the user's call."""
import pytest

import oa
import oa.nn.functional as F


def test_cross_entropy_target_shape_errors_name_the_call():
    for weight in (None, oa.ones(3)):
        with pytest.raises(oa.InvalidArgumentError, match=r"^oa\.nn\.functional\.cross_entropy: Expected input "
                           r"batch_size \(4\) to match target batch_size \(2\) \(input \[4, 3\], target \[2\]\)"):
            F.cross_entropy(oa.randn(4, 3), oa.tensor([0, 1]), weight=weight)
        with pytest.raises(oa.InvalidArgumentError, match=r"^oa\.nn\.functional\.cross_entropy: Expected target size "
                           r"\[4, 2\], got \[4\] \(input \[4, 3, 2\]"):
            F.cross_entropy(oa.randn(4, 3, 2), oa.tensor([0, 1, 1, 1]), weight=weight)
        with pytest.raises(oa.InvalidArgumentError, match=r"^oa\.nn\.functional\.cross_entropy: probability target "
                           r"\[4, 2\] must have input's shape \[4, 3\]"):
            F.cross_entropy(oa.randn(4, 3), oa.rand(4, 2), weight=weight)
    with pytest.raises(oa.InvalidArgumentError, match=r"^oa\.nn\.functional\.nll_loss: Expected target size \[\], "
                       r"got \[1\]"):
        F.nll_loss(oa.randn(3), oa.tensor([1]))


def test_where_on_two_engines_names_the_call():
    other = oa.Engine()
    c = oa.ones(3) > 0
    with pytest.raises(oa.InvalidArgumentError, match=r"^oa\.where: other \[3\] lives on another engine than "
                       r"condition \[3\]"):
        oa.where(c, oa.ones(3), oa.ones(3, engine=other))
    with pytest.raises(oa.InvalidArgumentError, match=r"^oa\.Tensor\.where: input \[2\] lives on another engine"):
        oa.ones(2, engine=other).where(c[:2], 0.0)


@pytest.mark.parametrize("pool", ["max_pool2d", "avg_pool2d"])
def test_pooling_kernel_past_the_input_names_the_call_and_the_given_shape(pool):
    message = rf"^oa\.nn\.functional\.{pool}: kernel_size \[6, 6\] exceeds the input \[2, 3, 3\] padded by \[1, 1\]"
    with pytest.raises(oa.InvalidArgumentError, match=message):
        getattr(F, pool)(oa.randn(2, 3, 3), 6, padding=1)
    with pytest.raises(oa.InvalidArgumentError, match=message.replace(r"\[2, 3, 3\]", r"\[1, 2, 3, 3\]")):
        getattr(oa.nn, pool.replace("_pool2d", "Pool2d").capitalize().replace("pool", "Pool"))(6, padding=1)(
            oa.randn(1, 2, 3, 3))
