"""The command line: `app.py` builds the typer app with the invoked command only (start-up),
`commands/` holds one module per command. Wiring only: the work is in the layers below."""
