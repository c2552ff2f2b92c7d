"""Design-space sweeps: a spec of axes over a base scenario, run locally or on Ray, stored as
Parquet one point per file, queried with SQL and analysed (Pareto fronts, sensitivity)."""
