"""claimfsm package."""
