"""The block reader of JSON Lines, text lines and Parquet (``corpus.iter_records(...,
blocks=True)``, ``kernels.jsonl_cpu``): the same documents, positions and errors as reading
one line (row) at a time with Python's ``json``, on hand-picked edge cases, seeded random and
mutated lines, read sizes that cut lines, real JSON files, Parquet columns of each string
type with nulls and bytes that are not UTF-8, and whole ``gpu-tok encode`` runs (shards and
manifests equal with and without blocks)."""

from __future__ import annotations

import json
import random
import sys

import numpy as np
import pytest

from gpu_tok import bulk, corpus as C
from gpu_tok.kernels.jsonl_cpu import BLANK, OK, SLOW, json_fields

from _paths import corpora_dir, parity_dir


def _id(x):
    """An id as compared: its type too (1 == 1.0 == True in Python)."""
    return "MISSING" if x is C.MISSING else (type(x).__name__, repr(x))


def flatten(src: C.Source, **kw):
    """Every document and bad record as a tuple; a block's documents as the records they
    stand for (and their byte counts checked)."""
    out = []
    for r in C.iter_records(src, **kw):
        if isinstance(r, C.Block):
            assert len(r.texts) == r.nbytes.shape[0] == r.units.shape[0] > 0
            assert r.offsets is None if src.kind == "parquet" else r.offsets.shape[0] == len(r.texts)
            ids = r.ids if r.ids is not None else [C.MISSING] * len(r.texts)
            offs = r.offsets.tolist() if r.offsets is not None else [None] * len(r.texts)  # (Parquet: None)
            for t, n, u, o, i in zip(r.texts, r.nbytes.tolist(), r.units.tolist(), offs, ids):
                assert n == len(t.encode("utf-8"))
                out.append((t, u, o, None, _id(i)))
        elif r.error:
            out.append((r.text, r.units, r.offset, r.error, r.where, r.line))
        else:
            out.append((r.text, r.units, r.offset, None, _id(r.id)))
    return out


def same_both_ways(path, kind="jsonl", lines=False, field="text", **ids):
    one = flatten(C.Source(str(path), kind, field=field, lines=lines, **ids))
    blocks = flatten(C.Source(str(path), kind, field=field, lines=lines, **ids), blocks=True)
    assert blocks == one
    return one


def statuses(lines, key=b"text", idkey=b""):
    """The kernel's status of each line, the field's UTF-8 where OK and the raw id value."""
    body = b"".join(x + b"\n" for x in lines)
    arr = np.frombuffer(body, np.uint8)
    ends = np.flatnonzero(arr == 10)
    starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)
    out = np.empty(len(body), np.uint8)
    out_end, id_start, id_end = np.empty_like(ends), np.empty_like(ends), np.empty_like(ends)
    status = np.empty(ends.shape[0], np.uint8)
    json_fields(arr, starts, ends, np.frombuffer(key, np.uint8), np.frombuffer(idkey, np.uint8), out, out_end,
                id_start, id_end, status)
    texts = [bytes(out[a:b]) if s == OK else None for a, b, s in zip(starts, out_end, status)]
    ids = [body[a:b] if s == OK and a >= 0 else None for a, b, s in zip(id_start, id_end, status)]
    return status.tolist(), texts, ids


