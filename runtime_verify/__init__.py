"""Truth tables and the GPU layer harness that prove each fix."""
