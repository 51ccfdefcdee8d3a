"""Record batches (magic 2) and legacy message sets (magic 0/1)."""
