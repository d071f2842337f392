"""Learning from labels: heads (`teach`), their fitting and their scores. scikit-learn is imported here only."""
