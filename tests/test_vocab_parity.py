"""Vocabulary look-ups equal the reference's for every id of every supported real file."""

from __future__ import annotations

import pytest

import gpu_tok
from _paths import model_file

tokenizers = pytest.importorskip("tokenizers")

FAMILIES = ["gpt2", "roberta-base", "llama3", "qwen3", "gpt-4o", "gpt-oss",
            "llama2", "mistral-v0.1", "mistral-v0.3-metaspace", "gemma3", "phi-3-mini"]


@pytest.mark.parametrize("family", FAMILIES)
def test_vocab_lookups_equal_the_reference(family):
    path = model_file(family)
    if not path.is_file():
        pytest.skip(f"model {family!r} not available at {path}")
    ours = gpu_tok.Tokenizer.from_file(path)
    ref = tokenizers.Tokenizer.from_file(str(path))
    assert ours.get_vocab_size() == ref.get_vocab_size()
    assert ours.get_vocab_size(with_added_tokens=False) == ref.get_vocab_size(with_added_tokens=False)
    vocab = ref.get_vocab()
    assert ours.get_vocab() == vocab
    n = max(vocab.values()) + 3
    mismatched = [i for i in range(n) if ours.id_to_token(i) != ref.id_to_token(i)]
    assert not mismatched, f"id_to_token differs for {len(mismatched)} ids, first {mismatched[:5]}"
    wrong = [t for t in vocab if ours.token_to_id(t) != ref.token_to_id(t)]
    assert not wrong, f"token_to_id differs for {len(wrong)} tokens, first {wrong[:5]}"
    for probe in ["", "not-a-token-\u2581\u2581", "<unk>", "\u2581"]:
        assert ours.token_to_id(probe) == ref.token_to_id(probe)
    theirs = {i: (t.content, t.single_word, t.lstrip, t.rstrip, t.normalized, t.special)
              for i, t in ref.get_added_tokens_decoder().items()}
    mine = {i: (t.content, t.single_word, t.lstrip, t.rstrip, t.normalized, t.special)
            for i, t in ours.get_added_tokens_decoder().items()}
    assert mine == theirs
