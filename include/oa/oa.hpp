#pragma once
// Umbrella header for oa.
#include "oa/core/dtype.hpp"
#include "oa/core/error.hpp"
#include "oa/core/op.hpp"
#include "oa/core/shape.hpp"
#include "oa/matrix/elementwise.hpp"
#include "oa/matrix/matrix.hpp"
#include "oa/ml/checkpoint.hpp"
#include "oa/ml/data.hpp"
#include "oa/ml/generator.hpp"
#include "oa/ml/init.hpp"
#include "oa/runtime/engine.hpp"
