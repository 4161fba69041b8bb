"""One module per CLI command. Each defines `register(app)` and imports only typer at module
level: heavy imports (numpy, rich) happen inside the command body, so
`meshdiag --help` stays fast."""

#: command modules, in the order `meshdiag --help` lists them
COMMANDS = (
    "layout",
    "inspect",
    "simulate",
    "lint",
    "convert",
    "diff",
    "reshard",
    "trace",
    "rule",
    "schema",
)
