"""IR passes, each a function Graph -> Graph, and the pipeline that runs them (see pipeline.py)."""
