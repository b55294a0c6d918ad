"""End-to-end tests of ``gpu-tok encode`` as a corpus job: every output format read back by its
consumer's own reader (pyarrow, numpy, a Megatron ``.idx`` reader written here from the
documented format), shards, kill-and-resume equality, bad input, BOS/EOS, progress,
``gpu-tok verify`` and ``gpu-tok bench``.

Small generated files use the embedded default tokenizer; real models and corpora come from
``../shared`` (``GPU_TOK_MODELS`` / ``GPU_TOK_CORPORA``) and are skipped with the reason when
absent.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
import re
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import gpu_tok
from gpu_tok import bulk, cli
from gpu_tok.megatron_idx import IndexedDataset, index_bytes, read_index
from gpu_tok.resolve import default_tokenizer_path

from _cli_texts import TEXTS
from _paths import corpora_dir, model_file, models_dir

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- helpers

def repo_env(**extra):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(args, capsys):
    rc = cli.main(args)
    out, err = capsys.readouterr()
    return rc, out, err


def run_proc(args, timeout=300, **env):
    return subprocess.run([sys.executable, "-m", "gpu_tok"] + args, capture_output=True, text=True,
                          env=repo_env(**env), timeout=timeout)


@pytest.fixture(scope="module")
def default_tok():
    return gpu_tok.Tokenizer.from_file(str(default_tokenizer_path()))


def ours(tok, texts, add_special_tokens=False):
    b = tok.encode_batch_ids(texts, add_special_tokens=add_special_tokens, device="cpu")
    return b.to_list()


def corpus_texts(n_docs=300, seed=0):
    """Varied generated documents (the test texts, repeated with numbers and lengths varying)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_docs):
        base = TEXTS[i % len(TEXTS)]
        out.append(f"{base} #{i} " + " ".join(TEXTS[j] for j in rng.integers(0, len(TEXTS), i % 5)))
    return out


def write_jsonl(path: Path, texts, field="text", ids=None):
    lines = []
    for i, t in enumerate(texts):
        rec = {"id": ids[i] if ids is not None else f"doc-{i}", field: t}
        lines.append(json.dumps(rec, ensure_ascii=False) + "\n")
    data = "".join(lines).encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    elif path.suffix == ".zst":
        zstandard = pytest.importorskip("zstandard")
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    return path


def write_parquet(path: Path, texts, ids=None, field="text"):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    cols = {field: pa.array(texts, type=pa.string())}
    if ids is not None:
        cols["id"] = pa.array(ids)
    pq.write_table(pa.table(cols), str(path), row_group_size=37)
    return path


def megatron_arrays(prefix: str):
    """``(flat ids, tokens per document, dtype)`` of ``PREFIX.bin`` + ``PREFIX.idx``, read the way
    Megatron-LM's IndexedDataset reads them (written here from the documented format,
    independent of gpu_tok.megatron_idx): header ``MMIDIDX\\0\\0``, version u64, dtype code u8,
    sequence count u64, document-index count u64, then int32 lengths, int64 byte pointers,
    int64 document index; sequence ``i`` is ``lengths[i]`` items at byte ``pointers[i]`` of the .bin."""
    with open(prefix + ".idx", "rb") as f:
        assert f.read(9) == b"MMIDIDX\x00\x00"
        assert struct.unpack("<Q", f.read(8))[0] == 1
        code = struct.unpack("<B", f.read(1))[0]
        n_seq, n_doc = struct.unpack("<QQ", f.read(16))
        offset = f.tell()
    dtype = np.dtype({1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 8: np.uint16}[code])
    idx = np.memmap(prefix + ".idx", mode="r", dtype=np.uint8)
    lengths = np.frombuffer(idx, np.int32, n_seq, offset)
    pointers = np.frombuffer(idx, np.int64, n_seq, offset + lengths.nbytes)
    doc_index = np.frombuffer(idx, np.int64, n_doc, offset + lengths.nbytes + pointers.nbytes)
    assert doc_index[0] == 0 and doc_index[-1] == n_seq and np.all(np.diff(doc_index) >= 0)
    size = os.path.getsize(prefix + ".bin")
    data = np.memmap(prefix + ".bin", mode="r", dtype=np.uint8) if size else np.zeros(0, np.uint8)
    # sequences are contiguous and in order when every pointer follows the previous sequence
    ends = pointers + lengths.astype(np.int64) * dtype.itemsize
    assert np.array_equal(pointers[1:], ends[:-1]) and (n_seq == 0 or (pointers[0] == 0 and ends[-1] == size))
    flat = np.frombuffer(data, dtype, size // dtype.itemsize)
    seq_start = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    doc_lens = seq_start[doc_index[1:]] - seq_start[doc_index[:-1]]
    return flat, doc_lens, dtype


def megatron_read(prefix: str):
    """Documents (lists of ids) and dtype of a Megatron prefix."""
    flat, lens, dtype = megatron_arrays(prefix)
    bounds = np.concatenate([[0], np.cumsum(lens)])
    return [flat[bounds[d]:bounds[d + 1]].tolist() for d in range(len(lens))], dtype


def read_bin_output(out: Path):
    docs, dtypes = [], set()
    for idx in sorted(out.glob("shard-*.idx")):
        d, dt = megatron_read(str(idx)[:-4])
        docs += d
        dtypes.add(np.dtype(dt))
    return docs, dtypes


def read_parquet_output(out: Path, id_col=None):
    pq = pytest.importorskip("pyarrow.parquet")
    docs, ids = [], []
    for p in sorted(out.glob("shard-*.parquet")):
        t = pq.read_table(p)
        assert str(t.schema.field("input_ids").type) == "list<element: int32>"
        docs += t.column("input_ids").to_pylist()
        if id_col:
            ids += t.column(id_col).to_pylist()
    return (docs, ids) if id_col else docs


def read_npy_output(out: Path):
    docs = []
    for p in sorted(out.glob("shard-*.ids.npy")):
        ids = np.load(p, mmap_mode="r")
        rs = np.load(str(p).replace(".ids.npy", ".row_splits.npy"))
        assert rs.dtype == np.int64 and rs[0] == 0 and rs[-1] == ids.size
        docs += [ids[rs[i]:rs[i + 1]].tolist() for i in range(len(rs) - 1)]
    return docs


READERS = {"bin": lambda out: read_bin_output(out)[0], "parquet": read_parquet_output, "npy": read_npy_output}


def committed(out: Path) -> int:
    """Shards committed so far: complete lines of the commit log ``shards.jsonl``."""
    p = out / "shards.jsonl"
    return sum(1 for line in open(p, "rb") if line.endswith(b"\n")) if p.is_file() else 0


def manifest_of(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text(encoding="utf-8"))


def comparable(manifest: dict) -> dict:
    """A manifest without what may differ between equal runs (timings, where the files are)."""
    m = json.loads(json.dumps(manifest))
    m.pop("timing", None)
    m["tokenizer"].pop("path", None)
    for rec in m["inputs"]:
        rec.pop("path")
    for rec in m["skipped"]["records"]:
        rec.pop("file")
    return m


def assert_same_output(a: Path, b: Path, ignore=()):
    names_a = sorted(p.name for p in a.iterdir() if p.name not in ignore)
    names_b = sorted(p.name for p in b.iterdir() if p.name not in ignore)
    assert names_a == names_b
    for name in names_a:
        if name != "manifest.json":
            assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert comparable(manifest_of(a)) == comparable(manifest_of(b))


def need_model(name):
    p = model_file(name)
    if not p.is_file():
        pytest.skip(f"model {name!r} not available: {p} does not exist (set GPU_TOK_MODELS)")
    return p


def need_bench(name):
    p = corpora_dir() / "bench" / f"{name}.jsonl"
    if not p.is_file():
        pytest.skip(f"bench corpus {p} not available (set GPU_TOK_CORPORA)")
    return p


def need_rank_file(name):
    p = models_dir() / "tiktoken" / f"{name}.tiktoken"
    if not p.is_file():
        pytest.skip(f"tiktoken rank file {p} not available (set GPU_TOK_MODELS)")
    return p


# ---------------------------------------------------------------- the Megatron index

def test_idx_hand_checked_example(tmp_path):
    # three documents of 3, 0 and 2 uint16 tokens, laid out by hand from the format
    expected = bytes.fromhex(
        "4d4d4944494458 0000"            # b"MMIDIDX\0\0"
        "0100000000000000"               # version 1
        "08"                             # dtype code 8 = uint16
        "0300000000000000"               # 3 sequences
        "0400000000000000"               # 4 document-index entries
        "03000000 00000000 02000000"     # lengths (int32)
        "0000000000000000 0600000000000000 0600000000000000"  # byte pointers: 0, 3*2, 3*2+0
        "0000000000000000 0100000000000000 0200000000000000 0300000000000000")  # document index
    got = index_bytes(np.array([3, 0, 2]), np.uint16)
    assert got == expected and len(got) == 34 + 3 * 4 + 3 * 8 + 4 * 8
    (tmp_path / "x.idx").write_bytes(got)
    (tmp_path / "x.bin").write_bytes(np.array([7, 8, 9, 65535, 1], "<u2").tobytes())
    ds = IndexedDataset(tmp_path / "x")
    assert [ds[i].tolist() for i in range(len(ds))] == [[7, 8, 9], [], [65535, 1]]
    assert megatron_read(str(tmp_path / "x"))[0] == [[7, 8, 9], [], [65535, 1]]
    idx = read_index(tmp_path / "x.idx")
    assert idx.pointers.tolist() == [0, 6, 6] and idx.doc_idx.tolist() == [0, 1, 2, 3]


def test_idx_round_trip_int32_and_empty(tmp_path):
    sizes = np.array([1, 4, 0, 2])
    ids = np.array([200_000, 1, 2, 3, 4, 5, 131_071], np.int32)
    (tmp_path / "a.idx").write_bytes(index_bytes(sizes, np.int32))
    (tmp_path / "a.bin").write_bytes(ids.astype("<i4").tobytes())
    idx = read_index(tmp_path / "a.idx")
    assert idx.dtype == np.int32 and idx.pointers.tolist() == [0, 4, 20, 20]
    ds = IndexedDataset(tmp_path / "a")
    assert [ds[i].tolist() for i in range(4)] == [[200_000], [1, 2, 3, 4], [], [5, 131_071]]
    (tmp_path / "e.idx").write_bytes(index_bytes(np.zeros(0, np.int64), np.uint16))
    (tmp_path / "e.bin").write_bytes(b"")
    assert len(IndexedDataset(tmp_path / "e")) == 0 and megatron_read(str(tmp_path / "e"))[0] == []
    (tmp_path / "bad.idx").write_bytes(b"MMIDIDX\x00\x00" + b"\x02" + b"\x00" * 30)
    with pytest.raises(ValueError, match="version"):
        read_index(tmp_path / "bad.idx")


# ---------------------------------------------------------------- formats, small files

@pytest.mark.parametrize("fmt", ["bin", "parquet", "npy"])
def test_each_format_read_back_by_its_reader(tmp_path, capsys, default_tok, fmt):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    texts = corpus_texts(200)
    src = write_jsonl(tmp_path / "docs.jsonl", texts)
    out = tmp_path / "out"
    rc, stdout, err = run(["encode", "--input", str(src), "--output", str(out), "--format", fmt,
                           "--shard-bytes", "2000", "--quiet"], capsys)
    assert rc == 0, err
    assert READERS[fmt](out) == ours(default_tok, texts)
    m = manifest_of(out)
    assert m["complete"] and m["documents"] == 200 and len(m["shards"]) > 3
    assert m["dtype"] == "uint16" and m["megatron_dtype_code"] == (8 if fmt == "bin" else None)
    # shards close after the document that reaches --shard-bytes: all but the last reach it
    assert all(sh["bytes"] >= 2000 for sh in m["shards"][:-1])
    assert sum(sh["documents"] for sh in m["shards"]) == 200
    assert [sh["first_document"] for sh in m["shards"]] == list(
        np.cumsum([0] + [sh["documents"] for sh in m["shards"][:-1]]))
    for sh in m["shards"]:
        for name, info in sh["files"].items():
            assert (out / name).stat().st_size == info["bytes"]
            assert gpu_tok._util.sha256_file(out / name) == info["sha256"]
    assert stdout.strip().splitlines()[-1].startswith(f"200 documents, {m['tokens']} tokens, {m['bytes']} bytes")


def test_shard_boundaries_do_not_depend_on_batches_or_threads(tmp_path, capsys):
    src = write_jsonl(tmp_path / "docs.jsonl", corpus_texts(150))
    base = ["encode", "--input", str(src), "--shard-bytes", "3000", "--quiet"]
    rc, _, err = run(base + ["--output", str(tmp_path / "a")], capsys)
    assert rc == 0, err
    rc, _, err = run(base + ["--output", str(tmp_path / "b"), "--batch-bytes", "100", "--num-threads", "1",
                             "--batch-size", "3"], capsys)
    assert rc == 0, err
    rc, _, err = run(base + ["--output", str(tmp_path / "c"), "--device", "ref"], capsys)
    assert rc == 0, err
    assert_same_output(tmp_path / "a", tmp_path / "b")
    assert_same_output(tmp_path / "a", tmp_path / "c")


def test_shard_docs_and_file_names(tmp_path, capsys):
    src = write_jsonl(tmp_path / "docs.jsonl", corpus_texts(25))
    rc, _, err = run(["encode", "--input", str(src), "--output", str(tmp_path / "o"), "--shard-docs", "10",
                      "--quiet"], capsys)
    assert rc == 0, err
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        "manifest.json", "shard-00000.bin", "shard-00000.idx", "shard-00001.bin", "shard-00001.idx",
        "shard-00002.bin", "shard-00002.idx"]
    assert [sh["documents"] for sh in manifest_of(tmp_path / "o")["shards"]] == [10, 10, 5]


