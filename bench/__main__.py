"""Run every benchmark: ``python -m bench``."""

from bench import evidence

if __name__ == "__main__":
    evidence.main()
