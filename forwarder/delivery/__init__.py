"""Delivery of a run's events: batches shared by every stream, and the per-stream commits they allow."""
