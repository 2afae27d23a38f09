from mxlint.cli import main

raise SystemExit(main())
