"""A caller busy when the signal comes: what an executor hands ``on_result`` on Ctrl-C.

Three timer tasks a, b, c run one at a time. The caller's ``on_result`` is still busy with
a's result when b has finished and c has begun (its setup writes a file), and then
this process gets a real SIGINT. So the signal reaches the main thread before it has
taken b's result. An executor that keeps every finished result hands over a and b,
and never c, which is killed while it sleeps.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import interruptible

SCRIPT = '''
import json, os, signal, sys, time
from pathlib import Path
from harness.model.task import Task

started = Path(sys.argv[1]) / "started-c"

def task(name, stmt, setup="pass"):
    return Task(suite="t", name=name, kind="timer", params={{
        "stmt": stmt, "setup": setup, "language": "python", "num_threads": 1, "min_run_time": 0.01}})

seen = []

def on_result(result):
    seen.append(result.task.name)
    if len(seen) == 1:
        while not started.exists():
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)
        while True:
            time.sleep(0.01)

tasks = [task("a", "pass"), task("b", "pass"),
         task("c", "import time; time.sleep(60)", setup=f"open({{str(started)!r}}, 'w').close()")]
try:
    {run}
except KeyboardInterrupt:
    print(json.dumps(seen))
'''


def delivered_before_interrupt(tmp_path: Path, imports: str, run: str) -> list[str]:
    """The task names ``on_result`` got before the interrupt propagated: ``run`` is one line that runs
    ``tasks`` with ``on_result`` (``imports`` what it needs); its own process, a real SIGINT."""
    script = tmp_path / "busy_caller.py"
    script.write_text(imports + "\n" + SCRIPT.format(run=run))
    r = interruptible.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])
