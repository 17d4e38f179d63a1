"""The token-file job: whole corpora into the flat id files LM training memory-maps. `inputs.py`
finds and reads the inputs (text, `.jsonl`, `.parquet`) over `streams.py` (plain, `.gz`, `.zst`
bytes, hashed), `encode.py` runs the job (`encode_files`: blocks, document ends, the journal),
`tokens.py` writes and reads the files (`load_tokens`). Nothing is imported here: numpy loads only
when a token file is written or read.
"""
