"""What every check gets besides the module: the user's global mesh, target and split rule,
the collective budgets, and the run's memos."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from meshdiag.memo import RunMemos

if TYPE_CHECKING:
    from meshdiag.model.mesh import Mesh


@dataclass(frozen=True)
class CheckContext:
    path: str
    mesh: Mesh | None = None  # the global mesh (--mesh / config); None when unknown
    target: str | None = None  # --target name (tt-mlir, generic, t3k, ...)
    split: str = "xla"
    #: how `mesh` was put in the dump's id space (physical device ids → logical partitions
    #: through the dump's device assignment), "" when it was taken as given
    ids_note: str = ""
    #: collective checks: bytes one collective may move per device (MD201; None: no budget),
    #: and the size from which gathering a whole tensor onto every device is reported (MD202)
    collective_budget: int | None = None
    remat_min_bytes: int = 1 << 20
    #: the run's memos (checks remember nothing themselves); one per run, shared by its files
    memos: RunMemos = field(default_factory=RunMemos, compare=False, repr=False)
