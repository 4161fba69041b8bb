from meshdiag.cli import main

main()
