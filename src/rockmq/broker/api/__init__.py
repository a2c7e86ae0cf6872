"""gRPC servicers: translate requests to service calls and results to replies; no policy here."""
