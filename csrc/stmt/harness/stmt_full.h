// The full include set of C++ statements: the frontend set plus TorchScript
// (torch/script.h: torch::jit::load, custom operators and classes). Chosen per
// statement by harness.measure.cpp.include_set when its code names torch::jit
// or has #include lines of its own, or when it fails to compile with a smaller
// set for a missing declaration; precompiled separately.
#pragma once

#include <torch/script.h>

#include "harness/stmt_frontend.h"
