# Streams both files: constant memory, so the verifier itself fits the tightest limit.
import sys

MOD = (1 << 61) - 1


def digest(path, check_order):
    count = s1 = s2 = 0
    previous = None
    with open(path) as handle:
        for line in handle:
            value = int(line)
            if check_order and previous is not None and value < previous:
                print("not sorted at line", count + 1)
                sys.exit(1)
            previous = value
            count += 1
            s1 = (s1 + value) % MOD
            s2 = (s2 + value * value) % MOD
    return count, s1, s2


try:
    got = digest("/app/sorted.txt", check_order=True)
except (OSError, ValueError) as exc:
    print(exc)
    sys.exit(1)
sys.exit(0 if got == digest("/app/numbers.txt", check_order=False) else 1)
