"""The `--format json` contracts: one pydantic model per document a command prints, and the
JSON Schema (draft 2020-12) `meshdiag schema` prints from them.

Each module here describes one command's documents in a `DOCUMENTS` dict (document name ->
model); this package finds the modules by listing itself, so a new command's contract is one
new file. The models describe the output: the commands keep writing their JSON directly
(nothing big goes through pydantic), and the tests validate what they write against these
schemas. Nothing here is imported unless a schema is asked for.
"""

from __future__ import annotations

import importlib
import pkgutil

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def documents() -> dict:
    """Every document name -> its model, in the order the modules list them."""
    out: dict = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name, model in getattr(module, "DOCUMENTS", {}).items():
            if name in out:
                raise RuntimeError(f"JSON document {name!r} is described twice")
            out[name] = model
    return out


def schema(name: str) -> dict:
    """The JSON Schema of one document."""
    from meshdiag.errors import MeshdiagError

    docs = documents()
    if name not in docs:
        raise MeshdiagError(f"no JSON document named {name!r}; documents: {', '.join(docs)}")
    return {"$schema": SCHEMA_DIALECT, **_tidy(docs[name].model_json_schema())}


def all_schemas() -> dict:
    """One schema holding every document's under `$defs` and accepting any of them."""
    from pydantic.json_schema import models_json_schema

    docs = documents()
    refs, defs = models_json_schema(
        [(m, "validation") for m in docs.values()], ref_template="#/$defs/{model}"
    )
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "meshdiag JSON output",
        "description": "Any document a meshdiag command prints with --format json; "
        "`meshdiag schema NAME` prints one of them alone.",
        "anyOf": [refs[(m, "validation")] for m in docs.values()],
        **_tidy(defs),
    }


def describe() -> list[tuple[str, str]]:
    """(document name, the first line of its model's description) for every document."""
    return [
        (name, (model.__doc__ or "").strip().splitlines()[0] if model.__doc__ else "")
        for name, model in documents().items()
    ]


def _tidy(node):
    """The schema without `"default": null`: a key the models default to None is one a
    document leaves out (convert's `to` without --to), not one it writes as null."""
    if isinstance(node, dict):
        return {k: _tidy(v) for k, v in node.items() if not (k == "default" and v is None)}
    if isinstance(node, list):
        return [_tidy(v) for v in node]
    return node
