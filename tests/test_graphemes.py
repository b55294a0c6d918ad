"""The grapheme cluster classes (``gpu_tok/data/graphemes.json``) against the pinned
reference, through its ``Precompiled`` normalizer on charsmaps of our own
(``scripts/gen_grapheme_tables.py``'s probes, decision 0027): a sample here, every code
point and the whole fuzz with ``--full``."""

from __future__ import annotations

import importlib.util
import itertools
import json
import random
import sys
from pathlib import Path

import pytest

tokenizers = pytest.importorskip("tokenizers")
if tokenizers.__version__ != "0.23.1":  # pragma: no cover
    pytest.skip(f"reference tokenizers==0.23.1 required, found {tokenizers.__version__}", allow_module_level=True)

from gpu_tok.cpu_ref import graphemes as G  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _script():
    sys.path.insert(0, str(REPO / "scripts"))
    spec = importlib.util.spec_from_file_location("gen_grapheme_tables", REPO / "scripts" / "gen_grapheme_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _script()
TABLE = json.loads((REPO / "gpu_tok" / "data" / "graphemes.json").read_text(encoding="utf-8"))


def test_table_is_from_the_pinned_reference():
    assert TABLE["reference_version"] == tokenizers.__version__, (
        "graphemes.json was measured with another reference: re-run scripts/gen_grapheme_tables.py")


def _sample():
    """Every corrected code point, every code point of a class combination that is rare,
    and a spread of the rest."""
    P = G.props()
    rnd = random.Random(0)
    by = {}
    for c in GEN.CPS:
        by.setdefault(P[c], []).append(c)
    cps = {c for c, *_ in TABLE["measured_corrections"]}
    for members in by.values():
        cps.update(members if len(members) <= 64 else rnd.sample(members, 64))
    cps.update(rnd.sample(GEN.CPS, 1500))
    return sorted(cps)


def test_probes_on_a_sample_and_a_short_fuzz():
    bad, total = GEN.run(itertools.chain(GEN.probes(_sample()), GEN.fuzz(20_000, seed=1)))
    assert total > 50_000
    assert not bad, {k: [" ".join(f"U+{ord(c):04X}" for c in t) for t in v[:5]] for k, v in bad.items()}


@pytest.mark.full
def test_probes_on_every_code_point_and_the_whole_fuzz():
    bad, total = GEN.run(itertools.chain(GEN.probes(), GEN.fuzz()))
    assert not bad, {k: [" ".join(f"U+{ord(c):04X}" for c in t) for t in v[:5]] for k, v in bad.items()}


@pytest.mark.parametrize("text,want", [
    ("", []),
    ("ab", [(0, 1), (1, 2)]),
    ("a\r\nb", [(0, 1), (1, 3), (3, 4)]),
    ("e\u0301\u0308x", [(0, 3), (3, 4)]),
    ("\u1100\u1161\u11a8\u1100", [(0, 3), (3, 4)]),
    ("\U0001f1eb\U0001f1f7\U0001f1eb", [(0, 2), (2, 3)]),
    ("\U0001f468\u200d\U0001f469x", [(0, 3), (3, 4)]),
    ("\u0915\u094d\u0937\u093f", [(0, 4)]),
    ("\u0600a", [(0, 2)]),
    ("\x01\u0301", [(0, 1), (1, 2)]),
])
def test_rules_as_written(text, want):
    """UAX #29's rules on cases each rule decides (the probes check the classes)."""
    assert G.grapheme_bounds(text) == want
