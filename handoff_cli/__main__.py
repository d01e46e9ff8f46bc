from handoff_cli import main

main()
