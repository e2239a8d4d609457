import subprocess
import sys
import tempfile

text = "b a c b a b\nZeta zeta ALPHA alpha-beta, beta's end. c c c\n"
expected = "4 c\n3 b\n2 a\n2 alpha\n2 beta\n"
with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
    handle.write(text)
try:
    result = subprocess.run(
        ["/app/wordfreq.sh", handle.name, "5"], capture_output=True, text=True, timeout=20
    )
except OSError as exc:
    print(exc)
    sys.exit(1)
print(repr(result.stdout), result.stderr)
sys.exit(0 if result.stdout == expected else 1)
