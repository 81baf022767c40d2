from icount.cli import main

main()
