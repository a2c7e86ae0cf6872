"""Wire definitions and pure codecs: RocketMQ v2 messages <-> rockmq records. No I/O.

`pb` (definitions), `rpc` (MessagingService requests), `svc` (its gRPC stubs), `admin`, `acl`,
`batch`, `inner`, `messages`, `namesrv`, `replication` and `users` (rockmq's own services) are the generated
modules, registered in rockmq's private descriptor pool (see `_pool`).
"""

from rockmq.protocol._gen.apache.rocketmq.v2 import definition_pb2 as pb
from rockmq.protocol._gen.apache.rocketmq.v2 import service_pb2 as rpc
from rockmq.protocol._gen.apache.rocketmq.v2 import service_pb2_grpc as svc
from rockmq.protocol._gen.rockmq.admin.v1 import acl_pb2 as acl
from rockmq.protocol._gen.rockmq.admin.v1 import acl_pb2_grpc as acl_grpc
from rockmq.protocol._gen.rockmq.admin.v1 import admin_pb2 as admin
from rockmq.protocol._gen.rockmq.admin.v1 import admin_pb2_grpc as admin_grpc
from rockmq.protocol._gen.rockmq.admin.v1 import messages_pb2 as messages
from rockmq.protocol._gen.rockmq.admin.v1 import messages_pb2_grpc as messages_grpc
from rockmq.protocol._gen.rockmq.admin.v1 import users_pb2 as users
from rockmq.protocol._gen.rockmq.admin.v1 import users_pb2_grpc as users_grpc
from rockmq.protocol._gen.rockmq.inner.v1 import inner_pb2 as inner
from rockmq.protocol._gen.rockmq.inner.v1 import inner_pb2_grpc as inner_grpc
from rockmq.protocol._gen.rockmq.messaging.v1 import batch_pb2 as batch
from rockmq.protocol._gen.rockmq.messaging.v1 import batch_pb2_grpc as batch_grpc
from rockmq.protocol._gen.rockmq.namesrv.v1 import namesrv_pb2 as namesrv
from rockmq.protocol._gen.rockmq.namesrv.v1 import namesrv_pb2_grpc as namesrv_grpc
from rockmq.protocol._gen.rockmq.replication.v1 import replication_pb2 as replication
from rockmq.protocol._gen.rockmq.replication.v1 import replication_pb2_grpc as replication_grpc

__all__ = ["pb", "rpc", "svc", "acl", "acl_grpc", "admin", "admin_grpc", "batch", "batch_grpc", "inner", "inner_grpc",
           "messages", "messages_grpc", "namesrv", "namesrv_grpc", "replication", "replication_grpc", "users", "users_grpc"]