NEST = "[" * 61 + "]" * 61
# (line, kernel status): the kernel reads it (OK), skips it (BLANK) or leaves it to json (SLOW)
CASES = [
    (rb'{"text": "a"}', OK),
    (rb'{"text":"a","text":"b"}', OK),  # json keeps the last
    (rb'{"text": 1, "text": "b"}', OK),
    (rb'{"text": "b", "text": 1}', SLOW),  # a bad record: the last is not a string
    (rb'{"t\u0065xt": "a"}', SLOW),  # an escaped key: json says it is the field
    (rb'{"text": "\ud83d\ude00 \u00E9\u00e9"}', OK),
    (rb'{"text": "\ud83d"}', SLOW),
    (rb'{"text": "\ude00\ud83d"}', SLOW),
    (rb'{"text": "\ud83d\u0041"}', SLOW),
    (rb'{"text": "a\u0000b\/\b\f\n\r\t\"\\"}', OK),
    (b'{"text": "raw\ttab"}', SLOW),
    (b'{"text": "del\x7f"}', OK),
    (rb'{"text": "x", "n": NaN}', SLOW),
    (rb'{"text": "x", "n": -Infinity}', SLOW),
    (rb'{"text": "x", "n": 01}', SLOW),
    (rb'{"text": "x", "n": 1.}', SLOW),
    (rb'{"text": "x", "n": .5}', SLOW),
    (rb'{"text": "x", "n": -}', SLOW),
    (rb'{"text": "x", "n": 1e}', SLOW),
    (rb'{"text": "x", "n": [1e5, -0.0E-7, 0, -0, 12.5e+3, true, false, null, {}, []]}', OK),
    (b'{"text": "x", "n": ' + b"1" * 4000 + b"}", OK),
    (b'{"text": "x", "n": ' + b"1" * 4001 + b"}", SLOW),  # json reads it (below 4,300 digits)
    (b'{"text": "x", "n": ' + b"1" * 4400 + b"}", SLOW),  # json refuses it
    (b'{"text": "x", "n": 0.' + b"1" * 5000 + b"}", OK),
    (rb'{"text": "x", "n": [1, [2, {"text": 3}]]}', OK),
    (rb'{"a": {"text": "inner"}}', SLOW),
    (rb'{"text": "x",}', SLOW),
    (rb'{"text": "x"} {"text": "y"}', SLOW),
    (rb'[{"text": "x"}]', SLOW),
    (b'\xef\xbb\xbf{"text": "x"}', SLOW),
    (b' \t{"text": "x"} \r', OK),
    (b'{"text": "x"}\x0b', SLOW),
    (b'\x0c', BLANK),
    (b'', BLANK),
    (b' \r\t\x0b', BLANK),
    (b'\x1c', SLOW),
    ('{"text": "é中😀"}'.encode(), OK),
    (b'{"text": "\xed\xa0\x80"}', SLOW),  # an encoded surrogate is not UTF-8
    (b'{"text": "\xe0\x80\x80 \xc0\xaf \xf4\x90\x80\x80"}', SLOW),
    (b'{"text": "x", "\xc3\xa9": "\xff"}', SLOW),
    (b'{"text": "x", "d": ' + NEST.encode() + b"}", OK),
    (b'{"text": "x", "d": [' + NEST.encode() + b"]}", SLOW),
    (b'{"text": "x", "d": ' + b"[" * 3000 + b"]" * 3000 + b"}", SLOW),  # json: too deep
    (rb'{"text": "x", "b": tru}', SLOW),
    (rb'{"text": "x", "b": nulll}', SLOW),
    (rb'{"text" : "x" }', OK),
    (rb'{"text": "\x"}', SLOW),
    (rb'{"text": "\u12g4"}', SLOW),
    (rb'{"text": "\U0041"}', SLOW),
    (rb'{"text"  "x"}', SLOW),
    (rb'{"text": "x"', SLOW),
    (rb'{"text": "x", "id": "\ud800"}', OK),  # another field may hold a lone surrogate
    (rb'{"\ud800": 1, "text": "x"}', SLOW),
    (rb'{"text": {"text": "x"}}', SLOW),
    (rb'{"text": ["x"]}', SLOW),
    (rb'{}', SLOW),
    (rb'{"text": ""}', OK),
    (rb'{"text": "x", "o": {"a": [], "b": {}, "c": [{}]}}', OK),
    (rb'{"text": "x", "o": {"a" 1}}', SLOW),
    (rb'{"text": "x", "o": {1: 2}}', SLOW),
    (rb'{"text": "x", "o": [1 2]}', SLOW),
    (rb'{"text": "x", "o": [1,]}', SLOW),
    (rb'{"text": "x", "o": [}', SLOW),
    (rb'{"text": "x", "o": {]}', SLOW),
]


