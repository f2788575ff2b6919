#!/usr/bin/python3
"""Writes an IDX data set (Fashion-MNIST, MNIST) out in the forms users bring their own data in,
with writers independent of rudra's (PIL for images, python3-lmdb and the Datum encoder below):

  OUT/png/{train,val}/CLASS/N.png       class folders (torchvision's ImageFolder layout)
  OUT/jpeg/{train,val}/CLASS/N.jpg      the same as JPEG (quality 90)
  OUT/list/{train,val}.txt              Caffe ImageData lists of "path label" lines (of the PNGs)
  OUT/lmdb/{train,val}_raw              Caffe LMDBs of raw Datums (channels, height, width, data)
  OUT/lmdb/{train,val}_encoded          Caffe LMDBs of encoded Datums (PNG bytes)

Usage: export_idx.py IDX_DIR OUT [--limit-train N] [--limit-test N] [--forms png,jpeg,list,lmdb]
"""
import argparse
import gzip
import os
import struct
import sys


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if data[:2] != b"\0\0" or data[2] != 8:
        sys.exit(f"{path}: not an IDX file of unsigned bytes")
    rank = data[3]
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    return dims, data[4 + 4 * rank:]


def find(idx_dir, base):
    for ext in ("", ".gz"):
        p = os.path.join(idx_dir, base + ext)
        if os.path.exists(p):
            return p
    sys.exit(f"{idx_dir}: missing {base}[.gz]")


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def datum(channels, height, width, data, label, encoded):
    """caffe.proto's Datum, field by field (protobuf wire format)."""
    out = varint(1 << 3) + varint(channels) + varint(2 << 3) + varint(height) + varint(3 << 3) + varint(width)
    out += varint((4 << 3) | 2) + varint(len(data)) + data
    out += varint(5 << 3) + varint(label)
    if encoded:
        out += varint(7 << 3) + varint(1)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("idx_dir")
    ap.add_argument("out")
    ap.add_argument("--limit-train", type=int, default=0)
    ap.add_argument("--limit-test", type=int, default=0)
    ap.add_argument("--forms", default="png,jpeg,list,lmdb")
    a = ap.parse_args()
    forms = set(a.forms.split(","))
    from PIL import Image
    import io

    for split, prefix, limit in (("train", "train", a.limit_train), ("val", "t10k", a.limit_test)):
        (n, h, w), pixels = read_idx(find(a.idx_dir, prefix + "-images-idx3-ubyte"))
        (ln,), labels = read_idx(find(a.idx_dir, prefix + "-labels-idx1-ubyte"))
        if ln != n:
            sys.exit(f"{a.idx_dir}: {n} images but {ln} labels")
        if limit:
            n = min(n, limit)
        classes = max(labels[:n]) + 1
        lmdb_envs = {}
        if "lmdb" in forms:
            import lmdb
            os.makedirs(os.path.join(a.out, "lmdb"), exist_ok=True)
            for kind in ("raw", "encoded"):
                lmdb_envs[kind] = lmdb.open(os.path.join(a.out, "lmdb", f"{split}_{kind}"), map_size=1 << 34)
        txns = {k: e.begin(write=True) for k, e in lmdb_envs.items()}
        list_lines = []
        for i in range(n):
            img = pixels[i * h * w:(i + 1) * h * w]
            label = labels[i]
            name = f"{i:06d}"
            pil = Image.frombytes("L", (w, h), img)
            png = io.BytesIO()
            pil.save(png, format="PNG")
            for form, ext in (("png", "png"), ("jpeg", "jpg")):
                if form in forms or (form == "png" and "list" in forms):
                    d = os.path.join(a.out, form, split, f"class{label:03d}")
                    os.makedirs(d, exist_ok=True)
                    path = os.path.join(d, f"{name}.{ext}")
                    if form == "png":
                        with open(path, "wb") as f:
                            f.write(png.getvalue())
                    else:
                        pil.save(path, format="JPEG", quality=90)
                    if form == "png":
                        list_lines.append(f"{split}/class{label:03d}/{name}.png {label}\n")
            if txns:
                key = f"{i:08d}_{name}".encode()
                txns["raw"].put(key, datum(1, h, w, bytes(img), label, False))
                txns["encoded"].put(key, datum(0, 0, 0, png.getvalue(), label, True))
        for t in txns.values():
            t.commit()
        for e in lmdb_envs.values():
            e.close()
        if "list" in forms:
            os.makedirs(os.path.join(a.out, "list"), exist_ok=True)
            with open(os.path.join(a.out, "list", f"{split}.txt"), "w") as f:
                f.writelines(list_lines)
        print(f"export_idx: {split}: {n} images of {w}x{h}, {classes} classes: {','.join(sorted(forms))}")


if __name__ == "__main__":
    main()
