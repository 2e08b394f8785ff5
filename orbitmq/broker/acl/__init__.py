"""RocketMQ 4.x plain ACL on the broker: plain_acl.yml, request signatures and permissions.

`AclValidator` (validator.py) checks every request before its handler runs
when `aclEnable=true`; `AclHandlers` (handlers.py) serve the ACL admin codes
50-54. The pure parts: `permission.py` (bits and checks), `addresses.py`
(whiteRemoteAddress patterns), `plain_config.py` (reading and writing the
YAML file), `resources.py` (what each request code needs).
"""

from orbitmq.broker.acl.validator import AclValidator

__all__ = ["AclValidator"]
