"""AWS plumbing: endpoints, clients, the embedded stand-ins (dynalite, SeaweedFS, moto), capacity rules."""
