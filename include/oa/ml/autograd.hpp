#pragma once
// The autograd API under oa::ml, where the model-building code lives. The
// semantics are documented in oa/matrix/autograd.hpp.
#include "oa/matrix/autograd.hpp"

namespace oa::ml {

using oa::backward;
using oa::detach;
using oa::grad;
using oa::grad_enabled;
using oa::NoGradGuard;
using oa::requires_grad;
using oa::set_requires_grad;
using oa::zero_grad;

}  // namespace oa::ml
