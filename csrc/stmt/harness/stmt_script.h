// The script include set of C++ statements: the statement header plus
// TorchScript (torch/script.h: torch::jit::load, modules, custom operators and
// classes), without the C++ frontend (torch/torch.h). Chosen per statement by
// harness.measure.cpp.include_set when its code names torch::jit or includes
// torch/script.h; precompiled separately. The frontend would cost a
// torch::jit statement's TU about 5 s more (g++ 12 -O2, PCH warm: a
// torch::jit::load statement 6.6-7.2 s with this set, 11.5-13.5 s with
// harness/stmt_full.h), and such statements rarely need torch::nn.
#pragma once

#include <torch/script.h>

#include "harness/stmt.h"
