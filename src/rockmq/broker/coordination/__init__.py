"""A broker group's coordination: the seam its election goes through (coordinator.py) and etcd behind it (etcd.py)."""
