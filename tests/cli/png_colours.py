#!/usr/bin/python3
# Reads a PNG (8-bit RGB or RGBA, non-interlaced, as chromium's screenshots are) with the standard library
# only, and prints one JSON object: the image size, how many pixels differ from the background (the
# top-left pixel) and, for every colour asked for (#rrggbb), how many pixels lie within 40 of it in each
# channel. Usage: png_colours.py FILE.png [#rrggbb ...]
import json
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    at, idat, header = 8, b"", None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or colour_type not in (2, 6) or interlace:
        raise SystemExit(f"{path}: unsupported PNG (depth {depth}, colour type {colour_type})")
    channels = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        row = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):  # undo the row's filter (PNG spec, section 9)
            a = row[x - channels] if x >= channels else 0
            b = previous[x]
            c = previous[x - channels] if x >= channels else 0
            if kind == 1:
                row[x] = (row[x] + a) & 255
            elif kind == 2:
                row[x] = (row[x] + b) & 255
            elif kind == 3:
                row[x] = (row[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[x] = (row[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(row)
        previous = row
    pixels = [tuple(r[x:x + 3]) for r in rows for x in range(0, stride, channels)]
    return width, height, pixels


def main():
    width, height, pixels = read_png(sys.argv[1])
    background = pixels[0]
    wanted = {c: tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in sys.argv[2:]}
    near = {c: 0 for c in wanted}
    differing = 0
    for p in pixels:
        if p != background:
            differing += 1
        for c, rgb in wanted.items():
            if all(abs(p[i] - rgb[i]) <= 40 for i in range(3)):
                near[c] += 1
    print(json.dumps({"width": width, "height": height, "background": "#%02x%02x%02x" % background,
                      "non_background": differing, "colours": near}))


main()
