"""Cards: the neutral card model and the rules that choose a card for a result."""
