"""End-to-end tests of ``gpu-tok encode`` and of the embedded default tokenizer.

Every id the command writes is compared with the reference library
(``tokenizers``) on the same texts.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tokenizers

from gpu_tok import cli
from gpu_tok._util import sha256_file
from gpu_tok.megatron_idx import token_dtype
from gpu_tok.resolve import TokenizerNotFound, default_tokenizer_path, resolve_tokenizer

from _cli_texts import TEXTS

REPO = Path(__file__).resolve().parents[1]
SUMMARY = re.compile(r"^\d+ documents, \d+ tokens, \d+ bytes, [\d.]+ s, [\d.]+ MB/s$")


@pytest.fixture(scope="module")
def ref():
    return tokenizers.Tokenizer.from_file(str(default_tokenizer_path()))


def repo_env(**extra):
    """The environment of a subprocess that imports gpu_tok from this checkout."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                **extra)


def expected(ref, texts, add_special_tokens=False):
    return [e.ids for e in ref.encode_batch(texts, add_special_tokens=add_special_tokens)]


def run(args, capsys):
    rc = cli.main(args)
    out, err = capsys.readouterr()
    return rc, out, err


def read_output(out_dir: Path):
    """Documents of an ``--format npy`` output (every shard, in order), the ids, the manifest."""
    ids_parts, docs = [], []
    for ids_path in sorted(out_dir.glob("shard-*.ids.npy")):
        ids = np.load(ids_path)
        splits = np.load(str(ids_path).replace(".ids.npy", ".row_splits.npy"))
        assert splits.dtype == np.int64 and splits[0] == 0 and splits[-1] == ids.size
        docs += [ids[splits[i]:splits[i + 1]].tolist() for i in range(len(splits) - 1)]
        ids_parts.append(ids)
    ids = np.concatenate(ids_parts) if ids_parts else np.zeros(0, np.uint16)
    return docs, ids, json.loads((out_dir / "manifest.json").read_text())


def run_npy(args, capsys):
    return run(args + ["--format", "npy"], capsys)


def write_jsonl(path: Path, texts, field="text"):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8", newline="") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"id": i, field: t}) + "\n")


# ---------------------------------------------------------------- the default tokenizer

def test_default_tokenizer_file(ref):
    path = default_tokenizer_path()
    assert path.is_file() and path.stat().st_size < 300_000
    spec = json.loads(path.read_text(encoding="utf-8"))
    assert spec["model"]["type"] == "BPE"
    assert spec["pre_tokenizer"]["type"] == "ByteLevel"
    assert spec["pre_tokenizer"]["add_prefix_space"] is False
    assert spec["post_processor"]["type"] == "ByteLevel"
    assert spec["decoder"]["type"] == "ByteLevel"
    added = {t["content"]: t for t in spec["added_tokens"]}
    assert added["<|endoftext|>"]["special"] is True
    assert 1000 <= ref.get_vocab_size(with_added_tokens=True) <= 4000
    assert (path.parent / "default_tokenizer.PROVENANCE.md").is_file()


def test_default_tokenizer_loads_in_gpu_tok(ref):
    import gpu_tok

    tok = gpu_tok.Tokenizer.from_file(str(default_tokenizer_path()))
    assert tok.get_vocab_size(with_added_tokens=True) == ref.get_vocab_size(with_added_tokens=True)
    batch = tok.encode_batch_ids(TEXTS, add_special_tokens=False, device="ref")
    got = [batch.ids[batch.row_splits[i]:batch.row_splits[i + 1]].tolist() for i in range(len(TEXTS))]
    assert got == expected(ref, TEXTS)


def test_training_script_writes_a_loadable_tokenizer(tmp_path):
    out = tmp_path / "tok.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "train_default_tokenizer.py"), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    tok = tokenizers.Tokenizer.from_file(str(out))
    assert tok.token_to_id("<|endoftext|>") is not None
    assert tok.decode(tok.encode("round trip, ünïcode 🤗").ids) == "round trip, ünïcode 🤗"
    provenance = (tmp_path / "tok.PROVENANCE.md").read_text(encoding="utf-8")
    assert tokenizers.__version__ in provenance and "scripts/train_default_tokenizer.py" in provenance


# ---------------------------------------------------------------- encode: inputs and outputs

def test_jsonl_with_manifest(tmp_path, capsys, ref):
    src = tmp_path / "docs.jsonl"
    write_jsonl(src, TEXTS)
    rc, out, err = run_npy(["encode", "--device", "ref", "--input", str(src), "--output",
                            str(tmp_path / "out"), "--batch-size", "3"], capsys)
    assert rc == 0, err
    assert "embedded default tokenizer" in err
    assert SUMMARY.match(out.strip().splitlines()[-1])
    docs, ids, manifest = read_output(tmp_path / "out")
    assert docs == expected(ref, TEXTS)
    assert ids.dtype == np.uint16  # the default vocabulary fits
    assert manifest["documents"] == len(TEXTS)
    assert manifest["tokens"] == ids.size
    assert manifest["bytes"] == sum(len(t.encode("utf-8")) for t in TEXTS)
    assert [(x["path"], x["documents"], x["size"]) for x in manifest["inputs"]] == [
        (str(src), len(TEXTS), src.stat().st_size)]
    assert manifest["inputs"][0]["sha256"] == sha256_file(src)
    assert manifest["tokenizer"]["path"] == str(default_tokenizer_path())
    assert manifest["complete"] is True and len(manifest["shards"]) == 1
    assert len(manifest["tokenizer"]["sha256"]) == 64
    assert manifest["options"]["add_special_tokens"] is False
    assert manifest["gpu_tok_version"]
    line = out.strip().splitlines()[-1]
    assert line.startswith(f"{len(TEXTS)} documents, {ids.size} tokens, {manifest['bytes']} bytes")


