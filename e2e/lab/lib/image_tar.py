#!/usr/bin/env python3
"""image_tar.py REF ROOTFS OUT ENTRYPOINT...: write a `docker save` tarball of one
layer holding the directory ROOTFS, for `e2e/local image load` (containerd's
`ctr images import`). No Docker: the lab's static programs need nothing else, as
the pause image of e2e/lib/images.sh (the same format, written in Python here
because the lab keeps its files under e2e/lab/). Runs as UID/GID 65532.
"""
import hashlib
import io
import json
import os
import sys
import tarfile


def layer_bytes(rootfs):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for base, dirs, files in os.walk(rootfs):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                path = os.path.join(base, name)
                info = tar.gettarinfo(path, os.path.relpath(path, rootfs))
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mtime = 0
                if info.isfile():
                    with open(path, "rb") as f:
                        tar.addfile(info, f)
                else:
                    tar.addfile(info)
    return buf.getvalue()


def add_bytes(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    tar.addfile(info, io.BytesIO(data))


def main():
    if len(sys.argv) < 5:
        sys.exit("usage: image_tar.py REF ROOTFS OUT ENTRYPOINT...")
    ref, rootfs, out, entrypoint = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    layer = layer_bytes(rootfs)
    diff = hashlib.sha256(layer).hexdigest()
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Entrypoint": entrypoint, "User": "65532:65532", "Env": ["PATH=/"]},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + diff]},
    }, separators=(",", ":")).encode()
    cfg = hashlib.sha256(config).hexdigest()
    manifest = json.dumps([{"Config": cfg + ".json", "RepoTags": [ref],
                            "Layers": [diff + "/layer.tar"]}]).encode()
    with tarfile.open(out + ".tmp", "w") as tar:
        add_bytes(tar, "manifest.json", manifest)
        add_bytes(tar, cfg + ".json", config)
        add_bytes(tar, diff + "/layer.tar", layer)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
