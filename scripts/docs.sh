#!/usr/bin/env bash
# Builds the walkthrough book and checks its links:
#
#   scripts/docs.sh
#
# 1. installs mdbook with `cargo install --locked mdbook` if it is missing
#    (the book's code is tested by `cargo test`, which does not need it);
# 2. checks every relative link and image in docs/src/*.md, every
#    {{#include}} (file and anchor) and every SUMMARY entry, and that the
#    SVG pictures parse as XML;
# 3. runs `mdbook build docs`, writing the book to docs/book/
#    (open docs/book/index.html).
set -euo pipefail

cd "$(dirname "$0")/.."

if ! command -v mdbook >/dev/null 2>&1; then
    echo "mdbook not found; installing it with cargo install --locked mdbook"
    cargo install --locked mdbook
fi

python3 - <<'EOF'
"""Checks the links, includes and pictures of the book in docs/src."""
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

src = pathlib.Path("docs/src")
problems = []

# [text](target) and ![alt](target); <img src="target">.
link = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
img = re.compile(r"<img[^>]*\ssrc=\"([^\"]+)\"")
include = re.compile(r"\{\{#(?:include|rustdoc_include)\s+([^}\s]+)\s*\}\}")


def headings(path):
    """The anchors mdBook makes from the headings of a Markdown file."""
    ids = set()
    in_code = False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            text = line.lstrip("#").strip().lower()
            text = re.sub(r"[^\w\- ]", "", text)
            ids.add(text.replace(" ", "-"))
    return ids


for md in sorted(src.glob("*.md")):
    text = md.read_text()
    for target in link.findall(text) + img.findall(text):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue  # external, or an anchor on the same page
        path, _, fragment = target.partition("#")
        resolved = (md.parent / path).resolve()
        if not resolved.exists():
            problems.append(f"{md}: link to {target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in headings(resolved):
            problems.append(f"{md}: link to {target}: no heading #{fragment}")
    for spec in include.findall(text):
        path, _, rest = spec.partition(":")
        resolved = (md.parent / path).resolve()
        if not resolved.exists():
            problems.append(f"{md}: include of {path}: no such file")
            continue
        anchor = rest.split(":")[0] if rest else ""
        if anchor and not anchor.isdigit():
            body = resolved.read_text()
            # An anchor line may be a Rust comment (`// ANCHOR: x`) or an
            # HTML comment in Markdown (`<!-- ANCHOR: x -->`).
            marks = re.findall(r"ANCHOR(_END)?: ([\w-]+)", body)
            if ("", anchor) not in marks or ("_END", anchor) not in marks:
                problems.append(f"{md}: include of {spec}: no anchor {anchor!r} in {path}")

summary = (src / "SUMMARY.md").read_text()
for target in link.findall(summary):
    if not (src / target).exists():
        problems.append(f"SUMMARY.md: chapter {target} does not exist")
listed = set(link.findall(summary))
for md in sorted(src.glob("*.md")):
    if md.name != "SUMMARY.md" and md.name not in listed:
        problems.append(f"{md}: not listed in SUMMARY.md")

for svg in sorted(src.glob("img/*.svg")):
    try:
        ET.parse(svg)
    except ET.ParseError as e:
        problems.append(f"{svg}: not well-formed XML: {e}")

for p in problems:
    print(p, file=sys.stderr)
if problems:
    sys.exit(f"{len(problems)} problem(s) in docs/src")
print(f"links, includes and pictures of docs/src: ok")
EOF

mdbook build docs
echo "the book is in docs/book/index.html"
