"""The story (`harness story`): a ladder's chapters as runs, their verdicts, numbers, figures and page."""