def test_inputs_of_every_kind(tmp_path, capsys, default_tok):
    pytest.importorskip("pyarrow")
    pytest.importorskip("zstandard")
    a, b, c = corpus_texts(30, 1), corpus_texts(20, 2), corpus_texts(10, 3)
    write_jsonl(tmp_path / "1.jsonl.gz", a)
    write_jsonl(tmp_path / "2.jsonl.zst", b)
    write_parquet(tmp_path / "3.parquet", c)
    (tmp_path / "4.txt.zst").write_bytes(__import__("zstandard").ZstdCompressor().compress(b"x\ny\r\n\nz"))
    (tmp_path / "5.txt").write_text("one whole file\nof text", encoding="utf-8")
    rc, _, err = run(["encode", "--input", str(tmp_path / "[1-3].*"), str(tmp_path / "4.txt.zst"),
                      str(tmp_path / "5.txt"), "--output", str(tmp_path / "o"), "--format", "npy", "--quiet"],
                     capsys)
    assert rc == 0, err
    # without --lines a text file is one document, .zst or not
    texts = a + b + c + ["x\ny\r\n\nz", "one whole file\nof text"]
    assert read_npy_output(tmp_path / "o") == ours(default_tok, texts)
    m = manifest_of(tmp_path / "o")
    assert [r["format"] for r in m["inputs"]] == ["jsonl", "jsonl", "parquet", "text", "text"]
    assert [r["documents"] for r in m["inputs"]] == [30, 20, 10, 1, 1]
    rc, _, err = run(["encode", "--lines", "--input", str(tmp_path / "4.txt.zst"), "--output",
                      str(tmp_path / "l"), "--format", "npy", "--quiet"], capsys)
    assert rc == 0, err
    assert read_npy_output(tmp_path / "l") == ours(default_tok, ["x", "y", "", "z"])


