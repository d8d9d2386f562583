// The frontend include set of C++ statements: the statement header plus the
// torch C++ frontend (torch::nn, optim, data, serialize, fft, ...), without
// TorchScript's loader (harness/stmt_full.h adds it). Chosen per statement by
// harness.measure.cpp.include_set when its code names those; precompiled
// separately. torch/script.h costs every TU that includes it about a second
// more (g++ 12 -O2, PCH warm), which statements of torch::nn do not need.
#pragma once

#include <torch/torch.h>

#include "harness/stmt.h"
