"""Position evaluators: each turns leaves of the search tree into a value and move priors."""
