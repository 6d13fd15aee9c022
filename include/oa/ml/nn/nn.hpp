#pragma once
// Umbrella header for oa::ml::nn, the neural-network modules.
#include "oa/ml/nn/activation.hpp"
#include "oa/ml/nn/attention.hpp"
#include "oa/ml/nn/conv.hpp"
#include "oa/ml/nn/dropout.hpp"
#include "oa/ml/nn/embedding.hpp"
#include "oa/ml/nn/linear.hpp"
#include "oa/ml/nn/module.hpp"
#include "oa/ml/nn/norm.hpp"
#include "oa/ml/nn/pool.hpp"
#include "oa/ml/nn/sequential.hpp"
