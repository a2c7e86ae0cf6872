"""The broker: services holding the messaging logic, and thin gRPC servicers that delegate to them."""
