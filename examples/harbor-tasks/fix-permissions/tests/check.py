import os
import stat
import sys


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


checks = [
    mode("/app/bin/build.sh") == 0o755,
    mode("/app/bin/deploy.sh") == 0o755,
    mode("/app/bin/README") == 0o644,
    mode("/app/secrets/api.key") == 0o600,
    mode("/app/secrets") == 0o700,
]
print(checks)
sys.exit(0 if all(checks) else 1)
