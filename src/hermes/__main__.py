"""`python -m hermes` runs the command line."""

from hermes.cli.main import main

raise SystemExit(main())
