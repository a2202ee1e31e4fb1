"""errors.py — the daemon's error answers as WarpdError, and which of them say "this daemon does not do that"
(regions, CUDA IPC, a route it predates), after which transport "auto" stops asking."""

class WarpdError(Exception):
    """An error answer of the daemon: HTTP status, stable code, the request field at fault, message."""

    def __init__(self, status, code, field="", message=""):
        super().__init__(f"{status} {code}" + (f" ({field})" if field else "") + (f": {message}" if message else ""))
        self.status, self.code, self.field, self.message = status, code, field or "", message or ""

# Refusals after which transport "auto" stops trying regions with this daemon (it says it will not map
# them, cannot see our objects, or predates /v1/shm); shm_quota and a full /dev/shm only skip one call.
_SHM_REFUSALS = {"shm_disabled", "shm_remote", "shm_not_found", "shm_denied", "bad_name", "not_shared_memory"}
_IPC_REFUSALS = {"needs_gpu", "shm_disabled", "shm_remote"}  # the daemon cannot take IPC buffers at all


def _route_missing(e):
    """An old daemon: no such route (404 not_found with no field, 405), or the field is unknown to it."""
    return (e.status == 404 and e.code == "not_found" and not e.field) or e.status == 405 or \
        (e.code == "unknown_field" and e.field.split(".")[0] in ("shm", "cuda_ipc", "output"))


def _region_gone(e):  # a request named a region the daemon no longer has (it restarted, or a DELETE raced)
    return e.status == 404 and e.code in ("unknown_shm", "not_found") and \
        (e.field.startswith("shm") or e.field.startswith("output") or e.field == "id")
