#!/bin/bash
set -e
cd /app/photos
tail -n +2 dates.csv | while IFS=, read -r file day; do
  number=${file:4:4}
  mv "$file" "${day}_${number}.jpg"
done
