"""pytest plugin: claimfsm fixtures for users (filled in by the testing toolkit)."""
