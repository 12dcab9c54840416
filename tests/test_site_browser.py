"""The published asv site and the Plotly pages open in a real browser (headless Chromium, Debian's `chromium`,
which .ci/run installs): no console error, no blank page, a drawn graph on every page kind."""
import contextlib
import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.test_asv_pipeline import clone_with_history

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
BAD_CONSOLE = ("Uncaught", "Error", "Failed to load", "is not defined", "Cannot read")

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def serve(folder):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def browse(url, screenshot=None):
    """(DOM after the page's scripts ran, console lines) from headless Chromium."""
    assert CHROMIUM, "headless Chromium is needed: apt-get install chromium (.ci/run installs it)"
    args = [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--window-size=1400,900", "--virtual-time-budget=10000", "--enable-logging=stderr", "--v=0"]
    if screenshot:
        subprocess.run(args + [f"--screenshot={screenshot}", url], capture_output=True, timeout=120)
    done = subprocess.run(args + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


def assert_clean(console, url):
    bad = [line for line in console if any(word in line for word in BAD_CONSOLE)]
    assert not bad, f"{url}: console errors:\n" + "\n".join(bad)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The asv site of the committed results, published and made self-contained as the main job does."""
    repo = clone_with_history(tmp_path_factory.mktemp("site") / "greyhound")
    html = repo / "published"
    for step in (["-m", "asv", "publish", "-o", str(html)], ["-m", "tools.site", "--no-publish", "--html", str(html)]):
        done = subprocess.run([sys.executable, *step], cwd=repo, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    return html


def test_asv_site_graph_and_summary_pages_render(site, tmp_path):
    shots = {}
    with serve(site) as base:
        dom, console = browse(base + "/")
        assert_clean(console, "index")
        assert "continental origin of swallow" not in dom  # asv's page when its scripts failed to load
        assert "CrossEntropyWithGradTracked" in dom or "cross_entropy" in dom
        tracked = sorted({p.stem for p in (site / "graphs").rglob("*.json") if "Tracked." in p.stem})
        measured = set()
        for path in (ROOT / "results" / "nvidia-h200").glob("*-*.json"):
            measured |= {name for name in json.loads(path.read_text())["results"] if "Tracked." in name}
        assert measured and set(tracked) >= measured  # every tracked benchmark with H200 results has its graph
        for name in tracked:
            url = f"{base}/#{name}"
            shot = tmp_path / f"{name}.png"
            dom, console = browse(url, screenshot=shot if name.endswith("time_cross_entropy_with_grad") else None)
            assert_clean(console, name)
            assert "flot-base" in dom, f"{name}: no graph canvas drawn"
            assert "continental origin" not in dom
            if shot.exists():
                shots[name] = shot
    assert shots and all(p.stat().st_size > 10_000 for p in shots.values())  # a drawn page, not a blank one


def test_plotly_pages_render_every_trace(tmp_path):
    assets = ROOT / "docs" / "public" / "assets"
    pages = sorted((assets / "plots_html").glob("*.html"))
    assert pages, "no Plotly page to open"
    with serve(assets) as base:
        for page in pages:
            dom, console = browse(f"{base}/plots_html/{page.name}")
            assert_clean(console, page.name)
            assert "main-svg" in dom and 'class="trace scatter' in dom, f"{page.name}: empty graph"
            # every trace the page carries (its lines+markers series; the template's "scatter" entry is no trace)
            assert dom.count('class="trace scatter') == page.read_text().count('"mode":"lines+markers"') > 0


def test_kernel_pages_embed_their_plotly_pages_full_forward_backward():
    html_pages = {p.name for p in (ROOT / "docs" / "public" / "assets" / "plots_html").glob("*.html")}
    embedded = []
    for page in sorted((ROOT / "docs" / "kernels").glob("*.md")):
        kernel = page.stem
        text = page.read_text()
        frames = [line.split('src="', 1)[1].split('"', 1)[0] for line in text.splitlines() if "<iframe" in line]
        mine = sorted(name for name in html_pages if name.startswith(kernel + "__"))
        assert [Path(f).name for f in frames] == sorted(mine, key=_mode_order), page.name
        embedded += frames
    assert len(embedded) == len(html_pages)


def _mode_order(name):
    mode = name.split("__")[1]
    return ({"full": 0, "forward": 1, "backward": 2}.get(mode, 3), name)
