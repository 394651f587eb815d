"""Judges that ask an LLM for every pair they decide: one-call judges, the DREAM debate, the cascade, the answer
reader's likelihoods and the answer judges that read them, the exemplar comparison's LLM call."""
