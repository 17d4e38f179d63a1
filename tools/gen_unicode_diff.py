"""Write tests/data/unicode_diff.txt: the code points whose class in the GPT-2 pattern differs
between the Python `regex` package (the test oracle) and bytepair's Unicode tables. Run after a
change of either (the pinned `regex` in pyproject.toml, regex-syntax in rust/Cargo.toml):

    .venv/bin/python tools/gen_unicode_diff.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import unicode_diff

if __name__ == "__main__":
    unicode_diff.DIFF_FILE.parent.mkdir(exist_ok=True)
    ranges = unicode_diff.diff_ranges(unicode_diff.bytepair_classes(), unicode_diff.regex_classes())
    unicode_diff.DIFF_FILE.write_text(unicode_diff.render(ranges), encoding="utf-8")
    print(f"wrote {unicode_diff.DIFF_FILE}: {len(ranges)} ranges")
