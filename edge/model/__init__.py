"""What the edge talks about, at the ground floor: jobs and their failures, agent and flow specs, budgets, progress."""
