#!/bin/bash
cat > /app/wordfreq.sh <<'EOF'
#!/bin/bash
# The N most frequent words of FILE: "COUNT WORD", most frequent first, ties alphabetical.
tr 'A-Z' 'a-z' < "$1" | tr -cs 'a-z' '\n' | grep -v '^$' | sort | uniq -c \
  | sort -k1,1nr -k2,2 | head -n "$2" | awk '{print $1, $2}'
EOF
chmod +x /app/wordfreq.sh
