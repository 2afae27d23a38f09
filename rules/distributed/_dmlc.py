"""The names of the `DMLC_*` settings a parameter-server job's processes read (ps-lite reads each
at start), apart from the reading of launch scripts (`_launches.py`), which loads only for a
run that has some."""

ROLE = "DMLC_ROLE"
URI = "DMLC_PS_ROOT_URI"
PORT = "DMLC_PS_ROOT_PORT"
NUM_WORKER = "DMLC_NUM_WORKER"
NUM_SERVER = "DMLC_NUM_SERVER"
#: What every process of one job must agree on.
SETTINGS = (URI, PORT, NUM_WORKER, NUM_SERVER)
ROLES = ("scheduler", "server", "worker")
