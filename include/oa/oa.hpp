#pragma once
// Umbrella header for oa.
#include "oa/core/dtype.hpp"
#include "oa/core/error.hpp"
#include "oa/core/op.hpp"
#include "oa/core/shape.hpp"
#include "oa/matrix/autograd.hpp"
#include "oa/matrix/elementwise.hpp"
#include "oa/matrix/linalg.hpp"
#include "oa/matrix/matrix.hpp"
#include "oa/matrix/reduction.hpp"
#include "oa/ml/autograd.hpp"
#include "oa/ml/parameter.hpp"
#include "oa/runtime/engine.hpp"
