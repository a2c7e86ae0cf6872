"""Authentication and authorization (docs/security.md): pure rules apart from the stores and the gRPC seam."""
