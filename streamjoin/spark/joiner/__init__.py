"""A join's joiner on Spark: declarative fields as columns, or the Python function per row."""
