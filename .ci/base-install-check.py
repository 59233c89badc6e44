"""tox -e base: in an install without extras, `aisim qualify` must exit 2 naming aisim[qualify]."""

import subprocess
import sys

done = subprocess.run(["aisim", "qualify", "mape", "x"], capture_output=True, text=True)
print(done.stderr, end="")
expected = "aisim: error: aisim qualify needs pandas, from the extra aisim[qualify]"
sys.exit(0 if done.returncode == 2 and done.stderr.startswith(expected) else 1)
