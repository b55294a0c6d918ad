"""Reading a string field out of JSON Lines without Python's ``json`` for every line.

``json_fields`` takes a block of whole lines and, for each line that is one JSON object
whose last top-level member named ``key`` is a string, writes that string's UTF-8
(escapes decoded) into ``out``; every other line (blank lines aside) is left to the caller,
which reads it with ``json`` and reports what is wrong with it. So the kernel only has to
be exact on what it accepts, and it accepts conservatively: it answers "the caller reads
it" (``SLOW``) for anything Python's ``json.loads`` might read differently or refuse,
among them a top-level key with a backslash, a lone surrogate escape in the field's
string, ``NaN``/``Infinity``, an integer of more than 4,000 digits (Python refuses those
past ``sys.int_max_str_digits``), nesting deeper than 62 and a byte sequence that is not
UTF-8 (``bytes.decode`` refuses the whole line then).

What it accepts follows ``json.loads`` on the decoded line: whitespace between tokens is
space, tab, CR and LF (the ``\\n`` ending the line is not part of it); strings hold no
control character below 0x20 (``strict``); escapes are ``\\" \\\\ \\/ \\b \\f \\n \\r \\t``
and ``\\uXXXX`` (a high and a low surrogate escape in a row are one character); numbers
are ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][-+]?[0-9]+)?``; ``true``, ``false``, ``null``;
after the object only whitespace. A line is blank (``BLANK``: the reader skips it) when
``bytes.strip`` leaves nothing, i.e. it holds only bytes 9-13 and 32.

Array layout: ``buf: uint8[N]`` the block; ``starts, ends: int64[L]`` each line's first
byte and its end (the ``\\n``'s position, or the block's end for a last line without
one); ``key: uint8[K]`` the field name's UTF-8; ``out: uint8[N]``: line ``k``'s string
goes to ``out[starts[k]:out_end[k]]`` (never longer than the line); ``status: uint8[L]``
``OK``, ``BLANK`` or ``SLOW``; ``idkey: uint8[J]`` an id field's name (J = 0: none) and
``id_start, id_end: int64[L]``: ``buf[id_start[k]:id_end[k]]`` is the raw JSON value of
the last top-level member of line ``k`` so named (-1: none; the caller reads it with
``json``). Lines are independent (``prange``).

``utf8_lines`` is the text-lines reader's check: ``status[k]`` is ``OK`` where
``buf[starts[k]:ends[k]]`` is UTF-8 as Python's strict decoder reads it, else ``SLOW``.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from ._intrinsics import ctz64, range_mask64
from .hash_table import njit_cached, njit_noalloc

OK, BLANK, SLOW = 0, 1, 2
_MAX_DEPTH = 62  # containers nested deeper are left to json (one bit each in a uint64)
_MAX_INT_DIGITS = 4000  # below Python's default int_max_str_digits (4300)

# what follows where the parser is
_KEY_OR_CLOSE, _KEY, _VALUE_OR_CLOSE, _VALUE, _AFTER = 0, 1, 2, 3, 4


@njit_noalloc(inline="always")
def _ws(buf, p, e):
    """The first position from ``p`` that is not JSON whitespace (space, tab, LF, CR)."""
    while p < e:
        c = buf[p]
        if c != 32 and c != 9 and c != 10 and c != 13:
            break
        p += 1
    return p


@njit_noalloc(inline="always")
def _hex4(buf, p, e):
    """The value of the four hex digits at ``p``, or -1."""
    if p + 4 > e:
        return -1
    v = 0
    for q in range(p, p + 4):
        c = np.int64(buf[q])
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= c <= 102:
            d = c - 87
        elif 65 <= c <= 70:
            d = c - 55
        else:
            return -1
        v = (v << 4) | d
    return v


@njit_noalloc(inline="always")
def _utf8_len(buf, p, e):
    """The length of the valid UTF-8 sequence (lead byte >= 0x80) at ``p`` as Python's
    strict decoder reads it, or -1."""
    c = buf[p]
    if 0xC2 <= c <= 0xDF:
        n = 2
        lo, hi = 0x80, 0xBF
    elif 0xE0 <= c <= 0xEF:
        n = 3
        lo = 0xA0 if c == 0xE0 else 0x80
        hi = 0x9F if c == 0xED else 0xBF  # no surrogates
    elif 0xF0 <= c <= 0xF4:
        n = 4
        lo = 0x90 if c == 0xF0 else 0x80
        hi = 0x8F if c == 0xF4 else 0xBF
    else:
        return -1
    if p + n > e:
        return -1
    c1 = buf[p + 1]
    if c1 < lo or c1 > hi:
        return -1
    for q in range(p + 2, p + n):
        if buf[q] & 0xC0 != 0x80:
            return -1
    return n


@njit_noalloc(inline="always")
def _put(out, o, cp):
    """``cp``'s UTF-8 into ``out[o:]``; returns the new end."""
    if cp < 0x80:
        out[o] = cp
        return o + 1
    if cp < 0x800:
        out[o] = 0xC0 | (cp >> 6)
        out[o + 1] = 0x80 | (cp & 0x3F)
        return o + 2
    if cp < 0x10000:
        out[o] = 0xE0 | (cp >> 12)
        out[o + 1] = 0x80 | ((cp >> 6) & 0x3F)
        out[o + 2] = 0x80 | (cp & 0x3F)
        return o + 3
    out[o] = 0xF0 | (cp >> 18)
    out[o + 1] = 0x80 | ((cp >> 12) & 0x3F)
    out[o + 2] = 0x80 | ((cp >> 6) & 0x3F)
    out[o + 3] = 0x80 | (cp & 0x3F)
    return o + 4


