# Two fixes PyTorch made after 1.13, applied to Debian bookworm's python3-torch 1.13 in the real
# node's PyTorch base (node-images.sh), so that torchrun runs there as it does on the official image:
#   1. torchrun crashed at start-up on Python 3.11: Std.from_str("0") found no flag (Python 3.11 no
#      longer iterates an IntFlag's zero member).
#   2. the c10d rendezvous host was found only by the endpoint's name equal to this host's name or
#      canonical name; PyTorch 2.x also compares the addresses the endpoint's name resolves to, which
#      is how the replica that MASTER_ADDR names (<pod>.<job>, through the job's headless Service)
#      knows it hosts the store.
# Usage: python3 torch-backports.py ROOT (the image's file system). Fails if a file is not as expected.
import sys

root = sys.argv[1]
torch = root + "/usr/lib/python3/dist-packages/torch/distributed/elastic"


def patch(path, old, new):
    with open(path) as f:
        text = f.read()
    if text.count(old) != 1:
        sys.exit(f"{path}: the text to replace is not there once; not the python3-torch 1.13 this fixes")
    with open(path, "w") as f:
        f.write(text.replace(old, new))


patch(torch + "/multiprocessing/api.py",
      "            for s in Std:\n",
      "            for s in Std.__members__.values():\n")

patch(torch + "/rendezvous/utils.py",
      """    this_host = socket.gethostname()
    if host == this_host:
        return True
""",
      """    try:
        host_ip_list = [info[4][0] for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)]
    except (ValueError, socket.gaierror):
        host_ip_list = []

    this_host = socket.gethostname()
    if host == this_host:
        return True
""")
patch(torch + "/rendezvous/utils.py",
      """        if addr and addr_info[4][0] == str(addr):
            return True
""",
      """        if addr and addr_info[4][0] == str(addr):
            return True
        # Or if one of the addresses `host` resolves to is ours.
        if addr_info[4][0] in host_ip_list:
            return True
""")
