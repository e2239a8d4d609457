import json
import os
import pwd
import stat
import sys

path = "/home/app/.config/notes/settings.json"
uid = pwd.getpwnam("app").pw_uid
try:
    info = os.stat(path)
    with open(path) as handle:
        settings = json.load(handle)
except (OSError, ValueError) as exc:
    print(exc)
    sys.exit(1)
checks = [
    settings.get("theme") == "dark",
    settings.get("autosave") is True,
    info.st_uid == uid,
    os.stat(os.path.dirname(path)).st_uid == uid,
    not stat.S_IMODE(info.st_mode) & 0o007,
]
print(checks)
sys.exit(0 if all(checks) else 1)
