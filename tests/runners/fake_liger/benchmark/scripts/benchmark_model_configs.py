# A module the scripts import (no __main__ block): "all" does not run it.
HIDDEN_SIZES = [1024, 2048]