def test_parquet_output_carries_ids(tmp_path, capsys, default_tok):
    pytest.importorskip("pyarrow")
    texts = corpus_texts(40)
    # JSONL string ids (the default 'id' field), and int ids
    write_jsonl(tmp_path / "s.jsonl", texts)
    write_jsonl(tmp_path / "i.jsonl", texts, ids=list(range(100, 140)))
    write_parquet(tmp_path / "p.parquet", texts, ids=list(range(40)))
    for name, want in [("s.jsonl", [f"doc-{i}" for i in range(40)]), ("i.jsonl", list(range(100, 140))),
                       ("p.parquet", list(range(40)))]:
        out = tmp_path / ("o_" + name)
        rc, _, err = run(["encode", "--input", str(tmp_path / name), "--output", str(out), "--format", "parquet",
                          "--shard-docs", "15", "--quiet"], capsys)
        assert rc == 0, err
        docs, ids = read_parquet_output(out, "id")
        assert docs == ours(default_tok, texts) and ids == want
        assert manifest_of(out)["id_column"]["type"] == ("string" if name == "s.jsonl" else "int64")
    # --id-field '' leaves it out; --id-field names another field
    rc, _, err = run(["encode", "--input", str(tmp_path / "s.jsonl"), "--output", str(tmp_path / "none"),
                      "--format", "parquet", "--id-field", "", "--quiet"], capsys)
    assert rc == 0, err
    pq = pytest.importorskip("pyarrow.parquet")
    assert pq.read_table(tmp_path / "none" / "shard-00000.parquet").column_names == ["input_ids"]
    rc, _, err = run(["encode", "--input", str(tmp_path / "s.jsonl"), "--output", str(tmp_path / "txt"),
                      "--format", "parquet", "--id-field", "text", "--quiet"], capsys)
    assert rc == 0, err
    assert read_parquet_output(tmp_path / "txt", "text")[1] == texts
    rc, _, err = run(["encode", "--input", str(tmp_path / "s.jsonl"), "--output", str(tmp_path / "no"),
                      "--format", "parquet", "--id-field", "nope"], capsys)
    assert rc == 2 and "--id-field nope" in err


def test_parquet_row_groups(tmp_path, capsys, default_tok, monkeypatch):
    """A row group closes after the document that reaches ROW_GROUP_TOKENS ids or ROW_GROUP_ROWS rows."""
    pq = pytest.importorskip("pyarrow.parquet")
    from gpu_tok import shards

    monkeypatch.setattr(shards, "ROW_GROUP_TOKENS", 50)
    monkeypatch.setattr(shards, "ROW_GROUP_ROWS", 7)
    texts = corpus_texts(60)
    src = write_jsonl(tmp_path / "d.jsonl", texts)
    rc, _, err = run(["encode", "--input", str(src), "--output", str(tmp_path / "o"), "--format", "parquet",
                      "--batch-bytes", "300", "--quiet"], capsys)
    assert rc == 0, err
    lens = [len(r) for r in ours(default_tok, texts)]
    want, rows, toks = [], 0, 0
    for n in lens:
        rows, toks = rows + 1, toks + n
        if toks >= 50 or rows >= 7:
            want.append(rows)
            rows = toks = 0
    want += [rows] if rows else []
    md = pq.ParquetFile(tmp_path / "o" / "shard-00000.parquet").metadata
    assert [md.row_group(g).num_rows for g in range(md.num_row_groups)] == want
    assert read_parquet_output(tmp_path / "o") == ours(default_tok, texts)


