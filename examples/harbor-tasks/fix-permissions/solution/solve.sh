#!/bin/bash
set -e
chmod 755 /app/bin/*.sh
chmod 600 /app/secrets/api.key
chmod 700 /app/secrets
