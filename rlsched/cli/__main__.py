from rlsched.cli import main

main()
