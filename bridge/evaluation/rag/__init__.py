"""``bridge rag``: do retrieval measures agree with answer correctness?"""
