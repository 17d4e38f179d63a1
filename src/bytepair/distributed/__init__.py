"""Training and corpus encoding on many machines. `shards.py` cuts inputs into shards that count
apart and add up to the whole (`.bpc` files for Slurm or any scheduler); `ray_train.py` and
`ray_encode.py` run the counting and the encoding on a Ray cluster over `ray_tasks.py`. Ray is
imported only when a Ray job runs; nothing is imported here.
"""