def test_the_kernel_reads_what_it_should():
    """Which lines the kernel reads itself (a kernel that left every line to json would
    pass the equality tests below), and what it reads from them is json's."""
    status, texts, _ = statuses([line for line, _ in CASES])
    assert status == [want for _, want in CASES]
    for (line, _), st, text in zip(CASES, status, texts):
        if st == OK:
            assert text == json.loads(line)["text"].encode("utf-8")


def test_edge_cases_same_as_json_line_by_line(tmp_path):
    path = tmp_path / "edge.jsonl"
    path.write_bytes(b"\n".join(line for line, _ in CASES) + b"\n")
    got = same_both_ways(path)
    for required in (False, True):
        same_both_ways(path, id_field="n", id_required=required)
    assert sum(1 for r in got if r[3] is None) >= sum(1 for _, st in CASES if st == OK)
    assert any(r[3] and "malformed JSON" in r[3] for r in got)
    assert any(r[3] and "lone surrogate" in r[3] for r in got)
    assert any(r[3] and "invalid UTF-8" in r[3] for r in got)
    if hasattr(sys, "get_int_max_str_digits"):
        assert any(r[3] and "unreadable JSON" in r[3] for r in got)


ID_CASES = [  # (line, the raw id value the kernel finds)
    (rb'{"text": "x", "id": 5}', b"5"),
    (rb'{"id": "a\u00e9", "text": "x"}', rb'"a\u00e9"'),
    (rb'{"text": "x", "id" : [1, {"a": [2]}] , "z": 0}', rb'[1, {"a": [2]}]'),
    (rb'{"text": "x", "id": {}}', b"{}"),
    (rb'{"text": "x", "id": []}', b"[]"),
    (rb'{"id": 1, "text": "x", "id": -2.5e3}', b"-2.5e3"),
    (rb'{"id": [3], "text": "x", "id": null}', b"null"),
    (rb'{"id": null, "text": "x", "id": {"k": {"id": 9}}}', rb'{"k": {"id": 9}}'),
    (rb'{"text": "x", "o": {"id": 7}}', None),
    (rb'{"text": "x", "o": [{"id": 7}], "idx": 1, "i": 2}', None),
]


def test_the_utf8_check_of_text_lines():
    """``utf8_lines`` against Python's strict decoder on seeded random lines: valid characters
    of every length, long ASCII runs (read 64 bytes at a time), bytes that are not UTF-8
    (a stray continuation byte, overlong forms, encoded surrogates, past U+10FFFF, a cut
    character at the line's end), with the next line's bytes right after each line's end."""
    from gpu_tok.kernels.jsonl_cpu import utf8_lines

    rng = random.Random(12)
    good = [b"a", b" ", b"x" * 63, b"y" * 64, b"z" * 130, "\u00e9".encode(), "\u4e2d".encode(), "\U0001f600".encode(),
            "\U0010ffff".encode(), "\ud7ff".encode(), "\ue000".encode(), b"\x00", b"\x7f"]
    bad = [b"\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xed\xbf\xbf",
           b"\xf0\x80\x80\x80", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\xc3", b"\xe4\xb8",
           b"\xf0\x9f\x98", b"\xc3\x28"]
    lines = []
    for k in range(4000):
        parts = [rng.choice(good) for _ in range(rng.randint(0, 8))]
        if k % 3 == 0:
            parts.insert(rng.randint(0, len(parts)), rng.choice(bad))
        lines.append(b"".join(parts))
    body = b"".join(x + b"\n" for x in lines)
    arr = np.frombuffer(body, np.uint8)
    ends = np.flatnonzero(arr == 10)
    starts = np.concatenate(([0], ends[:-1] + 1)).astype(np.int64)
    status = np.empty(ends.shape[0], np.uint8)
    utf8_lines(arr, starts, ends, status)
    want = []
    for x in lines:
        try:
            x.decode("utf-8")
            want.append(OK)
        except UnicodeDecodeError:
            want.append(SLOW)
    assert status.tolist() == want
    assert want.count(SLOW) > 1000 and want.count(OK) > 2000


