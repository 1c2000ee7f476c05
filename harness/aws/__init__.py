"""AWS plumbing: endpoints, clients, the embedded moto server, capacity rules."""
