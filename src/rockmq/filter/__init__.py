"""Subscription filters, evaluated on the broker: tag expressions (`tags`), RocketMQ's SQL92
expressions (`sql`), both applied to stored records (`record_filter`), and an index that matches one
message against many subscriptions at once (`index`)."""
