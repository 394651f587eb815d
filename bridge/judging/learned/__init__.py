"""Judges that learn as a run goes: topic adapters trained on a topic's own judgments (their learning curve), and the
exemplar judge (a hole against its topic's known relevant passages; its fit and its teacher)."""
