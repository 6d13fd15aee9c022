"""The functional ops with torch.nn.functional's names and keyword arguments.

Each is one op of oa's C++ engine (oa/ml/functional.hpp, oa/matrix): shapes,
layouts and errors are documented there and in each function's docstring.
Besides PyTorch's names: accuracy, bmm, bmm_nt, bmm_tn, split_heads, merge_heads,
softmax_scaled_masked, flash_attention and rope.
"""
from .._oa import functional as _f

accuracy = _f.accuracy
avg_pool2d = _f.avg_pool2d
batch_norm = _f.batch_norm
bmm = _f.bmm
bmm_nt = _f.bmm_nt
bmm_tn = _f.bmm_tn
conv1d = _f.conv1d
conv2d = _f.conv2d
conv_transpose1d = _f.conv_transpose1d
conv_transpose2d = _f.conv_transpose2d
cross_entropy = _f.cross_entropy
dropout = _f.dropout
embedding = _f.embedding
flash_attention = _f.flash_attention
gelu = _f.gelu
group_norm = _f.group_norm
instance_norm = _f.instance_norm
layer_norm = _f.layer_norm
linear = _f.linear
log_softmax = _f.log_softmax
max_pool2d = _f.max_pool2d
merge_heads = _f.merge_heads
mse_loss = _f.mse_loss
one_hot = _f.one_hot
relu = _f.relu
rms_norm = _f.rms_norm
rope = _f.rope
scaled_dot_product_attention = _f.scaled_dot_product_attention
sigmoid = _f.sigmoid
silu = _f.silu
softplus = _f.softplus
mish = _f.mish
hardswish = _f.hardswish
leaky_relu = _f.leaky_relu
elu = _f.elu
softmax = _f.softmax
softmax_scaled_masked = _f.softmax_scaled_masked
split_heads = _f.split_heads
tanh = _f.tanh
