"""8-bit grey and RGB PNG files in pure Python (zlib), and the images of the DiSC capture's
--png (capture/disc/disc_png.c): latent channels (grey, min-max scaled) and channels 0-2
as RGB, the token mask of every step (G x G, white = kept) and kept attention masks (N x N,
white = attended, OR-downsampled so no side exceeds 2048 px). Files are written to a
temporary name and renamed. read_png decodes what write_png (or libpng) writes, for tests.
"""
import os
import struct
import zlib

import numpy as np

PNG_MAX = 2048
_SIG = b"\x89PNG\r\n\x1a\n"


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + \
        struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png(path, px):
    """px: (h, w) uint8 grey or (h, w, 3) uint8 RGB."""
    px = np.ascontiguousarray(px, dtype=np.uint8)
    h, w = px.shape[:2]
    color = 2 if px.ndim == 3 else 0
    rows = px.reshape(h, -1)
    raw = np.concatenate([np.zeros((h, 1), dtype=np.uint8), rows], axis=1).tobytes()
    data = _SIG + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)) + \
        _chunk(b"IDAT", zlib.compress(raw, 6)) + _chunk(b"IEND", b"")
    tmp = path + ".partial"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def read_png(path):
    """(h, w) or (h, w, 3) uint8 of an 8-bit grey or RGB, non-interlaced PNG."""
    with open(path, "rb") as f:
        d = f.read()
    if d[:8] != _SIG:
        raise ValueError("'%s' is not a PNG file" % path)
    off, idat, hdr = 8, b"", None
    while off < len(d):
        n, kind = struct.unpack(">I4s", d[off:off + 8])
        body = d[off + 8:off + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        off += 12 + n
    w, h, depth, color = hdr[:4]
    ch = 3 if color == 2 else 1
    if depth != 8 or color not in (0, 2) or hdr[6]:
        raise ValueError("'%s': only 8-bit grey or RGB, non-interlaced" % path)
    raw = zlib.decompress(idat)
    stride = w * ch
    out = np.zeros((h, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = np.frombuffer(raw, dtype=np.uint8, count=stride,
                             offset=y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        for x in range(stride):
            a = cur[x - ch] if x >= ch else 0
            b = prev[x]
            c = prev[x - ch] if x >= ch else 0
            if ft == 0:
                p = 0
            elif ft == 1:
                p = a
            elif ft == 2:
                p = b
            elif ft == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else b if pb <= pc else c
            cur[x] = (line[x] + p) & 255
        out[y] = cur
        prev = cur
    out = out.astype(np.uint8)
    return out.reshape(h, w, 3) if ch == 3 else out


def token_mask(dir_, k, mask, grid):
    """DIR/token_mask_kKKK.png from a bool (grid * grid) token mask."""
    px = np.where(np.asarray(mask, dtype=bool).reshape(grid, grid), 255, 0).astype(np.uint8)
    write_png(os.path.join(dir_, "token_mask_k%03d.png" % k), px)


def attn_mask(dir_, k, batch, block, head, rows_bool):
    """DIR/attn_kKKK_bB_lLL_hHH.png from a bool (N, N) mask, OR-downsampled."""
    n = rows_bool.shape[0]
    f = (n + PNG_MAX - 1) // PNG_MAX
    side = (n + f - 1) // f
    m = np.zeros((side * f, side * f), dtype=bool)
    m[:n, :n] = rows_bool
    m = m.reshape(side, f, side, f).any(axis=(1, 3))
    write_png(os.path.join(dir_, "attn_k%03d_b%d_l%02d_h%02d.png" % (k, batch, block, head)),
              np.where(m, 255, 0).astype(np.uint8))


def _scale8(x):
    mn, mx = np.float32(x.min()), np.float32(x.max())
    if not mx > mn:
        return np.full(x.shape, 128, dtype=np.uint8)
    t = (x.astype(np.float64) - np.float64(mn)) / (np.float64(mx) - np.float64(mn))
    return np.floor(t * 255.0 + 0.5).astype(np.uint8)  # lround of a value >= 0


def latent(dir_, name, x):
    """DIR/NAME_cC.png per channel and DIR/NAME_rgb.png of a (C, lat, lat) latent."""
    x = np.asarray(x, dtype=np.float32)
    for c in range(x.shape[0]):
        write_png(os.path.join(dir_, "%s_c%d.png" % (name, c)), _scale8(x[c]))
    if x.shape[0] >= 3:
        write_png(os.path.join(dir_, "%s_rgb.png" % name),
                  np.stack([_scale8(x[c]) for c in range(3)], axis=-1))


def write_safetensors(path, tensors):
    """{name: float32 array} as an F32 safetensors file (names sorted; header padded to 8
    bytes), through path.partial, fsync and rename."""
    import json
    meta, off, blobs = {}, 0, []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype="<f4")
        meta[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
        blobs.append(a)
    hdr = json.dumps(meta, separators=(",", ":")).encode()
    hdr += b" " * (-len(hdr) % 8)
    tmp = path + ".partial"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr)
        for a in blobs:
            f.write(a.tobytes())
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
