"""Judges that ask an LLM for every pair they decide: one-call judges, the DREAM debate, the cascade, the
answer reader's likelihoods."""
