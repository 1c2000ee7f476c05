from harness.cli.main import main

raise SystemExit(main())