def test_mixed_id_types(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    src = tmp_path / "m.jsonl"
    src.write_text('{"id": "a", "text": "x"}\n{"id": 7, "text": "y"}\n{"text": "no id"}\n', encoding="utf-8")
    rc, _, err = run(["encode", "--input", str(src), "--output", str(tmp_path / "o"), "--format", "parquet",
                      "--quiet"], capsys)
    assert rc == 0, err
    assert read_parquet_output(tmp_path / "o", "id")[1] == ["a", "7", None]  # ints in a string column
    src.write_text('{"id": 1, "text": "x"}\n{"id": "b", "text": "y"}\n', encoding="utf-8")
    rc, _, err = run(["encode", "--input", str(src), "--output", str(tmp_path / "o2"), "--format", "parquet"],
                     capsys)
    assert rc == 2 and f"{src}:2: id 'id' is str" in err


@pytest.mark.parametrize("fmt", ["bin", "npy", "parquet"])
def test_empty_documents(tmp_path, capsys, fmt):
    """Empty lines are documents of no tokens (with --append-eos: just EOS); they count toward
    --shard-docs and --batch-size, so a run of them cannot grow a batch or a shard without bound."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    src = tmp_path / "e.txt"
    src.write_bytes(b"\n" * 1000)
    rc, _, err = run(["encode", "--lines", "--input", str(src), "--output", str(tmp_path / "o"), "--format", fmt,
                      "--batch-size", "64", "--shard-docs", "300", "--quiet"], capsys)
    assert rc == 0, err
    assert READERS[fmt](tmp_path / "o") == [[]] * 1000
    assert [sh["documents"] for sh in manifest_of(tmp_path / "o")["shards"]] == [300, 300, 300, 100]
    rc, _, err = run(["encode", "--lines", "--input", str(src), "--output", str(tmp_path / "e"), "--format", fmt,
                      "--append-eos", "--eos-token", "<|endoftext|>", "--quiet"], capsys)
    assert rc == 0, err
    eos = gpu_tok.Tokenizer.from_file(str(default_tokenizer_path())).token_to_id("<|endoftext|>")
    assert READERS[fmt](tmp_path / "e") == [[eos]] * 1000


def test_empty_corpus(tmp_path, capsys):
    src = tmp_path / "e.jsonl"
    src.write_text("\n\n", encoding="utf-8")
    rc, out, err = run(["encode", "--input", str(src), "--output", str(tmp_path / "o")], capsys)
    assert rc == 0, err
    m = manifest_of(tmp_path / "o")
    assert m["complete"] and m["documents"] == 0 and m["shards"] == []
    assert out.strip().splitlines()[-1].startswith("0 documents, 0 tokens, 0 bytes")


def test_jsonl_and_text_run_without_pyarrow_or_zstandard(tmp_path):
    """With both packages made unimportable, JSONL and text inputs to bin and npy still work."""
    src = write_jsonl(tmp_path / "d.jsonl", TEXTS)
    (tmp_path / "t.txt.gz").write_bytes(gzip.compress(b"plain\ntext"))
    code = ("import sys; sys.modules['pyarrow'] = sys.modules['zstandard'] = None; "
            "from gpu_tok.cli import main; "
            f"assert main(['encode', '--input', {str(src)!r}, {str(tmp_path / 't.txt.gz')!r}, '--lines', "
            f"'--output', {str(tmp_path / 'o')!r}, '--quiet']) == 0; "
            f"assert main(['encode', '--input', {str(src)!r}, '--format', 'npy', "
            f"'--output', {str(tmp_path / 'n')!r}, '--quiet']) == 0")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=repo_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert manifest_of(tmp_path / "o")["documents"] == len(TEXTS) + 2


def test_missing_optional_packages_are_named(tmp_path, capsys, monkeypatch):
    src = write_jsonl(tmp_path / "d.jsonl", TEXTS)
    (tmp_path / "d.txt.zst").write_bytes(b"\x28\xb5\x2f\xfd")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    monkeypatch.setitem(sys.modules, "zstandard", None)
    rc, _, err = run(["encode", "--input", str(src), "--output", str(tmp_path / "o"), "--format", "parquet"],
                     capsys)
    assert rc == 2 and "--format parquet needs the 'pyarrow' package" in err
    (tmp_path / "p.parquet").write_bytes(b"PAR1")
    rc, _, err = run(["encode", "--input", str(tmp_path / "p.parquet")], capsys)
    assert rc == 2 and "reading Parquet input needs the 'pyarrow' package" in err
    rc, _, err = run(["encode", "--input", str(tmp_path / "d.txt.zst")], capsys)
    assert rc == 2 and "reading .zst input needs the 'zstandard' package" in err


# ---------------------------------------------------------------- resume and crashes

def _kill_inputs(tmp_path, kind):
    texts = corpus_texts(160, 5)
    if kind == "jsonl":
        return [write_jsonl(tmp_path / "in.jsonl", texts)], []
    if kind == "jsonl.gz":
        return [write_jsonl(tmp_path / "in1.jsonl.gz", texts[:90]), write_jsonl(tmp_path / "in2.jsonl", texts[90:])], []
    if kind == "parquet":
        pytest.importorskip("pyarrow")
        return [write_parquet(tmp_path / "in.parquet", texts, ids=list(range(160)))], []
    if kind == "lines.zst":
        zstandard = pytest.importorskip("zstandard")
        data = "\n".join(t.replace("\n", " ").replace("\r", " ") for t in texts).encode("utf-8")
        (tmp_path / "in.txt.zst").write_bytes(zstandard.ZstdCompressor().compress(data))
        return [tmp_path / "in.txt.zst"], ["--lines"]
    raise AssertionError(kind)


@pytest.mark.parametrize("fmt, kind, point", [
    ("bin", "jsonl", "before_rename"),
    ("bin", "jsonl.gz", "before_commit"),
    ("parquet", "parquet", "before_rename"),
    ("npy", "lines.zst", "before_commit"),
])
def test_kill_hook_then_resume_is_byte_identical(tmp_path, capsys, fmt, kind, point):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    inputs, extra = _kill_inputs(tmp_path, kind)
    args = ["encode", "--input"] + [str(p) for p in inputs] + extra + ["--format", fmt, "--shard-docs", "17",
                                                                       "--quiet"]
    rc, _, err = run(args + ["--output", str(tmp_path / "whole")], capsys)
    assert rc == 0, err
    out = tmp_path / "killed"
    proc = run_proc(args + ["--output", str(out)], GPU_TOK_TEST_KILL_AFTER_SHARDS=3,
                    GPU_TOK_TEST_KILL_POINT=point)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert manifest_of(out)["complete"] is False and committed(out) == 3
    leftovers = sorted(p.name for p in out.iterdir() if p.name not in ("manifest.json", "shards.jsonl"))
    if point == "before_rename":
        assert any(n.startswith(".tmp-shard-00003") for n in leftovers)
    else:
        assert any(n.startswith("shard-00003") for n in leftovers)  # renamed, but not committed
    proc = run_proc([a for a in args if a != "--quiet"] + ["--output", str(out), "--resume"])
    assert proc.returncode == 0, proc.stderr
    assert "resuming" in proc.stderr and "after 3 committed shard(s)" in proc.stderr
    assert_same_output(tmp_path / "whole", out)


def test_sigkill_from_outside_then_resume(tmp_path, capsys):
    texts = corpus_texts(1500, 7)
    src = write_jsonl(tmp_path / "in.jsonl", texts)
    args = ["encode", "--input", str(src), "--shard-docs", "10", "--quiet"]
    out = tmp_path / "killed"
    # the reference path is slow enough to be caught in the middle
    proc = subprocess.Popen([sys.executable, "-m", "gpu_tok"] + args + ["--output", str(out), "--device", "ref"],
                            env=repo_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    try:
        while time.time() < deadline:
            if committed(out) >= 2:
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    if manifest_of(out)["complete"]:
        pytest.fail("the run finished before it could be killed")
    assert proc.returncode == -signal.SIGKILL
    assert 2 <= committed(out) < 150
    rc, _, err = run(args + ["--output", str(out), "--resume"], capsys)
    assert rc == 0, err
    rc, _, err = run(args + ["--output", str(tmp_path / "whole")], capsys)
    assert rc == 0, err
    assert_same_output(tmp_path / "whole", out)


def test_resume_refusals(tmp_path, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", corpus_texts(40))
    out = tmp_path / "o"
    base = ["encode", "--input", str(src), "--output", str(out), "--shard-docs", "10", "--quiet"]
    rc, _, err = run(["encode", "--input", str(src), "--output", str(out), "--resume"], capsys)
    assert rc == 2 and "has no manifest.json" in err
    rc, _, err = run(base, capsys)
    assert rc == 0, err
    rc, _, err = run(base, capsys)
    assert rc == 2 and "already holds a manifest.json" in err and "--overwrite" in err
    rc, out_text, err = run(base + ["--resume"], capsys)
    assert rc == 0 and "already complete" in err
    assert out_text.strip().splitlines()[-1].startswith("40 documents")
    m = manifest_of(out)
    m["complete"] = False
    (out / "manifest.json").write_text(json.dumps(m))
    rc, _, err = run(base + ["--resume", "--append-eos", "--eos-token", "<|endoftext|>"], capsys)
    assert rc == 2 and "option append_eos: was false, now true" in err
    rc, _, err = run(base[:-1] + ["--shard-docs", "11", "--resume"], capsys)
    assert rc == 2 and "option shard_docs: was 10, now 11" in err
    other = tmp_path / "tok.json"
    spec = json.loads(default_tokenizer_path().read_text(encoding="utf-8"))
    spec["added_tokens"].append({"id": 5000, "content": "<|x|>", "single_word": False, "lstrip": False,
                                 "rstrip": False, "normalized": False, "special": True})
    other.write_text(json.dumps(spec), encoding="utf-8")
    rc, _, err = run(base + ["--resume", "--tokenizer", str(other)], capsys)
    assert rc == 2 and "tokenizer SHA-256" in err
    with open(src, "a", encoding="utf-8") as f:
        f.write(json.dumps({"text": "one more"}) + "\n")
    rc, _, err = run(base + ["--resume"], capsys)
    assert rc == 2 and f"input {src} differs" in err
    rc, _, err = run(base + ["--overwrite"], capsys)
    assert rc == 0, err
    assert manifest_of(out)["documents"] == 41


def test_resume_removes_strays_and_refuses_damage(tmp_path, capsys):
    src = write_jsonl(tmp_path / "in.jsonl", corpus_texts(60))
    out = tmp_path / "o"
    args = ["encode", "--input", str(src), "--shard-docs", "10", "--quiet"]
    proc = run_proc(args + ["--output", str(out)], GPU_TOK_TEST_KILL_AFTER_SHARDS=2)
    assert proc.returncode == -signal.SIGKILL
    (out / "shard-00007.bin").write_bytes(b"garbage from some crash")
    (out / ".tmp-shard-00009.idx").write_bytes(b"x")
    with open(out / "shards.jsonl", "ab") as f:  # a torn line: the append of shard 2 cut short
        f.write(b'{"index": 2, "files": {"shard-00002.b')
    (out / "notes.txt").write_text("the user's own file")
    rc, _, err = run(args + ["--output", str(out), "--resume"], capsys)
    assert rc == 0, err
    names = sorted(p.name for p in out.iterdir())
    assert "notes.txt" in names and ".tmp-shard-00009.idx" not in names
    assert len(manifest_of(out)["shards"]) == 6 and "shard-00007.bin" not in names
    rc, _, err = run(args + ["--output", str(tmp_path / "whole")], capsys)
    assert rc == 0, err
    assert_same_output(tmp_path / "whole", out, ignore=["notes.txt"])
    # a committed shard that lost bytes is not taken as complete
    proc = run_proc(args + ["--output", str(tmp_path / "d")], GPU_TOK_TEST_KILL_AFTER_SHARDS=2)
    assert proc.returncode == -signal.SIGKILL
    with open(tmp_path / "d" / "shard-00001.bin", "r+b") as f:
        f.truncate(3)
    rc, _, err = run(args + ["--output", str(tmp_path / "d"), "--resume"], capsys)
    assert rc == 2 and "shard-00001.bin is missing or has the wrong size" in err


def test_stdin_output_and_no_resume(tmp_path, capsys, default_tok):
    data = "".join(json.dumps({"text": t}) + "\n" for t in TEXTS).encode("utf-8")
    proc = subprocess.run([sys.executable, "-m", "gpu_tok", "encode", "--input-format", "jsonl", "--input", "-",
                           "--output", str(tmp_path / "o"), "--quiet"], input=data, capture_output=True,
                          env=repo_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert read_bin_output(tmp_path / "o")[0] == ours(default_tok, TEXTS)
    m = manifest_of(tmp_path / "o")
    import hashlib

    assert m["inputs"][0]["sha256"] == hashlib.sha256(data).hexdigest() and m["inputs"][0]["size"] == len(data)
    rc, _, err = run(["encode", "--input", "-", "--output", str(tmp_path / "o"), "--resume"], capsys)
    assert rc == 2 and "standard input (-) cannot be read again" in err


# ---------------------------------------------------------------- bad input

def test_on_error_skip_counts_and_lists(tmp_path, capsys, default_tok, monkeypatch):
    src = tmp_path / "bad.jsonl"
    src.write_bytes(b'{"text": "good one"}\n{"text": "unterminated}\n{"body": "no text"}\n'
                    b'{"text": "good two"}\n\xff\xfe\n{"text": 42}\n{"text": "good three"}\n')
    out = tmp_path / "o"
    monkeypatch.setattr(bulk, "MAX_SKIPPED_LISTED", 3)
    rc, stdout, err = run(["encode", "--input", str(src), "--output", str(out), "--on-error", "skip",
                           "--shard-docs", "2", "--quiet"], capsys)
    assert rc == 0, err
    assert read_bin_output(out)[0] == ours(default_tok, ["good one", "good two", "good three"])
    m = manifest_of(out)
    assert m["skipped"]["count"] == 4 and m["skipped"]["listed_max"] == 3
    assert [(r["line"], r["reason"].split(":")[0]) for r in m["skipped"]["records"]] == [
        (2, "malformed JSON"), (3, "missing field 'text'"), (5, "invalid UTF-8 at byte 0")]
    assert all(r["file"] == str(src) for r in m["skipped"]["records"])
    assert [sh["skipped"] for sh in m["shards"]] == [2, 2]
    lines = stdout.strip().splitlines()
    assert lines[-2].startswith(f"skipped 4 bad record(s) (first: {src}:2: malformed JSON")
    assert lines[-1].startswith("3 documents, ")
    # the default stops at the first, naming file:line
    rc, _, err = run(["encode", "--input", str(src)], capsys)
    assert rc == 2 and f"{src}:2: malformed JSON" in err


def test_bad_text_file_and_parquet_values(tmp_path, capsys, default_tok):
    (tmp_path / "a.txt").write_bytes(b"fine")
    (tmp_path / "b.txt").write_bytes(b"bad \xc3\x28 utf-8")
    rc, _, err = run(["encode", "--input", str(tmp_path / "a.txt"), str(tmp_path / "b.txt")], capsys)
    assert rc == 2 and f"{tmp_path / 'b.txt'}: invalid UTF-8 at byte 4" in err
    rc, out, err = run(["encode", "--input", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--on-error",
                        "skip"], capsys)
    assert rc == 0 and "skipped 1 bad record(s)" in out and out.strip().splitlines()[-1].startswith("1 documents")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"text": ["a", None, "c"]}), str(tmp_path / "n.parquet"))
    rc, _, err = run(["encode", "--input", str(tmp_path / "n.parquet")], capsys)
    assert rc == 2 and f"{tmp_path / 'n.parquet'}:row 2: column 'text' is null" in err
    rc, _, err = run(["encode", "--input", str(tmp_path / "n.parquet"), "--field", "body"], capsys)
    assert rc == 2 and "no column 'body' (columns: text)" in err
    pq.write_table(pa.table({"text": pa.array([b"ok", b"\xff"], type=pa.binary())}), str(tmp_path / "b.parquet"))
    rc, _, err = run(["encode", "--input", str(tmp_path / "b.parquet"), "--output", str(tmp_path / "o"),
                      "--on-error", "skip", "--quiet"], capsys)
    assert rc == 0, err
    assert read_bin_output(tmp_path / "o")[0] == ours(default_tok, ["ok"])
    assert manifest_of(tmp_path / "o")["skipped"]["records"][0]["reason"] == "invalid UTF-8 at byte 0"
    # a string column holding bytes that are not UTF-8 (a Parquet reader does not check them)
    bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(np.array([0, 2, 7], np.int32).tobytes()),
                                                 pa.py_buffer(b"okbad\xed\xa0")])
    pq.write_table(pa.table({"text": bad}), str(tmp_path / "s.parquet"))
    rc, _, err = run(["encode", "--input", str(tmp_path / "s.parquet")], capsys)
    assert rc == 2 and f"{tmp_path / 's.parquet'}:row 2: invalid UTF-8 at byte 3" in err and "Traceback" not in err
    (tmp_path / "t.jsonl.gz").write_bytes(gzip.compress(b'{"text": "a"}\n' * 100)[:-20])
    rc, _, err = run(["encode", "--input", str(tmp_path / "t.jsonl.gz"), "--on-error", "skip"], capsys)
    assert rc == 2 and str(tmp_path / "t.jsonl.gz") in err and "Traceback" not in err


def test_a_pipe_path_is_refused_not_drained(tmp_path, capsys):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    os.mkfifo(tmp_path / "fifo")
    rc, _, err = run(["encode", "--input", str(tmp_path / "fifo"), "--output", str(tmp_path / "o")], capsys)
    assert rc == 2 and "not a regular file" in err and not (tmp_path / "o").exists()


def test_device_cuda_fails_clearly_when_unavailable(tmp_path, capsys):
    enc = bulk.load_encoder(None)
    try:
        bulk.resolve_device(enc, "cuda")
        pytest.skip("a CUDA engine is usable here")
    except bulk.BadInput:
        pass
    src = tmp_path / "a.txt"
    src.write_text("x", encoding="utf-8")
    rc, _, err = run(["encode", "--input", str(src), "--device", "cuda"], capsys)
    assert rc == 2 and "--device cuda is not usable here" in err and "Traceback" not in err


def test_the_job_asks_the_engines_for_ids_on_the_host():
    """``Encoder.encode`` asks for NumPy arrays (``return_numpy=True``: on the GPU engine its
    path for host results, not CuPy arrays copied afterwards), for tokenizer.json files and
    tiktoken encodings alike, on every device."""
    from gpu_tok.tokenizer import TokenBatch

    calls = []

    class Engine:
        def encode_batch_ids(self, texts, **kw):
            calls.append(kw)
            return TokenBatch(np.arange(len(texts), dtype=np.int32), np.arange(len(texts) + 1, dtype=np.int64))

    for kind in ("tokenizer.json", "tiktoken"):
        for device in ("cuda", "cpu"):
            ids, rs = bulk.Encoder(kind, None, Path("x"), "x", Engine()).encode(["a", "b"], False, device, 2)
            assert ids.tolist() == [0, 1] and rs.tolist() == [0, 1, 2]
    assert [(c["return_numpy"], c["device"]) for c in calls] == [(True, "cuda"), (True, "cpu")] * 2


# ---------------------------------------------------------------- BOS / EOS

# measured from the shared models' tokenizer_config.json / tokenizer.json (2026-11-30)
SPECIALS = {
    "gpt2": {"eos": ("<|endoftext|>", 50256, "config"), "bos": ("<|endoftext|>", 50256, "config")},
    "llama3": {"eos": ("<|eot_id|>", 128009, "config"), "bos": ("<|begin_of_text|>", 128000, "config")},
    "llama2": {"eos": ("</s>", 2, "config"), "bos": ("<s>", 1, "config")},
    "qwen3": {"eos": ("<|im_end|>", 151645, "config"), "bos": None},
    "roberta-base": {"eos": ("</s>", 2, "template"), "bos": ("<s>", 0, "template")},  # no tokens in its config
}


@pytest.mark.parametrize("name", sorted(SPECIALS))
def test_bos_eos_of_the_shared_models(name):
    path = need_model(name)
    enc = bulk.Encoder("tokenizer.json", str(path), path, name, gpu_tok.Tokenizer.from_file(str(path)))
    for which, want in SPECIALS[name].items():
        if want is None:
            with pytest.raises(bulk.BadInput) as e:
                bulk.special_token_id(enc, which, None)
            msg = str(e.value)
            assert "--prepend-bos: no BOS token found" in msg and "tokenizer_config.json (bos_token is null)" in msg
            assert "post-processor's template" in msg and "--bos-token" in msg
            continue
        got = bulk.special_token_id(enc, which, None)
        source = str(path.parent / "tokenizer_config.json") if want[2] == "config" else "post_processor template"
        assert (got["token"], got["id"], got["source"]) == (want[0], want[1], source)
    got = bulk.special_token_id(enc, "eos", SPECIALS[name]["eos"][0])
    assert (got["id"], got["source"]) == (SPECIALS[name]["eos"][1], "--eos-token")


def test_bos_eos_of_tiktoken_and_the_default(monkeypatch):
    need_rank_file("cl100k_base")
    monkeypatch.setenv("GPU_TOK_MODELS", str(models_dir()))
    enc = bulk.load_encoder("cl100k_base")
    assert enc.kind == "tiktoken" and enc.vocab_size == 100277
    assert bulk.special_token_id(enc, "eos", None) == {"token": "<|endoftext|>", "id": 100257,
                                                       "source": "tiktoken encoding cl100k_base"}
    assert bulk.special_token_id(enc, "bos", "<|endofprompt|>")["id"] == 100276
    default = bulk.load_encoder(None)
    with pytest.raises(bulk.BadInput, match="--append-eos: no EOS token found"):
        bulk.special_token_id(default, "eos", None)
    assert bulk.special_token_id(default, "eos", "<|endoftext|>")["id"] == default.token_to_id("<|endoftext|>")
    with pytest.raises(bulk.BadInput, match="not in the vocabulary"):
        bulk.special_token_id(default, "eos", "<|no such token|>")


def test_append_eos_prepend_bos_end_to_end(tmp_path, capsys):
    path = need_model("llama2")
    tok = gpu_tok.Tokenizer.from_file(str(path))
    texts = corpus_texts(30)
    src = write_jsonl(tmp_path / "d.jsonl", texts)
    rc, _, err = run(["encode", "--tokenizer", str(path), "--input", str(src), "--output", str(tmp_path / "o"),
                      "--append-eos", "--prepend-bos", "--quiet"], capsys)
    assert rc == 0, err
    assert read_bin_output(tmp_path / "o")[0] == [[1] + r + [2] for r in ours(tok, texts)]
    m = manifest_of(tmp_path / "o")
    assert m["special_tokens"]["eos"]["id"] == 2 and m["special_tokens"]["bos"]["id"] == 1
    assert m["options"]["eos_id"] == 2 and m["options"]["bos_id"] == 1
    # --add-special-tokens applies llama2's template (BOS) instead
    rc, _, err = run(["encode", "--tokenizer", str(path), "--input", str(src), "--output", str(tmp_path / "t"),
                      "--add-special-tokens", "--quiet"], capsys)
    assert rc == 0, err
    assert read_bin_output(tmp_path / "t")[0] == ours(tok, texts, add_special_tokens=True)


def test_add_bos_eos_arrays():
    ids = np.array([5, 6, 7], np.int32)
    rs = np.array([0, 2, 2, 3], np.int64)
    out, new_rs = bulk.add_bos_eos(ids, rs, 1, 2)
    assert out.tolist() == [1, 5, 6, 2, 1, 2, 1, 7, 2] and new_rs.tolist() == [0, 4, 6, 9]
    out, new_rs = bulk.add_bos_eos(ids, rs, None, 9)
    assert out.tolist() == [5, 6, 9, 9, 7, 9] and new_rs.tolist() == [0, 3, 4, 6]


# ---------------------------------------------------------------- real models and corpora

def flat_output(out: Path, fmt: str):
    """``(flat ids as int64, tokens per document, dtypes)`` of every shard, in order."""
    ids, lens, dtypes = [], [], set()
    if fmt == "bin":
        for idx in sorted(out.glob("shard-*.idx")):
            f, n, dt = megatron_arrays(str(idx)[:-4])
            ids.append(f.astype(np.int64))
            lens.append(n)
            dtypes.add(dt)
    elif fmt == "npy":
        for p in sorted(out.glob("shard-*.ids.npy")):
            a = np.load(p)
            rs = np.load(str(p).replace(".ids.npy", ".row_splits.npy"))
            assert rs[0] == 0 and rs[-1] == a.size
            ids.append(a.astype(np.int64))
            lens.append(np.diff(rs))
            dtypes.add(a.dtype)
    else:
        pq = pytest.importorskip("pyarrow.parquet")
        import pyarrow.compute as pc

        for p in sorted(out.glob("shard-*.parquet")):
            col = pq.read_table(p).column("input_ids").combine_chunks()
            assert str(col.type) == "list<element: int32>"
            ids.append(col.flatten().to_numpy().astype(np.int64))
            lens.append(pc.list_value_length(col).to_numpy())
            dtypes.add(np.dtype(np.int32))
    return np.concatenate(ids), np.concatenate(lens).astype(np.int64), dtypes


@pytest.mark.parametrize("model, fmt", [("gpt2", "bin"), ("llama3", "bin"), ("gpt-4o", "parquet"),
                                        ("gpt2", "npy")])
def test_real_corpus_real_model(tmp_path, capsys, model, fmt):
    """The real command on the real bench files equals ``encode_batch_ids`` on their texts."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    path = need_model(model)
    files = [need_bench(n) for n in ("code", "english_prose", "multilingual")]
    files = files if fmt == "bin" else files[2:]
    out = tmp_path / "o"
    rc, stdout, err = run(["encode", "--tokenizer", str(path), "--input"] + [str(f) for f in files] +
                          ["--output", str(out), "--format", fmt, "--shard-bytes", "8MiB", "--quiet"], capsys)
    assert rc == 0, err
    texts = [json.loads(line)["text"] for f in files for line in open(f, encoding="utf-8") if line.strip()]
    tok = gpu_tok.Tokenizer.from_file(str(path))
    want = tok.encode_batch_ids(texts, add_special_tokens=False, device="cpu")
    flat, lens, dtypes = flat_output(out, fmt)
    assert np.array_equal(lens, np.diff(want.row_splits))
    assert np.array_equal(flat, want.ids.astype(np.int64))
    if fmt != "parquet":
        assert dtypes == {np.dtype(np.uint16) if model == "gpt2" else np.dtype(np.int32)}
    m = manifest_of(out)
    assert m["documents"] == len(texts) and m["tokens"] == int(want.ids.size) and len(m["shards"]) > 1
    assert [r["sha256"] for r in m["inputs"]] == [gpu_tok._util.sha256_file(f) for f in files]


def test_tiktoken_name_end_to_end(tmp_path, capsys, monkeypatch):
    tiktoken = pytest.importorskip("tiktoken")
    rank = need_rank_file("cl100k_base")
    monkeypatch.setenv("GPU_TOK_MODELS", str(models_dir()))
    texts = corpus_texts(60)  # includes a literal <|endoftext|>: ordinary text, as encode_ordinary
    src = write_jsonl(tmp_path / "d.jsonl", texts)
    rc, _, err = run(["encode", "--tokenizer", "cl100k_base", "--input", str(src), "--output", str(tmp_path / "o"),
                      "--append-eos", "--quiet"], capsys)
    assert rc == 0, err
    from gpu_tok.tiktoken_encoding import load_tiktoken_bpe, named_definition

    d = named_definition("cl100k_base")
    ref = tiktoken.Encoding("cl100k_base", pat_str=d["pat_str"], mergeable_ranks=load_tiktoken_bpe(rank),
                            special_tokens=d["special_tokens"], explicit_n_vocab=d["explicit_n_vocab"])
    docs, dtypes = read_bin_output(tmp_path / "o")
    assert docs == [r + [100257] for r in ref.encode_ordinary_batch(texts)]
    assert dtypes == {np.dtype(np.int32)}
    m = manifest_of(tmp_path / "o")
    assert m["tokenizer"]["kind"] == "tiktoken" and m["tokenizer"]["sha256"] == gpu_tok._util.sha256_file(rank)
    rc, _, err = run(["encode", "--tokenizer", "cl100k_base", "--input", str(src), "--add-special-tokens"], capsys)
    assert rc == 2 and "tiktoken encoding has no post-processor" in err
    monkeypatch.setenv("GPU_TOK_MODELS", str(tmp_path / "none"))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "none"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "none"))
    rc, _, err = run(["encode", "--tokenizer", "cl100k_base", "--input", str(src)], capsys)
    assert rc == 2 and "tiktoken rank file" in err and "cl100k_base.tiktoken" in err


