"""Test setup shared by every test module.

JAX is the oracle for the differential tests; it needs its fake CPU devices configured before
it is first imported, so the flag is set here, ahead of any test module.
"""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=64")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
