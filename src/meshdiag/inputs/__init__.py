"""Files a user writes for meshdiag (`meshdiag.toml`, `[tool.meshdiag]`, mesh `.toml`/`.json`
files): their pydantic models, and errors that name the file, the key and its line.

pydantic is imported only by the modules that validate (`config_model`, `mesh_model`,
`problems`), and only when a file is read: `meshdiag --help` and the IR scan never load it.
`keyline` (where a key sits in the text) is plain Python.
"""
