#!/bin/bash
set -e
mkdir -p ~/.config/notes
umask 077
printf '{"theme": "dark", "autosave": true}\n' > ~/.config/notes/settings.json
