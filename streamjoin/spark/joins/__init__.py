"""Each kind of join over history, with the worker's semantics in the order `order.py` assumes."""
