"""The driver side: from the command line to ``summary.json``; the only writer of files."""