def test_the_kernel_finds_the_id():
    status, _, ids = statuses([line for line, _ in ID_CASES], idkey=b"id")
    assert status == [OK] * len(ID_CASES)
    assert ids == [want for _, want in ID_CASES]
    for (line, want), got in zip(ID_CASES, ids):
        if want is not None:
            assert json.loads(got) == json.loads(line)["id"]
    status, _, ids = statuses([line for line, _ in ID_CASES])  # no id asked for
    assert status == [OK] * len(ID_CASES) and ids == [None] * len(ID_CASES)


@pytest.mark.parametrize("tail", [b"", b"\n", b"\r\n", b"\r"])
def test_text_lines_same_as_line_by_line(tmp_path, tail):
    """Text lines: the ``\\n`` and one ``\\r`` before it removed (a last line without a
    ``\\n`` keeps its ``\\r``), empty lines kept, a line that is not UTF-8 a bad record."""
    path = tmp_path / "t.txt"
    body = b"a\r\nb\r\r\n\r\n\n\xc3\xa9 \xf0\x9f\x98\x80\nlast" + tail
    path.write_bytes(body)
    got = same_both_ways(path, "text", lines=True)
    assert [r[0] for r in got] == ["a", "b\r", "", "", "é 😀", "last\r" if tail == b"\r" else "last"]
    path.write_bytes(b"ok\n\xff bad\nfine\r\n" + tail)
    got = same_both_ways(path, "text", lines=True)
    assert got[1][3].startswith("invalid UTF-8") and got[2][0] == "fine"


_PIECES = ['"', "\\", '\\"', "\\\\", "\\/", "\\b", "\\n", "\\u0041", "\\u00e9", "\\ud83d\\ude00", "\\ud83d", "\\ude00",
           "\\u0000", "\\x", "\\u12", "a", "é", "中", "😀", "\x00", "\x1f", "\x7f", " ", "\t", "\r", "{", "}", "[", "]",
           ":", ",", "0", "-", "1", ".", "e", "+", "true", "null", "NaN", "Infinity", "text", '"text"', "\ufeff",
           "\x0b"]


_STRINGS = ["", "a", "hello world", "é\n中\t😀", "\ud83d", "x" * 40, "\u2028\x00\x7f", "\"quoted\" \\ /"]


def _value(rng, d=0):
    r = rng.random()
    if r < 0.3:
        return rng.choice(_STRINGS)
    if r < 0.45:
        return rng.choice([0, -1, 1.5, -0.0, 1e300, 10 ** 30, -12345678901234567890, 3.25e-5])
    if r < 0.55:
        return rng.choice([True, False, None])
    if r < 0.7 and d < 4:
        return [_value(rng, d + 1) for _ in range(rng.randint(0, 3))]
    if d < 4:
        return {rng.choice(["text", "a", "é", "id", "\ud800"]): _value(rng, d + 1) for _ in range(rng.randint(0, 3))}
    return "leaf"


