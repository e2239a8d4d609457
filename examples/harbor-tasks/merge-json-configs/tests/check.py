import json
import sys

expected = {
    "name": "shop",
    "server": {
        "port": 8080,
        "hosts": ["localhost"],
        "tls": {"enabled": True, "cert": "/etc/cert.pem"},
    },
    "features": {"search": True, "cart": False, "beta": {"on": 1}},
    "debug": True,
}
try:
    with open("/app/merged.json") as handle:
        merged = json.load(handle)
except (OSError, ValueError) as exc:
    print(exc)
    sys.exit(1)
sys.exit(0 if merged == expected else 1)
