#!/bin/bash
set -e
cd /app/config
sed -i 's/^port = 8080$/port = 8443/; s/^tls = off$/tls = on/' server.ini
printf '\n[logging]\nlevel = debug\nfile = /var/log/app.log\n' >> server.ini
