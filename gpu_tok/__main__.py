"""``python -m gpu_tok`` runs the ``gpu-tok`` command line."""

import sys

from gpu_tok.cli import main

if __name__ == "__main__":
    sys.exit(main())
