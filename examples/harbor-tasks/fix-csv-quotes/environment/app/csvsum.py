import sys


def main(path, column):
    with open(path) as handle:
        header = handle.readline().strip().split(",")
        index = header.index(column)
        total = 0.0
        for line in handle:
            if line.strip():
                total += float(line.strip().split(",")[index])
    print(f"{total:g}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
