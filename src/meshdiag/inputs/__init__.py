"""Files a user writes for meshdiag (`meshdiag.toml`, `[tool.meshdiag]`, mesh `.toml`/`.json`
files): their pydantic models, and errors that name the file, the key and its line.

pydantic is imported only by the models (`config_model`, `mesh_model`) and by `problems` when
it validates, and only when a file is read that needs them: `meshdiag --help`, the IR scan
and a config of plain values (`plain_config`) never load it. `keyline` (where a key sits in
the text) is plain Python.
"""
