from aisim.cli import main

raise SystemExit(main())