def _line(rng) -> bytes:
    r = rng.random()
    if r < 0.1:
        s = rng.choice(["", " ", "\t", "\x0b", "\x0c \r", "\r", "\x1c"])
    else:
        if r < 0.6:
            obj = {"text": rng.choice(_STRINGS) if rng.random() < 0.8 else _value(rng), "n": _value(rng)}
            if rng.random() < 0.5:
                obj["id"] = rng.choice([rng.randint(-9, 10 ** 20), "doc-é", None, 1.5, True, [1], {"a": "b"}, {}, []])
        else:
            obj = {rng.choice(["text", "id", "é"]): _value(rng) for _ in range(rng.randint(0, 4))}
        s = json.dumps(obj, ensure_ascii=rng.random() < 0.5,
                       separators=rng.choice([(",", ":"), (", ", ": "), (" , ", " : ")]))
        if rng.random() < 0.2:  # the field again
            s = s[:-1] + (", " if len(obj) else "") + '"text": ' + json.dumps(_value(rng)) + "}"
    for _ in range(rng.choice([0, 0, 0, 1, 2])):
        if not s:
            break
        i = rng.randrange(len(s) + 1)
        op = rng.random()
        if op < 0.4:
            s = s[:i] + rng.choice(_PIECES) + s[i:]
        elif op < 0.7:
            s = s[:i] + s[i + 1:]
        else:
            s = s[:i] + rng.choice(_PIECES) + s[i + 1:]
    if rng.random() < 0.2:
        s = rng.choice([" ", "\t", "\r", "  \r"]) + s
    if rng.random() < 0.2:
        s = s + rng.choice([" ", "\t", "\r", "\x0b"])
    b = s.encode("utf-8", "surrogatepass")
    if rng.random() < 0.03:
        i = rng.randrange(len(b) + 1)
        b = b[:i] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe0\x80\x80", b"\xf4\x90\x80\x80", b"\x80"]) + b[i:]
    return b


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_lines_same_as_json_line_by_line(tmp_path, monkeypatch, seed):
    """Random objects (nested, the field repeated, of every type), mutated by inserting,
    deleting and replacing JSON syntax, escapes and bytes; as JSON Lines and as text
    lines, read in blocks of several sizes (lines cut between reads)."""
    rng = random.Random(seed)
    path = tmp_path / "r.jsonl"
    fast = good = 0
    for trial in range(25):
        monkeypatch.setattr(C, "BLOCK_READ", rng.choice([1, 7, 64, 1000]) if trial % 6 == 5 else 4 << 20)
        data = b"\n".join(_line(rng) for _ in range(rng.randint(1, 300))) + rng.choice([b"", b"\n"])
        path.write_bytes(data)
        got = same_both_ways(path)
        same_both_ways(path, id_field="id", id_required=trial % 2 == 1)
        same_both_ways(path, "text", lines=True)
        body = data if data.endswith(b"\n") else data + b"\n"
        status, _, _ = statuses(body[:-1].split(b"\n"))
        fast += status.count(OK)
        good += sum(1 for r in got if r[3] is None)
    # the kernel read most documents itself (it leaves to json the lines with an escaped
    # top-level key, or whose field was a lone surrogate before it came again)
    assert fast >= 0.85 * good and fast > 300


def _real_jsonl():
    bench = corpora_dir() / "bench"
    files = [(p, "text") for p in sorted(bench.glob("*.jsonl"))]
    files += [(p, "description" if "func_doc" in p.name else "id")
              for p in sorted((parity_dir() / "json").glob("bfcl_*.json"))]
    return files


def test_real_json_lines(tmp_path):
    """Real files: the bench corpora (the first 3 MB of each, the field ``text``) and
    BFCL's nested JSON Lines (the field ``id``, or ``description``): every line read by the kernel, the same
    documents as json's."""
    files = _real_jsonl()
    if not files:
        pytest.skip(f"no corpora under {corpora_dir()} (set GPU_TOK_CORPORA)")
    for path, field in files:
        data = path.read_bytes()
        if len(data) > 3_000_000:
            data = data[:data.index(b"\n", 3_000_000) + 1]
        p = tmp_path / path.name
        p.write_bytes(data)
        got = same_both_ways(p, field=field)
        assert got and all(r[3] is None for r in got), path
        status, _, _ = statuses([x for x in data.split(b"\n")[:-1]], field.encode())
        assert set(status) <= {OK, BLANK}, path


def _job(capsys, *args, out):
    """Run ``gpu-tok encode`` (bad records skipped) into ``out``: its manifest without the
    timing, and its shard files' bytes."""
    from gpu_tok import cli

    rc = cli.main(["encode", *args, "--output", str(out), "--overwrite", "--on-error", "skip", "--quiet"])
    capsys.readouterr()
    assert rc == 0
    m = json.loads((out / "manifest.json").read_text())
    for k in ("timing", "output"):
        m.pop(k, None)
    return m, {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "manifest.json"}


