"""`harness notebook`: JupyterLab on loopback with the review notebook (review.ipynb)."""
