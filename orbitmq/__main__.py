from orbitmq.cli import main

main()
