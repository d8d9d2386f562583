"""gpt-fast: micro-kernel FLOP utilisation and bandwidth, and small-model decoding, against this device's peaks.

Long (compiles every kernel and two models), so it only runs when named:
``python -m harness bench gpt_fast [--only NAME] [--output FILE.csv]``.
HARNESS_GPT_FAST_SIZE=tiny|cpu|gpu overrides the sizes chosen by device
(tiny: seconds per experiment, for a quick check of the whole pipeline).
"""

import harness
from harness.options import GPT_FAST_SIZE_ENV, env_choice
from harness.suites.gpt_fast.context import SIZES
from harness.suites.gpt_fast.definition import GptFastExperiments

suite = harness.Suite(
    "gpt_fast",
    description="gpt-fast kernels and decoding: FLOP utilisation, GB/s, tokens/s against device peaks",
    default=False,
)
suite.add(GptFastExperiments(size=env_choice(GPT_FAST_SIZE_ENV, ("auto", *SIZES))))
