"""The examples in examples/python run (CI runs them through this test) and say what they should."""
import os
import subprocess
import sys

import pytest

EXAMPLES = {
    "prolif_simulate.py": "normalized Hellinger",
    "angio_field.py": "integral of n",
    "ddm_moving.py": "tick 9:",
}


@pytest.mark.parametrize("script", sorted(EXAMPLES))
def test_example_runs(repo_root, script):
    env = dict(os.environ, MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, str(repo_root / "examples/python" / script)], cwd=repo_root, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert EXAMPLES[script] in r.stdout, r.stdout
