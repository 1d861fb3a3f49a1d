"""torch.distributed on accinte: the accl backend and the training stacks over it."""
