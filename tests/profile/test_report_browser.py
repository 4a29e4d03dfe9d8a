"""The HTML report opened in a real browser: headless Chromium dumps the DOM after the report's
scripts ran and takes a screenshot.  Skipped only when chromium is missing outside CI (in CI,
``CI=true``, ``.ci/run`` installs it and this test must run)."""
from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import profile_kernels as pk  # noqa: E402


def _chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or \
        (os.path.exists("/usr/bin/chromium") and "/usr/bin/chromium")
    if not exe:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is missing in CI: .ci/run installs it (apt-get install -y chromium)")
        pytest.skip("chromium not installed (apt-get install -y chromium) and not in CI")
    return exe


def _run(exe, *args):
    with tempfile.TemporaryDirectory() as profile:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _png_pixels(path):
    """(width, height, distinct RGB colours in a sample of rows) of an 8-bit RGB/RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w, h, bpp = 8, b"", 0, 0, 3
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and ctype in (2, 6)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp + 1
    prev = bytearray(w * bpp)
    colours = set()
    for y in range(h):
        f, line = raw[y * stride], bytearray(raw[y * stride + 1:(y + 1) * stride])
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        if y % 7 == 0:
            colours.update(bytes(line[i:i + 3]) for i in range(0, len(line), bpp * 3))
    return w, h, colours


def test_html_report_renders_in_chromium(tmp_path):
    exe = _chromium()
    h = pk.launch(25)
    path = tmp_path / "report.html"
    h.stats.write_html(path)
    text = path.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    dom = _run(exe, "--dump-dom", path.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    # the script ran: it set the number of events it draws on the canvas
    n_events = len(h.stats._trace)
    assert re.search(r'<canvas id="timeline"[^>]*data-events="%d"' % n_events, html), html[:2000]
    m = re.search(r'<canvas id="timeline"[^>]*height="(\d+)"', html)
    assert m and int(m.group(1)) > 24 * 7 * 12          # a lane per pipe of every core, plus all cores
    # the source profile: one row per line of the kernel and its helper, the load's line with its bytes
    assert html.count('<tr class="line') >= 9
    load = re.search(r'<td class="n">%d</td><td class="src"><pre>\s*x = tl.load\(x_ptr \+ offs, mask=m\)</pre>'
                     r'.*?</tr>' % pk.LOAD_LINE, html, re.S)
    assert load and "102400" in load.group(0)
    assert 'id="launch-point"' in html and 'id="roofline"' in html
    assert "25 programs on 24 cores: 2 rounds, the last one 1/24 full" in html
    shot = tmp_path / "shot.png"
    r = _run(exe, f"--screenshot={shot}", "--window-size=1200,900", path.as_uri())
    assert r.returncode == 0 and shot.exists(), r.stderr[-2000:]
    w, hgt, colours = _png_pixels(shot)
    assert (w, hgt) == (1200, 900)
    assert len(colours) > 20                              # not blank: text, bars in the pipes' colours
    assert any(abs(c[0] - 0x1f) < 8 and abs(c[1] - 0x77) < 8 and abs(c[2] - 0xb4) < 8 for c in colours)  # MTE2