def test_encode_job_same_with_and_without_blocks(tmp_path, capsys, monkeypatch):
    """``gpu-tok encode`` over JSON Lines and text lines with bad records skipped and small
    batches and shards (split inside blocks): the same shards and manifest as one record
    at a time."""
    rng = random.Random(7)
    j = tmp_path / "in.jsonl"
    j.write_bytes(b"\n".join(_line(rng) for _ in range(3000)) + b"\n")
    t = tmp_path / "in.txt"
    t.write_bytes(b"".join(rng.choice([b"", b"word ", "é中 ".encode(), b"\xff"]) * rng.randint(0, 9) + b"\n"
                           for _ in range(2000)))
    runs = {}
    for blocks in (True, False):
        monkeypatch.setattr(bulk, "READ_BLOCKS", blocks)
        for name, args in [("j", ["--input", str(j)]), ("t", ["--input", str(t), "--lines"]),
                           ("jt", ["--input", str(j), str(t), "--lines", "--input-format", "auto"])]:
            out = tmp_path / f"o_{name}_{blocks}"
            for extra in (["--shard-docs", "97", "--batch-size", "13", "--batch-bytes", "300"],
                          ["--shard-bytes", "5000", "--batch-bytes", "1", "--num-threads", "64"]):
                runs.setdefault((name, tuple(extra)), []).append(_job(capsys, *args, *extra, out=out))
    for key, (a, b) in runs.items():
        assert a[0] == b[0], key
        assert a[1] == b[1], key
        assert a[0]["documents"] > 0 and a[0]["skipped"]["count"] > 0, key


def test_encode_job_ids_same_with_and_without_blocks(tmp_path, capsys, monkeypatch):
    """Parquet output with an id column from JSON Lines (found in the first record, or
    ``--id-field`` and then required): ids of every type, bad ones skipped (a block whose
    ids are not all good goes one record at a time), the same shards as without blocks."""
    pytest.importorskip("pyarrow")
    rng = random.Random(8)
    lines = [json.dumps({"id": k, "text": f"doc {k} é"}).encode() for k in range(5)]
    for k in range(3000):
        line = _line(rng)
        if k % 500 == 7:
            line = json.dumps({"id": 3.5, "text": "a float id"}).encode()
        lines.append(line)
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"\n".join(lines) + b"\n")
    clean = tmp_path / "clean.jsonl"
    clean.write_bytes(b"".join(json.dumps({"text": f"t{k} " * (k % 7), "id": f"s{k}"}).encode() + b"\n"
                               for k in range(2000)))
    runs = {}
    for blocks in (True, False):
        monkeypatch.setattr(bulk, "READ_BLOCKS", blocks)
        for name, args in [("auto", ["--input", str(src)]), ("explicit", ["--input", str(src), "--id-field", "id"]),
                           ("clean", ["--input", str(clean), "--id-field", "id"])]:
            out = tmp_path / f"o_{name}_{blocks}"
            expanded = []
            monkeypatch.setattr(C.Block, "records", lambda self, n, f=C.Block.records: expanded.append(n) or f(self, n))
            runs.setdefault(name, []).append(_job(capsys, *args, "--format", "parquet", "--shard-docs", "333",
                                                  "--batch-size", "50", out=out))
            assert not expanded if name == "clean" else expanded or not blocks  # good ids stay in blocks
            monkeypatch.undo()
            monkeypatch.setattr(bulk, "READ_BLOCKS", blocks)
    for name, (a, b) in runs.items():
        assert a[0] == b[0], name
        assert a[1] == b[1], name
        assert a[0]["documents"] > 0, name
    assert runs["auto"][0][0]["skipped"]["count"] > 0 and runs["clean"][0][0]["skipped"]["count"] == 0