@njit_noalloc
def _string(buf, p, e, out, o, write):
    """The string whose opening quote is at ``p``: returns ``(end, o, plain)``, ``end``
    just past its closing quote (-1 when json would refuse it, or, with ``write``, when it
    holds a surrogate escape that is not a high one then a low one); with ``write`` its
    characters go to ``out[o:]`` and ``o`` is their end; ``plain``: no escape in it."""
    q = p + 1
    plain = True
    n = buf.shape[0]
    while q < e:
        if q + 64 <= n:  # a run of printable ASCII but the quote and backslash, 64 bytes at a time
            m = range_mask64(buf, q, 32, 127) & ~range_mask64(buf, q, 34, 34) & ~range_mask64(buf, q, 92, 92)
            run = min(np.int64(ctz64(~m)), e - q)
            if run > 0:
                if write:
                    for t in range(run):
                        out[o + t] = buf[q + t]
                    o += run
                q += run
                if q >= e:
                    break
        c = buf[q]
        if c == 34:  # "
            return q + 1, o, plain
        if c == 92:  # backslash
            plain = False
            if q + 1 >= e:
                return -1, o, plain
            x = buf[q + 1]
            cp = -1
            if x == 34 or x == 92 or x == 47:
                cp = np.int64(x)
            elif x == 98:
                cp = 8
            elif x == 102:
                cp = 12
            elif x == 110:
                cp = 10
            elif x == 114:
                cp = 13
            elif x == 116:
                cp = 9
            elif x == 117:  # u
                cp = _hex4(buf, q + 2, e)
                if cp < 0:
                    return -1, o, plain
                if 0xD800 <= cp <= 0xDFFF:
                    if not write:  # json reads any surrogate escape; only the field's must pair
                        q += 6
                        continue
                    lo = -1
                    if cp <= 0xDBFF and q + 8 <= e and buf[q + 6] == 92 and buf[q + 7] == 117:
                        lo = _hex4(buf, q + 8, e)
                    if lo < 0xDC00 or lo > 0xDFFF:
                        return -1, o, plain  # a lone surrogate: json's str would hold it
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
                    q += 6
                q += 4
            else:
                return -1, o, plain
            if write:
                o = _put(out, o, cp)
            q += 2
        elif c < 32:
            return -1, o, plain
        elif c < 128:
            if write:
                out[o] = c
                o += 1
            q += 1
        else:
            n = _utf8_len(buf, q, e)
            if n < 0:
                return -1, o, plain
            if write:
                for t in range(n):
                    out[o + t] = buf[q + t]
                o += n
            q += n
    return -1, o, plain


