"""POP consumption: receive with invisible time, ack, change invisible time, revive, renew, FIFO locks."""
