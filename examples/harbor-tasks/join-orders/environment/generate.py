import random
import sys

folder, orders = sys.argv[1], int(sys.argv[2])
rng = random.Random(424242)
with open(f"{folder}/customers.csv", "w") as out:
    out.write("customer_id,name\n")
    for customer in range(1, 2001):
        out.write(f"{customer},customer-{rng.randrange(10**6):06d}\n")
with open(f"{folder}/orders.csv", "w") as out:
    out.write("order_id,customer_id,amount\n")
    for order in range(1, orders + 1):
        cents = rng.randrange(100, 100000)
        out.write(f"{order},{rng.randrange(1, 2001)},{cents // 100}.{cents % 100:02d}\n")
