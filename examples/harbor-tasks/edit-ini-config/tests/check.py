import configparser
import sys

config = configparser.ConfigParser()
config.read("/app/config/server.ini")
expected = {
    "server": {"host": "0.0.0.0", "port": "8443", "tls": "on", "workers": "4"},
    "database": {"url": "postgres://db:5432/app", "pool": "10"},
    "logging": {"level": "debug", "file": "/var/log/app.log"},
}
actual = {s: dict(config[s]) for s in config.sections()}
print(actual)
sys.exit(0 if actual == expected else 1)
