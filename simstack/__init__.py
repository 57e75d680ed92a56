"""simstack: discrete-event simulation of accelerator-controls software stacks."""
