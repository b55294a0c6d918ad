#!/usr/bin/env python3
"""Side-by-side CPU throughput of gpu_tok against HF tokenizers, tiktoken, fastokens and
gigatoken: a thin wrapper around ``gpu_tok.bench`` (also ``gpu-tok bench``), same options
and output. See benchmarks/README.md and ``python benchmarks/bench.py --help``.
"""
from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # a bare checkout: import gpu_tok from it
    sys.path.insert(0, str(REPO_ROOT))

from gpu_tok.bench import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
