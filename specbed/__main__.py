from specbed.cli import main

raise SystemExit(main())
