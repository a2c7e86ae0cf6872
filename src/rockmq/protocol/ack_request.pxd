# Cython reads this beside ack_request.py: the shared reader's C type.
from rockmq.protocol.wire_reader cimport DELIMITED, Reader
