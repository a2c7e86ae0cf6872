"""Subscription filters: tag expressions (and, later, SQL92) evaluated on the broker."""