def _batches_seen(monkeypatch) -> list:
    """The document sequences the job hands its encoder (the set-up's own calls left out)."""
    seen = []
    real = bulk.Encoder.encode

    def encode(self, texts, *a):
        if not (type(texts) is list and texts and texts[0].startswith("gpu_tok ")):
            seen.append(texts)
        return real(self, texts, *a)
    monkeypatch.setattr(bulk.Encoder, "encode", encode)
    return seen


def test_encode_job_hands_the_readers_utf8_to_the_engine(tmp_path, capsys, monkeypatch):
    """Batches of documents read in blocks reach the encoder as one ``PackedTexts`` (the
    reader's UTF-8: no ``str`` made per document), from JSON Lines and from text lines; a
    batch that also holds a document read on its own (a line the kernel leaves to ``json``)
    as the list of its ``str``s, in order. The same shards as one record at a time."""
    from gpu_tok._util import PackedTexts

    docs = [f"doc {k} caf\u00e9 \u4e2d " * (k % 5) for k in range(300)]
    clean = tmp_path / "clean.jsonl"
    clean.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs), encoding="utf-8")
    mixed = tmp_path / "mixed.jsonl"  # line 100's key is escaped: the kernel leaves it to json
    mixed.write_text("".join((json.dumps({"te\\u0078t": d}).replace("\\\\", "\\") if k == 99 else json.dumps({"text": d}))
                             + "\n" for k, d in enumerate(docs)), encoding="utf-8")
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(d + ("\r\n" if k % 3 else "\n") for k, d in enumerate(docs)), encoding="utf-8")
    seen = _batches_seen(monkeypatch)
    runs = {}
    for blocks in (True, False):
        monkeypatch.setattr(bulk, "READ_BLOCKS", blocks)
        for name, args, want in [("clean", [str(clean)], PackedTexts), ("mixed", [str(mixed)], list),
                                 ("lines", [str(lines), "--lines"], PackedTexts)]:
            seen.clear()
            runs.setdefault(name, []).append(_job(capsys, "--input", *args, "--batch-size", "120",
                                                  out=tmp_path / f"o_{name}_{blocks}"))
            assert [list(s) for s in seen] == [docs[:120], docs[120:240], docs[240:]], name
            if blocks:
                assert [type(s) for s in seen] == ([list, PackedTexts, PackedTexts] if want is list
                                                   else [want] * 3), name
    for name, (a, b) in runs.items():
        assert a == b, name


def _arrow_strings(pa, typ, vals):
    """An Arrow array of ``typ`` (string or binary, 32- or 64-bit offsets) holding the raw
    bytes ``vals`` (None: null), unchecked: Parquet files may hold bytes that are not UTF-8."""
    large = typ in (pa.large_string(), pa.large_binary())
    data = b"".join(v or b"" for v in vals)
    offs = np.cumsum([0] + [len(v or b"") for v in vals]).astype(np.int64 if large else np.int32)
    valid = np.packbits(np.array([v is not None for v in vals], np.bool_), bitorder="little")
    return pa.Array.from_buffers(typ, len(vals), [pa.py_buffer(valid.tobytes()), pa.py_buffer(offs.tobytes()),
                                                  pa.py_buffer(data)], null_count=sum(v is None for v in vals))


