"""Authentication and authorization (issue 19): pure rules apart from the stores and the gRPC seam."""