def test_text_files_and_glob(tmp_path, capsys, ref):
    for i, t in enumerate(TEXTS):
        (tmp_path / f"doc{i}.txt").write_bytes(t.encode("utf-8"))
    rc, out, err = run_npy(["encode", "--input", str(tmp_path / "doc*.txt"), "--output",
                            str(tmp_path / "out"), "--device", "ref"], capsys)
    assert rc == 0, err
    docs, _, manifest = read_output(tmp_path / "out")
    names = sorted(f"doc{i}.txt" for i in range(len(TEXTS)))
    order = [int(n[3:-4]) for n in names]  # glob order is sorted by name
    assert docs == expected(ref, [TEXTS[i] for i in order])
    assert [Path(x["path"]).name for x in manifest["inputs"]] == names


def test_lines_keep_empty_lines_and_strip_crlf(tmp_path, capsys, ref):
    src = tmp_path / "lines.txt"
    src.write_bytes(b"first line\r\n\nthird \xc3\xa9t\xc3\xa9\n  fourth  \nlast without newline")
    rc, _, err = run_npy(["encode", "--lines", "--input", str(src), "--output", str(tmp_path / "out")],
                         capsys)
    assert rc == 0, err
    docs, _, _ = read_output(tmp_path / "out")
    texts = ["first line", "", "third été", "  fourth  ", "last without newline"]
    assert docs == expected(ref, texts)


def test_gzip_inputs_and_custom_field(tmp_path, capsys, ref):
    write_jsonl(tmp_path / "a.jsonl.gz", TEXTS[:4], field="content")
    with gzip.open(tmp_path / "b.txt.gz", "wb") as f:
        f.write("\n".join(TEXTS[4:]).encode("utf-8"))
    rc, _, err = run_npy(["encode", "--field", "content", "--input", str(tmp_path / "a.jsonl.gz"),
                          str(tmp_path / "b.txt.gz"), "--output", str(tmp_path / "out")], capsys)
    assert rc == 0, err
    docs, _, _ = read_output(tmp_path / "out")
    assert docs == expected(ref, TEXTS[:4] + ["\n".join(TEXTS[4:])])


def test_stdin_jsonl(tmp_path, capsys, monkeypatch, ref):
    data = "".join(json.dumps({"text": t}) + "\n" for t in TEXTS) + "\n"  # blank line skipped
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode("utf-8"))))
    rc, _, err = run_npy(["encode", "--input-format", "jsonl", "--input", "-", "--output",
                          str(tmp_path / "out")], capsys)
    assert rc == 0, err
    docs, _, manifest = read_output(tmp_path / "out")
    assert docs == expected(ref, TEXTS)
    raw = data.encode("utf-8")
    assert manifest["inputs"] == [{"path": "-", "format": "jsonl", "documents": len(TEXTS), "size": len(raw),
                                   "sha256": hashlib.sha256(raw).hexdigest()}]