@pytest.mark.parametrize("typ", ["string", "large_string", "binary", "large_binary"])
def test_parquet_same_as_row_by_row(tmp_path, monkeypatch, typ):
    """Parquet rows in blocks (the column's bytes where Arrow holds them, checked as UTF-8 by
    Arrow): the same documents, row numbers, ids and errors (null values, null required ids,
    values that are not UTF-8: the batch then goes row by row) as one row at a time, from
    the start and resumed after rows inside and at the end of a batch."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    monkeypatch.setattr(C, "PARQUET_BATCH_ROWS", 64)
    rng = random.Random(11)
    pieces = ["word", " ", "caf\u00e9", "\u4e2d\u6587", "\U0001f600", "\n", "\x00", ""]
    vals, ids = [], []
    for k in range(700):
        v = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))).encode("utf-8")
        if k % 97 == 5:
            v = None
        elif k % 151 == 9:
            v = rng.choice([b"bad \xff", b"\xed\xa0\x80 surrogate", b"cut \xe4\xb8", b"\xc0\x80 overlong"])
        vals.append(v)
        ids.append(None if k % 89 == 3 else k)
    path = tmp_path / f"{typ}.parquet"
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "text": _arrow_strings(pa, getattr(pa, typ)(), vals)}),
                   str(path), row_group_size=200)
    clean = tmp_path / f"{typ}_clean.parquet"  # every value good: no batch goes row by row
    pq.write_table(pa.table({"text": _arrow_strings(pa, getattr(pa, typ)(), [v for v in vals if v and b"\xff" not in v
                                                                            and b"\xed" not in v and b"\xe4\xb8" not in v
                                                                            and b"\xc0" not in v] * 2)}),
                   str(clean), row_group_size=300)
    for p, id_kw in [(path, {}), (path, {"id_field": "id"}), (path, {"id_field": "id", "id_required": True}),
                     (clean, {})]:
        rows = pq.ParquetFile(str(p)).metadata.num_rows
        for start in (0, 1, 63, 64, 200, 450, rows - 1, rows):
            kw = dict(id_kw)
            one = flatten(C.Source(str(p), "parquet", **kw), start_units=start)
            got = flatten(C.Source(str(p), "parquet", **kw), start_units=start, blocks=True)
            assert got == one, (typ, p.name, id_kw, start)
            assert len(one) == rows - start and (start == rows or one[0][1] == start + 1), (typ, p.name, start)
            if p == clean:
                assert all(r[3] is None for r in one)
            elif start == 0:
                errors = {r[3] for r in one if r[3]}
                assert "column 'text' is null" in errors and any(e.startswith("invalid UTF-8") for e in errors)
                assert ("id column 'id' is null" in errors) == bool(id_kw.get("id_required"))
    blocks = [r for r in C.iter_records(C.Source(str(clean), "parquet"), blocks=True) if isinstance(r, C.Block)]
    assert len(blocks) > 3 and all(isinstance(b.texts, __import__("gpu_tok._util", fromlist=["x"]).PackedTexts)
                                   for b in blocks)


def test_encode_job_hands_parquet_bytes_to_the_engine(tmp_path, capsys, monkeypatch):
    """Parquet: batches of rows reach the encoder as ``PackedTexts`` over Arrow's own bytes;
    a batch whose Arrow batch holds a value that is not UTF-8 (read row by row, the row
    skipped) as a list of ``str``; nulls skipped in both. The same shards and manifest as
    one row at a time."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from gpu_tok._util import PackedTexts

    docs = [f"row {k} caf\u00e9 \u4e2d " * (k % 4) for k in range(300)]
    clean = tmp_path / "clean.parquet"
    pq.write_table(pa.table({"text": docs}), str(clean))
    mixed = tmp_path / "mixed.parquet"  # a null (row 11) and bytes that are not UTF-8 (row 201)
    vals = [d.encode("utf-8") for d in docs]
    vals[10], vals[200] = None, b"bad \xff"
    pq.write_table(pa.table({"text": _arrow_strings(pa, pa.string(), vals)}), str(mixed))
    seen = _batches_seen(monkeypatch)
    runs = {}
    for blocks in (True, False):
        monkeypatch.setattr(bulk, "READ_BLOCKS", blocks)
        for name, path in [("clean", clean), ("mixed", mixed)]:
            seen.clear()
            runs.setdefault(name, []).append(_job(capsys, "--input", str(path), "--batch-size", "120",
                                                  out=tmp_path / f"o_{name}_{blocks}"))
            want = docs if name == "clean" else [d for k, d in enumerate(docs) if k not in (10, 200)]
            assert [list(s) for s in seen] == [want[:120], want[120:240], want[240:]], name
            if blocks:
                assert [type(s) for s in seen] == [PackedTexts if name == "clean" else list] * 3, name
    for name, (a, b) in runs.items():
        assert a == b, name
    assert runs["mixed"][0][0]["skipped"]["count"] == 2
