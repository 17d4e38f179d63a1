"""`bytepair inspect` and `bytepair show`: what a tokenizer holds and how it does on sample text.
`figures.py` computes (encoding the sample as corpus encoding reads it), `summary.py` turns the
figures into tables, `show.py` draws tables and tokens on the terminal, `report.py` writes the
HTML report, `presets.py` loads tokenizers by name. rich and matplotlib load only when drawing.
"""
