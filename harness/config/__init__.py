"""The run plan: one resolved description of a run, built once by the command, read by every process."""
