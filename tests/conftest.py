"""Test setup shared by every test module.

JAX is the oracle for the differential tests; it needs its fake CPU devices configured before
it is first imported, so the flag is set here, ahead of any test module.
"""

import os
import warnings

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=64")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

# Some lint tests swap in a local (unpicklable) per-file function, so the runner forks; once a
# differential test has imported JAX, Python warns on stderr about forking a threaded process.
# meshdiag itself never imports JAX (its runner uses forkserver whenever threads exist), and
# the warning would otherwise land in the stderr those tests assert is one line.
warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)