def test_old_format_option_names_the_new_one(tmp_path, capsys):
    src = tmp_path / "a.txt"
    src.write_text("x", encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        cli.main(["encode", "--format", "jsonl", "--input", str(src)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--format is the OUTPUT format now" in err and "--input-format jsonl" in err


def test_add_special_tokens_and_tokenizer_dir(tmp_path, capsys, ref):
    tok_dir = tmp_path / "model"
    tok_dir.mkdir()
    (tok_dir / "tokenizer.json").write_bytes(default_tokenizer_path().read_bytes())
    src = tmp_path / "docs.jsonl"
    write_jsonl(src, TEXTS)
    rc, _, err = run_npy(["encode", "--tokenizer", str(tok_dir), "--add-special-tokens",
                          "--input", str(src), "--output", str(tmp_path / "out")], capsys)
    assert rc == 0, err
    assert "embedded default" not in err
    docs, _, manifest = read_output(tmp_path / "out")
    assert docs == expected(ref, TEXTS, add_special_tokens=True)
    assert manifest["tokenizer"]["path"] == str((tok_dir / "tokenizer.json").resolve())


def test_without_output_prints_summary_only(tmp_path, capsys):
    src = tmp_path / "a.txt"
    src.write_text("just a summary", encoding="utf-8")
    rc, out, _ = run(["encode", "--input", str(src)], capsys)
    assert rc == 0
    assert SUMMARY.match(out.strip().splitlines()[-1])
    assert out.strip().splitlines()[-1].startswith("1 documents, ")
    assert list(tmp_path.iterdir()) == [src]


def test_python_dash_m_with_stdin_lines(tmp_path, ref):
    env = repo_env()
    proc = subprocess.run(
        [sys.executable, "-m", "gpu_tok", "encode", "--lines", "--input", "-",
         "--output", str(tmp_path / "out"), "--format", "npy"],
        input="one\ntwo  words\n🤗 three\n".encode("utf-8"), capture_output=True, cwd=tmp_path,
        env=env, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert SUMMARY.match(proc.stdout.decode().strip().splitlines()[-1])
    docs, _, _ = read_output(tmp_path / "out")
    assert docs == expected(ref, ["one", "two  words", "🤗 three"])


# ---------------------------------------------------------------- encode: errors

@pytest.mark.parametrize("line, reason", [
    ('{"text": "unterminated}', "malformed JSON"),
    ('{"body": "no text field"}', "missing field 'text'"),
    ('["not", "an", "object"]', "expected a JSON object"),
    ('{"text": 42}', "not a string"),
    pytest.param('{"text": "ok", "n": ' + "1" * 5000 + "}", "unreadable JSON: Exceeds the limit",
                 marks=pytest.mark.skipif(not hasattr(sys, "get_int_max_str_digits"),
                                          reason="this Python reads integers of any length")),
])
def test_bad_jsonl_line(tmp_path, capsys, line, reason):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"text": "fine"}\n' + line + "\n", encoding="utf-8")
    rc, _, err = run(["encode", "--input", str(src), "--output", str(tmp_path / "out")], capsys)
    assert rc == 2
    assert f"{src}:2: " in err and reason in err
    assert "Traceback" not in err
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["complete"] is False and "shards" not in manifest
    assert manifest["stopped"].startswith(f"{src}:2: ") and reason in manifest["stopped"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["manifest.json"]


def test_bad_utf8_and_missing_file(tmp_path, capsys):
    src = tmp_path / "bad.txt"
    src.write_bytes(b"ok\n\xff\xfe\n")
    rc, _, err = run(["encode", "--lines", "--input", str(src)], capsys)
    assert rc == 2 and f"{src}:2: invalid UTF-8" in err
    rc, _, err = run(["encode", "--input", str(tmp_path / "nope.txt")], capsys)
    assert rc == 2 and "no such file" in err
    rc, _, err = run(["encode", "--input", str(tmp_path / "*.none")], capsys)
    assert rc == 2 and "no file matches" in err


def test_malformed_json_via_subprocess(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"text": "a"}\n{"text": "b"}\n{oops\n', encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "gpu_tok", "encode", "--input", str(src)],
                          capture_output=True, text=True, cwd=REPO, timeout=300, env=repo_env())
    assert proc.returncode == 2
    assert f"{src}:3: malformed JSON" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.fixture
def isolated_lookup(tmp_path, monkeypatch):
    """Point every tokenizer look-up at empty temporary folders, offline."""
    monkeypatch.setenv("GPU_TOK_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_unknown_tokenizer_name(isolated_lookup, capsys):
    src = isolated_lookup / "a.txt"
    src.write_text("x", encoding="utf-8")
    rc, _, err = run(["encode", "--tokenizer", "no-such-org/no-such-model", "--input", str(src)],
                     capsys)
    assert rc == 2
    assert "no tokenizer.json found for 'no-such-org/no-such-model'" in err
    assert str(isolated_lookup / "models" / "no-such-org" / "no-such-model" / "tokenizer.json") in err
    assert "models--no-such-org--no-such-model" in err
    assert "HF_HUB_OFFLINE" in err
    assert "Traceback" not in err


# ---------------------------------------------------------------- resolution

def test_resolve_paths_and_models_dir(isolated_lookup):
    tmp = isolated_lookup
    f = tmp / "models" / "fam" / "tokenizer.json"
    f.parent.mkdir(parents=True)
    f.write_text("{}")
    assert resolve_tokenizer(f) == f
    assert resolve_tokenizer(f.parent) == f
    assert resolve_tokenizer("fam") == f
    (tmp / "empty").mkdir()
    with pytest.raises(TokenizerNotFound, match="has no tokenizer.json"):
        resolve_tokenizer(tmp / "empty")


def test_resolve_hf_cache(isolated_lookup):
    repo = isolated_lookup / "hub" / "models--org--name"
    for rev, mtime in [("aaa", 1_000_000), ("bbb", 2_000_000)]:
        p = repo / "snapshots" / rev / "tokenizer.json"
        p.parent.mkdir(parents=True)
        p.write_text(rev)
        os.utime(p, (mtime, mtime))
    assert resolve_tokenizer("org/name").read_text() == "bbb"  # newest snapshot
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("aaa\n")
    assert resolve_tokenizer("org/name").read_text() == "aaa"  # what refs/main points at


def test_dtype_comes_from_the_vocabulary():
    assert token_dtype(4000) == np.uint16
    assert token_dtype(65536) == np.uint16  # ids 0..65535
    assert token_dtype(65537) == np.int32
    assert token_dtype(262_144) == np.int32
