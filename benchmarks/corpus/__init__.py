"""The parts of `benchmarks/make_corpus.py`, which builds the Debian benchmark corpora.

- `sources`: the package and source tables (data only)
- `packages`: apt-get and dpkg-deb: tools installed, text packages downloaded and unpacked
- `text`: reading, cleaning and grouping text; HTML to plain text
- `extract`: one extractor per kind of source (dictd, fortune, SWORD, man, HTML, ...)
- `assemble`: caps, duplicates, the shuffle, the sample, writing the files
"""
