"""Print a greeting."""
import sys

sys.path.insert(0, ".")

from app.greet import greet  # noqa: E402

if __name__ == "__main__":
    print(greet(sys.argv[1] if len(sys.argv) > 1 else "world"))
