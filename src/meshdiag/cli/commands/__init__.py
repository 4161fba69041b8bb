"""One module per CLI command. Each defines `register(app)` and imports only typer at module
level: heavy imports (numpy, rich) happen inside the command body, so
`meshdiag --help` stays fast."""

#: command name -> its module, in the order `meshdiag --help` lists them. The CLI registers
#: only the invoked command (typer builds a validator per parameter of every registered
#: command at each run), all of them for `--help` and anything it does not recognise.
COMMANDS = {
    "layout": "layout",
    "inspect": "inspect",
    "simulate-copy": "simulate",
    "lint": "lint",
    "comms": "comms",
    "convert": "convert",
    "diff": "diff",
    "reshard": "reshard",
    "trace": "trace",
    "rule": "rule",
    "schema": "schema",
}
