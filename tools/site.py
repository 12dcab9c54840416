"""Publish the asv site and make it self-contained: `python -m tools.site [--html .asv/html]`.

Runs `asv publish`, then replaces the CDN URLs in the published pages by local copies (tools/site_vendor/, see its
README), so the site works offline and in a headless browser with no network. Exit status: asv's, or 2 when a CDN
URL of the published pages has no local copy (asv changed them: update the table in SITE_VENDOR).
"""
import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tools._atomic import write_atomic

VENDOR = Path(__file__).with_name("site_vendor")
# CDN URL (as asv 0.6.6 writes it) -> vendored file
SITE_VENDOR = {
    "https://code.jquery.com/jquery-3.3.1.min.js": "jquery-3.3.1.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.min.js": "jquery.flot-0.8.3.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.time.min.js": "jquery.flot.time-0.8.3.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.selection.min.js": "jquery.flot.selection-0.8.3.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.categories.min.js":
        "jquery.flot.categories-0.8.3.js",
    "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js": "jquery.flot.orderBars-1.0.0.js",
    "https://cdnjs.cloudflare.com/ajax/libs/stupidtable/1.0.1/stupidtable.min.js": "stupidtable-1.1.3.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/blueimp-md5/2.19.0/js/md5.min.js": "md5-2.19.0.min.js",
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js": "bootstrap-3.1.1.min.js",
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css": "bootstrap-3.1.1.min.css",
}
_ASSET = re.compile(r'(<(?:script|link)\b[^>]*?(?:src|href)=")(https://[^"]+)("[^>]*>)')


class SiteError(Exception):
    pass


def localise(html_dir):
    """Point every page of `html_dir` at the vendored files; returns the number of URLs replaced. Every page is read
    and rewritten in memory first: a page that cannot be (not UTF-8, a CDN URL without a local copy) leaves every page
    as it was."""
    if not str(html_dir).strip():  # ("" is the current directory: its pages would be rewritten)
        raise SiteError("--html is empty, expected asv's html_dir (the published site's folder)")
    html_dir = Path(html_dir)
    if not html_dir.is_dir():
        raise SiteError(f"--html {html_dir} is not a folder, expected asv's html_dir (run asv publish first)")
    (html_dir / "vendor").mkdir(exist_ok=True)
    replaced, rewritten = 0, []
    for page in sorted(html_dir.glob("*.html")):
        try:
            text = page.read_text(encoding="utf-8")
        except UnicodeDecodeError as err:
            raise SiteError(f"{page}: not UTF-8 text ({err})") from None

        def local(match):
            nonlocal replaced
            url = match.group(2)
            if url not in SITE_VENDOR:
                if match.group(0).startswith("<link") and "stylesheet" not in match.group(0):
                    return match.group(0)  # a plain hyperlink-like <link>, not an asset
                raise SiteError(f"{page.name}: no local copy of {url} (add it to tools/site_vendor and SITE_VENDOR)")
            shutil.copyfile(VENDOR / SITE_VENDOR[url], html_dir / "vendor" / SITE_VENDOR[url])
            replaced += 1
            tag = match.group(1) + "vendor/" + SITE_VENDOR[url] + match.group(3)
            return re.sub(r'\s(?:integrity|crossorigin)="[^"]*"', "", tag)  # the vendored build has its own hash

        new = _ASSET.sub(local, text)
        if new != text:
            rewritten.append((page, new))
    for page, new in rewritten:
        write_atomic(page, new)
    return replaced


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tools.site", description=__doc__.splitlines()[0])
    parser.add_argument("--html", default=".asv/html", help="asv's html_dir (default .asv/html)")
    parser.add_argument("--no-publish", action="store_true", help="only localise an already published site")
    args = parser.parse_args(argv)
    if not args.no_publish:
        code = subprocess.run([sys.executable, "-m", "asv", "publish"]).returncode
        if code:
            return code
    try:
        print(f"tools.site: {localise(args.html)} CDN URLs replaced by local copies in {args.html}")
    except (SiteError, OSError) as err:
        print(f"tools.site: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
