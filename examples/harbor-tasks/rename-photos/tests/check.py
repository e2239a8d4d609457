import csv
import os
import sys

folder = "/app/photos"
with open(os.path.join(folder, "dates.csv")) as handle:
    dates = {row["file"]: row["date"] for row in csv.DictReader(handle)}
expected = {"dates.csv"}
for name, day in dates.items():
    number = name[4:8]
    new = f"{day}_{number}.jpg"
    expected.add(new)
    path = os.path.join(folder, new)
    if not os.path.isfile(path):
        print("missing", new)
        sys.exit(1)
    with open(path, "rb") as photo:
        if photo.read() != b"\xff\xd8" + f"photo {int(number)}".encode() + b"\xff\xd9":
            print("content changed", new)
            sys.exit(1)
sys.exit(0 if set(os.listdir(folder)) == expected else 1)
