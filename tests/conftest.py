"""Test setup shared by every test module.

JAX is the oracle for the differential tests; it needs its fake CPU devices configured before
it is first imported, so the flag is set here, ahead of any test module.
"""

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=64")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# Some lint tests swap in a local (unpicklable) per-file function, so the runner forks; once a
# differential test has imported JAX, Python warns on stderr about forking a threaded process.
# meshdiag itself never imports JAX (its runner uses forkserver whenever threads exist), and
# the warning would otherwise land in the stderr those tests assert is one line.
warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)


PROGRAM = Path(__file__).resolve().parent / "programs" / "shard_map_tuple.py"


@pytest.fixture(scope="session", params=[8, 32], ids=lambda n: f"{n}dev")
def dump(request, tmp_path_factory) -> tuple[Path, int]:
    """(a real every-pass XLA dump directory, its device count).

    `tests/programs/shard_map_tuple.py` (a shard_map, a sharding constraint and a tuple of
    three differently sharded results) run in a subprocess (XLA reads its dump flags at
    start-up) at 8 and 32 devices with `--xla_dump_to DIR --xla_dump_hlo_pass_re=.*`: every
    pass's HLO, the Shardy MLIR stages, LLVM IR (`.ll`) and object files (`.o`), as a
    user's dump directory holds them. Made once per session."""
    n = request.param
    out = tmp_path_factory.mktemp(f"dump{n}")
    env = dict(os.environ)
    env["XLA_FLAGS"] = (
        f"--xla_force_host_platform_device_count={n} --xla_dump_to={out} --xla_dump_hlo_pass_re=.*"
    )
    env["JAX_PLATFORMS"] = "cpu"
    subprocess.run([sys.executable, str(PROGRAM)], env=env, check=True)
    return out, n
