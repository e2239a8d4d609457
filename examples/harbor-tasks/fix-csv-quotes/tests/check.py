import subprocess
import sys
import tempfile

data = 'id,name,amount,note\n1,"Doe, John",2.25,"a, b"\n2,Ann,3,x\n3,"Q ""Z"", R",4.75,""\n'
with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as handle:
    handle.write(data)
result = subprocess.run(
    [sys.executable, "/app/csvsum.py", handle.name, "amount"],
    capture_output=True,
    text=True,
    timeout=20,
)
print(result.stdout, result.stderr)
try:
    ok = abs(float(result.stdout.strip()) - 10.0) < 1e-9
except ValueError:
    ok = False
sys.exit(0 if ok else 1)
