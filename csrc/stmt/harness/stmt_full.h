// The full include set of C++ statements: the statement header plus all of
// the torch C++ frontend (torch::nn, optim, data, serialize) and TorchScript
// (torch::jit). Chosen per statement by harness.measure.cpp.include_set when
// its code names those, has its own #include lines, or fails to compile with
// the lean set for a missing declaration; precompiled separately.
#pragma once

#include <torch/script.h>
#include <torch/torch.h>

#include "harness/stmt.h"
