// The full include set of C++ statements: the frontend set and the script set
// together (torch/torch.h and torch/script.h). Chosen per statement by
// harness.measure.cpp.include_set when its code names both torch::nn (or
// another part of the frontend) and torch::jit, or includes a header no
// smaller set holds, or when it fails to compile with a smaller set for a
// missing declaration; precompiled separately.
#pragma once

#include "harness/stmt_frontend.h"
#include "harness/stmt_script.h"
