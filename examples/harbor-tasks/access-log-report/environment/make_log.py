import random
import sys

rng = random.Random(11)
paths = ["/", "/login", "/api/items", "/api/items/7", "/static/app.js", "/health"]
weights = [5, 2, 9, 3, 4, 1]
statuses = ["200", "200", "200", "304", "404", "500", "301"]
with open(sys.argv[1], "w") as log:
    for i in range(2000):
        host = f"10.0.{rng.randrange(4)}.{rng.randrange(256)}"
        path = rng.choices(paths, weights)[0]
        method = "POST" if path == "/login" else "GET"
        log.write(
            f"{host} - - [12/Mar/2025:10:{i // 60 % 60:02d}:{i % 60:02d} +0000] "
            f'"{method} {path} HTTP/1.1" {rng.choice(statuses)} {rng.randrange(100, 9000)}\n'
        )