@njit_noalloc(inline="always")
def _digits(buf, q, e):
    """The end of the run of one or more digits at ``q``, or -1 (no digit there)."""
    if q >= e or buf[q] < 48 or buf[q] > 57:
        return -1
    while q < e and 48 <= buf[q] <= 57:
        q += 1
    return q


@njit_noalloc(inline="always")
def _number(buf, p, e):
    """The end of the number at ``p`` (``-`` or a digit), or -1 (json reads none there, or
    an integer Python may refuse for its length)."""
    q = p + 1 if buf[p] == 45 else p  # -
    if q >= e or buf[q] < 48 or buf[q] > 57:
        return -1  # "-Infinity" or an error: json decides
    d0 = q
    q = q + 1 if buf[q] == 48 else _digits(buf, q, e)  # a leading 0 stands alone
    digits = q - d0
    plain_int = True
    if q < e and buf[q] == 46:  # .
        q = _digits(buf, q + 1, e)
        if q < 0:
            return -1
        plain_int = False
    if q < e and (buf[q] == 101 or buf[q] == 69):  # e E
        q += 1
        if q < e and (buf[q] == 43 or buf[q] == 45):
            q += 1
        q = _digits(buf, q, e)
        if q < 0:
            return -1
        plain_int = False
    if plain_int and digits > _MAX_INT_DIGITS:
        return -1
    return q


@njit_noalloc(inline="always")
def _literal(buf, p, e, word0, word1, word2, word3, word4, n):
    if p + n > e:
        return -1
    if buf[p] != word0 or buf[p + 1] != word1 or buf[p + 2] != word2 or buf[p + 3] != word3:
        return -1
    if n == 5 and buf[p + 4] != word4:
        return -1
    return p + n


@njit_noalloc(inline="always")
def _is_key(buf, p, r, key):
    """The key string ``buf[p:r]`` (quotes included, no escape in it) is ``key``."""
    K = key.shape[0]
    if r - p - 2 != K:
        return False
    for t in range(K):
        if buf[p + 1 + t] != key[t]:
            return False
    return True


