"""Tasks, images, the container sandbox and (later) grading. Depends on nothing else of this project."""
