from meshdiag.cli.app import main

main()
