"""What commands share: reading `--format` and `--mesh`, the mesh's findings on a target;
binding the option types (`options`) for a command that does not import typer."""

from __future__ import annotations


def bind_typer_names(namespace: dict) -> None:
    """Bind `typer` and the option types (`options`' `...Opt` names) in a module's
    `namespace`, for a module whose signature annotations (strings, `from __future__ import
    annotations`) name them without importing them: its command then runs without typer on
    the direct path (`cli.direct`), and typer, which reads the annotations when the command
    is registered, finds them."""
    import typer

    from meshdiag.cli.commands import options

    namespace["typer"] = typer
    namespace.update((k, v) for k, v in vars(options).items() if k.endswith("Opt"))


def check_format(fmt: str, allowed: tuple[str, ...] = ("text", "json")) -> str:
    from meshdiag.errors import MeshdiagError

    if fmt not in allowed:
        raise MeshdiagError(f"unknown --format {fmt!r}; expected one of {', '.join(allowed)}")
    return fmt


def load_mesh(text: str | None):
    """Parse a --mesh value (None passes through)."""
    if text is None:
        return None
    from meshdiag.inputs.mesh_input import parse_mesh

    return parse_mesh(text)


def mesh_findings(mesh, target: str | None) -> list:
    """MD103/MD104 for the --mesh on the --target (empty without either)."""
    if mesh is None or not target:
        return []
    from meshdiag.checks.mesh_target import mesh_target_findings

    return mesh_target_findings(mesh, target)
