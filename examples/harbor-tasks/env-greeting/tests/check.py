import sys

try:
    with open("/work/out.txt") as handle:
        text = handle.read()
except OSError as exc:
    print(exc)
    sys.exit(1)
sys.exit(0 if text == "hello says evalnoise\n" else 1)
