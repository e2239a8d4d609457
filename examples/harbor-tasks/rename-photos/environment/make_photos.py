import datetime
import os
import random
import sys

folder = sys.argv[1]
os.makedirs(folder)
rng = random.Random(7)
start = datetime.date(2024, 1, 1)
with open(os.path.join(folder, "dates.csv"), "w") as dates:
    dates.write("file,date\n")
    for n in range(1, 13):
        name = f"IMG_{n:04d}.jpg"
        with open(os.path.join(folder, name), "wb") as photo:
            photo.write(b"\xff\xd8" + f"photo {n}".encode() + b"\xff\xd9")
        day = start + datetime.timedelta(days=rng.randrange(365))
        dates.write(f"{name},{day.isoformat()}\n")
