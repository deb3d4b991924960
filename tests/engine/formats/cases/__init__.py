"""Cases of each family for the generic harness: one module per family (FAMILY, CASES)."""