@njit_noalloc
def json_line(buf, s, e, key, idkey, out):
    """``(status, out_end, id_start, id_end)`` of the line ``buf[s:e]`` (see the module
    docstring); ``buf[id_start:id_end]`` is the raw JSON value of the last top-level member
    named ``idkey`` (``id_start`` -1: none, or ``idkey`` is empty)."""
    blank = True
    for q in range(s, e):
        c = buf[q]
        if c != 32 and (c < 9 or c > 13):
            blank = False
            break
    if blank:
        return BLANK, s, -1, -1
    p = _ws(buf, s, e)
    if p >= e or buf[p] != 123:  # {
        return SLOW, s, -1, -1
    p += 1
    depth = 1
    objs = np.uint64(1)  # bit d - 1: the container at depth d is an object
    expect = _KEY_OR_CLOSE
    is_field = False
    is_id = False
    found = 0  # 1: the field's last value is a string (in out[s:o_end]); 2: it is not
    o_end = s
    id_s = -1
    id_e = -1
    id_open = False  # the id member's value is a container not closed yet
    with_id = idkey.shape[0] > 0
    while True:
        p = _ws(buf, p, e)
        if p >= e:
            return SLOW, s, -1, -1
        c = buf[p]
        close = False
        if expect == _KEY_OR_CLOSE or expect == _KEY:
            if c == 125 and expect == _KEY_OR_CLOSE:  # }
                close = True
            elif c == 34:
                r, _o, plain = _string(buf, p, e, out, s, False)
                if r < 0:
                    return SLOW, s, -1, -1
                if depth == 1:
                    if not plain:
                        return SLOW, s, -1, -1  # an escaped top-level key might be the field
                    is_field = _is_key(buf, p, r, key)
                    is_id = with_id and _is_key(buf, p, r, idkey)
                p = _ws(buf, r, e)
                if p >= e or buf[p] != 58:  # :
                    return SLOW, s, -1, -1
                p += 1
                expect = _VALUE
                continue
            else:
                return SLOW, s, -1, -1
        elif expect == _VALUE or expect == _VALUE_OR_CLOSE:
            p0 = p
            field_value = is_field and depth == 1
            is_field = False
            if is_id and depth == 1:
                id_s = p
                id_open = c == 123 or c == 91
            is_id = False
            if c == 93 and expect == _VALUE_OR_CLOSE:  # ]
                close = True
            elif c == 34:
                r, o, _plain = _string(buf, p, e, out, s, field_value)
                if r < 0:
                    return SLOW, s, -1, -1
                if field_value:
                    found = 1
                    o_end = o
                p = r
                if id_s == p0 and not id_open:
                    id_e = p
                expect = _AFTER
                continue
            else:
                if field_value:
                    found = 2
                if c == 123 or c == 91:  # { [
                    if depth >= _MAX_DEPTH:
                        return SLOW, s, -1, -1
                    if c == 123:
                        objs |= np.uint64(1) << np.uint64(depth)
                        expect = _KEY_OR_CLOSE
                    else:
                        objs &= ~(np.uint64(1) << np.uint64(depth))
                        expect = _VALUE_OR_CLOSE
                    depth += 1
                    p += 1
                    continue
                if c == 45 or 48 <= c <= 57:
                    r = _number(buf, p, e)
                elif c == 116:
                    r = _literal(buf, p, e, 116, 114, 117, 101, 0, 4)  # true
                elif c == 102:
                    r = _literal(buf, p, e, 102, 97, 108, 115, 101, 5)  # false
                elif c == 110:
                    r = _literal(buf, p, e, 110, 117, 108, 108, 0, 4)  # null
                else:
                    r = -1  # NaN, Infinity or an error: json decides
                if r < 0:
                    return SLOW, s, -1, -1
                p = r
                if id_s == p0 and not id_open:
                    id_e = p
                expect = _AFTER
                continue
        else:  # _AFTER a value
            in_obj = (objs >> np.uint64(depth - 1)) & np.uint64(1) != 0
            if c == 44:  # ,
                expect = _KEY if in_obj else _VALUE
                p += 1
                continue
            if (c == 125 and in_obj) or (c == 93 and not in_obj):
                close = True
            else:
                return SLOW, s, -1, -1
        if close:
            depth -= 1
            p += 1
            if depth == 0:
                p = _ws(buf, p, e)
                if p != e or found != 1:
                    return SLOW, s, -1, -1
                return OK, o_end, id_s, id_e
            if depth == 1 and id_open:
                id_e = p
                id_open = False
            expect = _AFTER


@njit_cached(parallel=True)
def json_fields(buf, starts, ends, key, idkey, out, out_end, id_start, id_end, status):
    """Every line's ``json_line``, in parallel (see the module docstring)."""
    for k in prange(starts.shape[0]):
        st, oe, i0, i1 = json_line(buf, starts[k], ends[k], key, idkey, out)
        status[k] = st
        out_end[k] = oe
        id_start[k] = i0
        id_end[k] = i1


@njit_noalloc(inline="always")
def _utf8_ok(buf, p, e):
    """Whether ``buf[p:e]`` is UTF-8 as Python's strict decoder reads it (64 bytes at a time
    while they are ASCII)."""
    n = buf.shape[0]
    while p < e:
        if p + 64 <= n:
            m = range_mask64(buf, p, 0x80, 0xFF)
            if m == 0:
                p += 64
                continue
            p += np.int64(ctz64(m))
            if p >= e:
                break
        if buf[p] < 0x80:
            p += 1
            continue
        k = _utf8_len(buf, p, e)
        if k < 0:
            return False
        p += k
    return True


@njit_cached(parallel=True)
def utf8_lines(buf, starts, ends, status):
    """``status[k]``: ``OK`` where ``buf[starts[k]:ends[k]]`` is UTF-8 (Python's strict
    decoder would read it), else ``SLOW``; lines in parallel (the text-lines reader's check)."""
    for k in prange(starts.shape[0]):
        status[k] = OK if _utf8_ok(buf, starts[k], ends[k]) else SLOW
