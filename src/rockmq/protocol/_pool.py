"""rockmq's private protobuf descriptor pool.

The official RocketMQ Python client registers `apache.rocketmq.v2.*` in protobuf's default pool
under the file names `definition.proto` / `service.proto`; registering the same symbols again
under our file names would fail with "duplicate symbol". Our generated modules therefore live in
this pool, which also carries the well-known types they import.
"""

from google.protobuf import descriptor_pool, duration_pb2, timestamp_pb2

POOL = descriptor_pool.DescriptorPool()
for _wkt in (timestamp_pb2, duration_pb2):
    POOL.AddSerializedFile(_wkt.DESCRIPTOR.serialized_pb)