# ---------------------------------------------------------------- progress

def test_progress_lines_when_not_a_terminal(tmp_path, capsys, monkeypatch):
    src = write_jsonl(tmp_path / "d.jsonl", corpus_texts(50))
    monkeypatch.setenv("GPU_TOK_PROGRESS_INTERVAL", "0")
    rc, out, err = run(["encode", "--input", str(src), "--batch-size", "10"], capsys)
    assert rc == 0
    lines = [x for x in err.splitlines() if x.startswith("gpu-tok: [")]
    assert len(lines) >= 5
    assert all(" docs, " in x and " MB/s, " in x and " Mtok/s" in x and "ETA" in x for x in lines)
    assert "\r" not in err
    rc, out, err = run(["encode", "--input", str(src), "--quiet"], capsys)
    assert rc == 0 and "gpu-tok: [" not in err and len(out.strip().splitlines()) == 1


def test_setup_notice_when_set_up_is_slow(tmp_path, capsys, monkeypatch):
    """A set-up still running after ``bulk.SETUP_NOTICE_S`` seconds (a first run compiling the
    kernels) says why on stderr, once; a quick one, or ``--quiet``, says nothing."""
    src = write_jsonl(tmp_path / "d.jsonl", corpus_texts(20))
    warm = bulk.warm_block_reader

    def slow_warm():  # the set-up's last step, made slow
        time.sleep(0.5)
        warm()

    monkeypatch.setattr(bulk, "warm_block_reader", slow_warm)
    monkeypatch.setattr(bulk, "SETUP_NOTICE_S", 0.05)
    rc, out, err = run(["encode", "--input", str(src)], capsys)
    assert rc == 0 and err.count(bulk.SETUP_NOTICE) == 1
    rc, out, err = run(["encode", "--input", str(src), "--quiet"], capsys)
    assert rc == 0 and bulk.SETUP_NOTICE not in err
    import io

    monkeypatch.setattr(bulk, "SETUP_NOTICE_S", 0.3)
    job = bulk.EncodeJob(bulk.Options(inputs=[str(src)]), io.StringIO(), io.StringIO())
    with job._setup_notice(False):  # done before the notice is due: none, then or later
        pass
    time.sleep(0.6)
    assert job.err.getvalue() == ""
    with job._setup_notice(False):
        time.sleep(0.6)
    time.sleep(0.1)
    assert job.err.getvalue() == bulk.SETUP_NOTICE + "\n"


