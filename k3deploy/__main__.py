"""Allow `python -m k3deploy`."""

from k3deploy.cli import main

if __name__ == "__main__":
    main()