def test_parallel_warm_up_only_where_a_batch_can_use_it(tmp_path, capsys, monkeypatch):
    """The job's set-up loads the engine's parallel kernels (a warm-up batch past the thread
    pool's threshold) unless the inputs' sizes bound their text below it: a small plain
    file skips it (a first run then compiles the serial path only), a large one, a
    compressed one (its size bounds nothing) and standard input do not."""
    from gpu_tok.fast_cpu import _PARALLEL_MIN_BYTES

    calls = []
    encode = bulk.Encoder.encode

    def spy(self, texts, *args, **kwargs):
        calls.append(sum(len(t.encode("utf-8")) for t in texts))
        return encode(self, texts, *args, **kwargs)

    monkeypatch.setattr(bulk.Encoder, "encode", spy)
    small = write_jsonl(tmp_path / "small.jsonl", corpus_texts(20))
    big = write_jsonl(tmp_path / "big.jsonl", corpus_texts(20) * (_PARALLEL_MIN_BYTES // small.stat().st_size + 1))
    packed = tmp_path / "small.jsonl.gz"
    packed.write_bytes(gzip.compress(small.read_bytes()))
    assert bulk.text_bytes_bound([bulk.Source(str(small), "jsonl")]) == small.stat().st_size
    assert bulk.text_bytes_bound([bulk.Source(str(packed), "jsonl")]) is None
    for src, parallel_warm_up in ((small, False), (big, True), (packed, True)):
        calls.clear()
        rc, out, err = run(["encode", "--input", str(src), "--device", "cpu", "--quiet"], capsys)
        assert rc == 0
        assert any(n >= _PARALLEL_MIN_BYTES for n in calls[:2]) == parallel_warm_up, (src.name, calls)


def test_progress_bar_on_a_terminal():
    import io

    class Tty(io.StringIO):
        def isatty(self):
            return True

    s = Tty()
    p = bulk.Progress(1000, False, s, interval=0)
    p.update(10, 500_000, 100_000, 500)
    p.update(20, 1_000_000, 200_000, 1000)
    p.close()
    text = s.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and "100.0%" in text and "50.0%" in text


# ---------------------------------------------------------------- verify and bench

def test_verify_command(tmp_path, capsys, monkeypatch):
    pytest.importorskip("tokenizers")
    src = write_jsonl(tmp_path / "d.jsonl", corpus_texts(100))
    rc, out, err = run(["verify", "--input", str(src), "--sample", "20", "--seed", "3"], capsys)
    assert rc == 0, err
    assert out.strip().splitlines()[-1].startswith("verify: 20 of 100 documents sampled (seed 3)")
    assert out.strip().endswith("0 mismatches")
    from gpu_tok import verify
    from gpu_tok.corpus import Source

    def sample(seed):
        return [i for i, _, _ in verify.sample_documents([Source(str(src), "jsonl")], 20, seed, "stop", print)[0]]

    assert sample(3) == sample(3) and sample(3) != sample(4) and len(set(sample(3))) == 20
    real = bulk.Encoder.encode

    def broken(self, texts, *a, **k):
        ids, rs = real(self, texts, *a, **k)
        ids = ids.copy()
        ids[rs[1]:rs[2]] += 1  # the second sampled document differs
        return ids, rs

    monkeypatch.setattr(bulk.Encoder, "encode", broken)
    rc, out, err = run(["verify", "--input", str(src), "--sample", "20", "--seed", "3"], capsys)
    assert rc == 1
    assert f"MISMATCH document {sample(3)[1]} ({src}:{sample(3)[1] + 1}): first difference at token 0" in out
    monkeypatch.setattr(bulk.Encoder, "encode", real)
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    rc, _, err = run(["verify", "--input", str(src), "--sample", "5"], capsys)
    assert rc == 2 and "needs the reference library 'tokenizers'" in err


def test_verify_real_model(tmp_path, capsys):
    pytest.importorskip("tokenizers")
    path = need_model("llama3")
    bench = need_bench("multilingual")
    rc, out, err = run(["verify", "--tokenizer", str(path), "--input", str(bench), "--sample", "50"], capsys)
    assert rc == 0, out + err
    assert out.strip().endswith("0 mismatches")


def test_bench_smoke(tmp_path):
    need_model("gpt2")
    need_bench("code")
    args = ["--max-mb", "0.03", "--models", "gpt2", "--files", "code", "--engines", "ours", "--repeat", "1",
            "--check-docs", "3"]
    proc = run_proc(["bench"] + args, GPU_TOK_MODELS=models_dir(), GPU_TOK_CORPORA=corpora_dir())
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^ours\s+gpt2\s+code\s.*\sok \(\d+ docs ids, all counts\)$", proc.stdout, re.M), proc.stdout
    wrapper = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench.py"), "--help"], capture_output=True,
                             text=True, timeout=120, cwd=tmp_path)
    assert wrapper.returncode == 0 and "--max-mb" in wrapper.stdout


def test_bench_settles_the_allocator_before_each_timed_run(monkeypatch):
    """Each timed run starts after the C allocator has done the deferred work on the
    outputs dropped before it (``settle_allocator``), and settling stops once two
    1 MiB malloc/free pairs in a row are quick, within its bound."""
    from gpu_tok import bench

    class SlowThenQuick:  # malloc slow (as after a freed HF output) for the first `slow` calls
        def __init__(self, slow):
            self.slow, self.calls = slow, 0

        def malloc(self, n):
            self.calls += 1
            if self.calls <= self.slow:
                time.sleep(0.002)
            return 1

        def free(self, p):
            pass

    for slow, rounds, want in ((3, 16, 5), (0, 16, 2), (40, 16, 16)):
        lib = SlowThenQuick(slow)
        monkeypatch.setattr(bench, "_LIBC", lib)
        bench.settle_allocator(rounds)
        assert lib.calls == want, (slow, lib.calls)
    monkeypatch.setattr(bench, "_LIBC", False)  # no C library: nothing to do, no error
    bench.settle_allocator()

    events = []
    monkeypatch.setattr(bench, "settle_allocator", lambda: events.append("settle"))

    class Runner:
        def __init__(self, name):
            self.name = name

        def encode(self, texts):
            events.append(self.name)
            return [0]

    timed = [(bench.Result(n, "m", "f", 1, 1), Runner(n)) for n in ("a", "b")]
    bench.time_rounds(timed, ["x"], 2)
    assert events == ["settle", "a", "settle", "b"] * 2
    assert all(res.seconds < 1 for res, _r in timed)


# ---------------------------------------------------------------- memory

MEM_SCRIPT = r"""
import json, sys
from gpu_tok.cli import main
rc = main(sys.argv[2:])
status = open("/proc/self/status").read().split("\n")
kb = {l.split(":")[0]: int(l.split()[1]) for l in status if l.startswith(("VmHWM", "VmRSS"))}
json.dump({"rc": rc, "hwm_kb": kb["VmHWM"], "rss_kb": kb["VmRSS"]}, open(sys.argv[1], "w"))
"""


def make_corpus(path: Path, mb: float) -> Path:
    """``mb`` MB of JSONL: the bench files' documents interleaved (prose, code, multilingual, ...)
    and repeated, so that every prefix has the same mix (generated text when they are absent)."""
    srcs = [corpora_dir() / "bench" / f"{n}.jsonl" for n in ("english_prose", "code", "multilingual")]
    per_file = [[line for line in open(p, "rb") if line.strip()] for p in srcs if p.is_file()]
    lines = [x for group in itertools.zip_longest(*per_file) for x in group if x is not None] or [
        json.dumps({"text": t}).encode() + b"\n" for t in corpus_texts(2000)]
    target = int(mb * 1e6)
    with open(path, "wb") as f:
        while f.tell() < target:
            for line in lines:
                f.write(line)
                if f.tell() >= target:
                    break
    return path


def peak_rss(tmp_path: Path, args) -> dict:
    if not Path("/proc/self/status").is_file():
        pytest.skip("peak RSS is read from /proc/self/status (Linux)")
    res = tmp_path / "mem.json"
    proc = subprocess.run([sys.executable, "-c", MEM_SCRIPT, str(res)] + args, capture_output=True, text=True,
                          env=repo_env(), timeout=1200)
    assert proc.returncode == 0, proc.stderr
    return json.loads(res.read_text())


def _memory_growth(tmp_path, model, small_mb, big_mb, batch, shard):
    small = make_corpus(tmp_path / "small.jsonl", small_mb)
    big = make_corpus(tmp_path / "big.jsonl", big_mb)
    common = ["encode", "--tokenizer", str(model), "--quiet", "--batch-bytes", batch, "--shard-bytes", shard]
    tiny = make_corpus(tmp_path / "tiny.jsonl", 0.01)
    base = peak_rss(tmp_path, common + ["--input", str(tiny), "--output", str(tmp_path / "t")])
    a = peak_rss(tmp_path, common + ["--input", str(small), "--output", str(tmp_path / "a")])
    b = peak_rss(tmp_path, common + ["--input", str(big), "--output", str(tmp_path / "b")])
    mb = lambda kb: kb / 1024  # noqa: E731
    report = (f"peak RSS (VmHWM): model+engine on a tiny input {mb(base['hwm_kb']):.0f} MiB; {small_mb:g} MB input "
              f"{mb(a['hwm_kb']):.0f} MiB; {big_mb:g} MB input {mb(b['hwm_kb']):.0f} MiB "
              f"(batch {batch}, shards {shard})")
    print(report)
    return base, a, b


def test_memory_is_bounded_ci(tmp_path):
    """A 4x larger input must not need more memory (CI-sized: 4 vs 16 MB, 1 MiB batches)."""
    model = model_file("gpt2") if model_file("gpt2").is_file() else default_tokenizer_path()
    base, a, b = _memory_growth(tmp_path, model, 4, 16, "1MiB", "4MiB")
    assert b["hwm_kb"] - a["hwm_kb"] < 40 * 1024
    assert b["hwm_kb"] - base["hwm_kb"] < 150 * 1024


@pytest.mark.full
def test_memory_is_bounded_full(tmp_path):
    """20 MB vs 100 MB of real text with the default batch and shard sizes."""
    model = need_model("gpt2")
    base, a, b = _memory_growth(tmp_path, model, 20, 100, "16MiB", "256MiB")
    assert b["hwm_kb"] - a["hwm_kb"] < 64 * 1024
    assert b["hwm_kb"] - base["hwm_kb"] < 400 * 1024


def test_wordpiece_model_and_a_file_with_truncation(tmp_path, capsys):
    """bert-base-uncased (WordPiece engine) writes the reference's ids; all-MiniLM-L6-v2
    stores truncation and padding, which the job does not apply: it stops, naming them and
    the flag; with --no-truncation-padding it writes the reference's ids after
    no_truncation() / no_padding() (and verify compares with those)."""
    bert = need_model("bert-base-uncased")
    tokenizers = pytest.importorskip("tokenizers")
    texts = corpus_texts(60)
    src = tmp_path / "in.jsonl"
    write_jsonl(src, texts)
    rc, _, err = run(["encode", "--tokenizer", str(bert), "--input", str(src), "--output", str(tmp_path / "o"),
                      "--quiet"], capsys)
    assert rc == 0, err
    ref = tokenizers.Tokenizer.from_file(str(bert))
    got, dtypes = read_bin_output(tmp_path / "o")
    assert dtypes == {np.dtype(np.uint16)}  # 30,522 ids
    assert [list(r) for r in got] == [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
    minilm = need_model("all-MiniLM-L6-v2")
    rc, _, err = run(["encode", "--tokenizer", str(minilm), "--input", str(src), "--quiet"], capsys)
    assert rc == 2 and "truncation" in err and "does not apply" in err and "--no-truncation-padding" in err
    texts2 = texts + [" ".join(texts)]  # one document past the stored 128 tokens
    src2 = write_jsonl(tmp_path / "in2.jsonl", texts2)
    rc, _, err = run(["encode", "--tokenizer", str(minilm), "--input", str(src2), "--output", str(tmp_path / "m"),
                      "--no-truncation-padding", "--quiet"], capsys)
    assert rc == 0, err
    ref = tokenizers.Tokenizer.from_file(str(minilm))
    ref.no_truncation()
    ref.no_padding()
    got, _ = read_bin_output(tmp_path / "m")
    assert [list(r) for r in got] == [e.ids for e in ref.encode_batch(texts2, add_special_tokens=False)]
    assert max(len(r) for r in got) > 128  # whole documents
    rc, out, err = run(["verify", "--tokenizer", str(minilm), "--input", str(src2), "--no-truncation-padding",
                        "--sample", "20"], capsys)
    assert rc == 0, err + out


def test_unigram_job_writes_the_references_ids(tmp_path, capsys):
    """t5-small (Unigram engine) writes the reference's ids."""
    t5 = need_model("t5-small")
    tokenizers = pytest.importorskip("tokenizers")
    texts = corpus_texts(60)
    src = tmp_path / "in.jsonl"
    write_jsonl(src, texts)
    rc, _, err = run(["encode", "--tokenizer", str(t5), "--input", str(src), "--output", str(tmp_path / "o"),
                      "--quiet"], capsys)
    assert rc == 0, err
    ref = tokenizers.Tokenizer.from_file(str(t5))
    got, dtypes = read_bin_output(tmp_path / "o")
    assert dtypes == {np.dtype(np.uint16)}  # 32,100 ids
    assert [list(r) for r in got] == [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]


@pytest.mark.parametrize("fmt", ["bin", "npy"])
def test_shard_writers_convert_ids_in_chunks(tmp_path, monkeypatch, fmt):
    """Ids converted to the shard's dtype a chunk at a time through a kept buffer
    (``shards.write_ids``; chunks of 7 ids here, batches cut inside them), and written
    as they are where they have that dtype: the files hold every id, the recorded SHA-256 is
    the file's."""
    from gpu_tok import shards as S

    monkeypatch.setattr(S, "CHUNK_IDS", 7)
    rng = np.random.default_rng(5)
    for dtype in (np.uint16, np.int32):
        batches = [rng.integers(0, 50000, n, dtype=np.int32) for n in (0, 1, 7, 20, 3)]
        out = tmp_path / f"{fmt}_{np.dtype(dtype).name}"
        out.mkdir()
        w = S.open_shard(fmt, out, 0, dtype)
        for b in batches:
            w.add(b, np.array([0, b.size], np.int64))
        files = w.commit(0)
        want = np.concatenate(batches)
        docs = read_bin_output(out)[0] if fmt == "bin" else read_npy_output(out)
        assert docs == [b.tolist() for b in batches], (fmt, dtype)
        first = out / S.shard_files(fmt, 0)[0]
        data = first.read_bytes()[S.NPY_HEADER_LEN if fmt == "npy" else 0:]
        assert data == want.astype(np.dtype(dtype).newbyteorder("<")).tobytes(), (fmt, dtype)
        for name, info in files.items():
            assert info["sha256"] == hashlib.sha256((out / name).read_bytes()).hexdigest() and info["bytes"] > 0
